"""Static figures of lessons 3-4: they build, show the package's numbers, and check arguments."""
import numpy as np
import pytest

from t5lesson import ArgumentError, relative_bias
from t5lesson.common.figures import as_image
from t5lesson.lessons.position_figures import (
    bias_by_offset,
    bias_table_figure,
    offset_matrix_figure,
    pair_count_figure,
)
from t5lesson.lessons.toy_heads import HEAD_NAMES, toy_bias_table


def test_bias_by_offset_reads_relative_bias():
    table = toy_bias_table(False)
    offsets, bias = bias_by_offset(table, 5, bidirectional=False)
    np.testing.assert_array_equal(offsets, np.arange(-5, 6))
    full = relative_bias(table, 11, 11, bidirectional=False)
    np.testing.assert_array_equal(bias, full[:, 5, :])  # the query in the middle sees offsets -5..5


def test_figures_render():
    for fig in (offset_matrix_figure(6), pair_count_figure(128, 32, bidirectional=False),
                bias_table_figure(toy_bias_table(True), HEAD_NAMES)):
        assert as_image(fig).data.startswith(b"\x89PNG")


@pytest.mark.parametrize("call, message", [
    (lambda: offset_matrix_figure(1), "seq_len must be >= 2"),
    (lambda: pair_count_figure(seq_len=1.5), "seq_len must be an integer"),
    (lambda: pair_count_figure(bidirectional="yes"), "bidirectional must be True or False"),
    (lambda: bias_table_figure(np.zeros((32, 2)), ["a"]), "one name per head"),
    (lambda: bias_table_figure(np.zeros((32, 2)), ["a", "b"], max_distance=4), "max_distance must be > max_exact"),
    (lambda: bias_by_offset(np.zeros((32, 1)), 0), "max_offset must be >= 1"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()
