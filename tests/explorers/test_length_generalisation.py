"""Lesson 5b's explorer: stored variants, no torch, in-place updates, values that match the stored data."""
import io
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from t5lesson import ArgumentError, bucket_ranges
from t5lesson.common.figures import style
from t5lesson.explorers.length_generalisation import MAX_DISTANCES, REFERENCE, LengthGeneralisationExplorer
from t5lesson.lengthgen.variants import load_variants


@pytest.fixture(scope="module")
def explorer():
    return LengthGeneralisationExplorer()  # reads the six stored variants: no training


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def test_update_changes_the_png(explorer):
    before = explorer.update(max_distance=32, show="accuracy").to_png()
    after = explorer.update(max_distance=256).to_png()
    assert before != after and after.startswith(b"\x89PNG")
    assert explorer.update(show="weight on right key").to_png() != after


def test_explorer_works_without_torch():
    """What the live (in-browser) site needs: the explorer and its data import no torch."""
    code = ("import sys\n"
            "from t5lesson.explorers.length_generalisation import LengthGeneralisationExplorer\n"
            "png = LengthGeneralisationExplorer().update(max_distance=128).to_png()\n"
            "assert png.startswith(b'\\x89PNG')\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_fast_png_equals_a_full_draw(explorer):
    """to_png redraws only the changing artists over stored pixels; it must look like a full draw."""
    for values in (dict(max_distance=128, show="accuracy"), dict(max_distance=16, show="weight on right key")):
        fast = _pixels(explorer.update(**values).to_png())
        for artist in explorer.moving_artists():
            artist.set_animated(False)
        with style():
            explorer.fig.canvas.draw()
        full = np.asarray(explorer.fig.canvas.buffer_rgba())[..., :3].astype(int)
        for artist in explorer.moving_artists():
            artist.set_animated(True)
        assert fast.shape == full.shape
        assert (np.abs(fast - full).sum(-1) > 60).mean() < 0.002  # a few antialiased edge pixels at most


def test_drawn_values_come_from_the_stored_variants(explorer):
    variants = load_variants()
    assert tuple(variants) == MAX_DISTANCES
    for max_distance in (16, 256):
        explorer.update(max_distance=max_distance, show="accuracy")
        chosen = variants[max_distance]
        np.testing.assert_array_equal(explorer.line.get_ydata(), chosen.accuracy)
        np.testing.assert_array_equal(explorer.reference_line.get_ydata(), variants[REFERENCE].accuracy)
        for line, values in zip(explorer.head_lines, chosen.bias, strict=True):
            np.testing.assert_array_equal(line.get_ydata(), values)
        start = bucket_ranges(False, 16, max_distance).last_bucket_start
        assert explorer.last_bucket.get_xdata()[0] == start == chosen.last_bucket_start
        text = explorer.readout()
        assert text.startswith(f"max_distance = {max_distance}:") and f"starts at d = {start};" in text
        assert f"accuracy {chosen.accuracy[-1]:.2f}" in text
    explorer.update(show="weight on right key")
    np.testing.assert_array_equal(explorer.line.get_ydata(), variants[256].weight_on_key)
    assert variants[256].untrained_buckets == 3 and variants[32].untrained_buckets == 0


@pytest.mark.parametrize("params, message", [
    (dict(max_distance=1024), "max_distance must be between 16 and 512"),
    (dict(max_distance=32.0), "max_distance must be an integer"),
    (dict(log2_max_distance=5), "has no parameter log2_max_distance"),
    (dict(show="loss"), "show must be one of"),
    (dict(steps=10), "has no parameter steps"),
])
def test_bad_parameters(explorer, params, message):
    with pytest.raises(ArgumentError, match=message):
        explorer.update(**params)
