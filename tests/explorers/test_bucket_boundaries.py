"""The bucket-boundary explorer (lesson 3): numbers shown match t5lesson, updates in place."""
import numpy as np
import pytest

from t5lesson import ArgumentError, bucket_ranges, relative_position_bucket
from t5lesson.explorers.bucket_boundaries import BucketBoundaryExplorer, table_columns, table_pixels


def test_default_shows_the_encoder_surprises():
    e = BucketBoundaryExplorer()
    assert e.table == bucket_ranges(True, 32, 128)
    assert "last bucket starts at |offset| = 91" in e.readout()
    assert "buckets never used: 16" in e.readout()
    e.update(attention="decoder")
    assert "last bucket starts at |offset| = 113" in e.readout() and "never used: none" in e.readout()


def test_step_plot_is_the_bucket_function():
    e = BucketBoundaryExplorer(num_buckets=20, max_distance=300, attention="decoder", offset_range=1024)
    x, y = e.steps.get_data()
    assert x[0] == -1024 and x[-1] == 1024
    np.testing.assert_array_equal(y, relative_position_bucket(np.asarray(x), False, 20, 300))


def test_unused_buckets_are_drawn_and_listed():
    e = BucketBoundaryExplorer(num_buckets=33, max_distance=1000)  # odd, bidirectional: two unused
    assert e.table.unused == (16, 32)
    _, y = e.unused_lines.get_data()
    assert set(np.asarray(y)[~np.isnan(np.asarray(y, dtype=float))]) == {16, 32}
    flagged = [text.split()[0] for column in table_columns(e.table) for text, unused in column if unused]
    assert flagged == ["16", "32"]


def test_update_changes_the_picture_in_place():
    e = BucketBoundaryExplorer()
    steps, image, before = e.steps, e.table_image, e.to_png()
    e.update(num_buckets=16, offset_range=4096)
    assert e.steps is steps and e.table_image is image and e.fig.axes == [e.ax]
    assert e.to_png() != before


def test_degenerate_setting_shows_the_error_instead_of_raising():
    e = BucketBoundaryExplorer()
    e.update(num_buckets=48, max_distance=20, attention="decoder")  # max_exact = 24 >= 20
    with pytest.raises(ArgumentError) as expected:
        bucket_ranges(False, 48, 20)
    assert e.readout() == f"ArgumentError: {expected.value}"
    assert "max_distance must be > max_exact = 24" in e.error_text.get_text()
    assert len(e.steps.get_xdata()) == 0
    e.update(max_distance=128)  # and it recovers
    assert e.error is None and e.error_text.get_text() == "" and len(e.steps.get_xdata()) > 0


@pytest.mark.parametrize("params, message", [
    (dict(num_buckets=3), "num_buckets must be between 4 and 48"),
    (dict(num_buckets=49), "num_buckets must be between 4 and 48"),
    (dict(max_distance=12.5), "max_distance must be an integer"),
    (dict(attention="both"), r"attention must be one of \['encoder', 'decoder'\]"),
    (dict(offset_range=5000), "offset_range must be between 16 and 4096"),
    (dict(bidirectional=True), "has no parameter bidirectional"),
])
def test_bad_parameters_raise(params, message):
    with pytest.raises(ArgumentError, match=message):
        BucketBoundaryExplorer().update(**params)


def test_table_pixels_mark_unused_rows_in_red():
    def reddish(pixels):
        return ((pixels[..., 0] > 153) & (pixels[..., 1] < 102)).sum()  # uint8 RGB

    with_unused = table_pixels(bucket_ranges(True, 32, 128), 80)
    without = table_pixels(bucket_ranges(False, 32, 128), 80)
    assert with_unused.ndim == 3 and with_unused.shape[2] == 3
    assert reddish(with_unused) > 20 and reddish(without) == 0
