import numpy as np
import pytest

from t5lesson import ArgumentError
from t5lesson.explorers.warmup import SoftmaxOfTwo


def test_weights_follow_the_gap():
    e = SoftmaxOfTwo()
    before = e.to_png()
    e.update(gap=3.0)
    assert np.isclose(e.weights()[1], 1 / (1 + np.exp(-3.0)))
    assert e.bars[1].get_height() == pytest.approx(e.weights()[1])
    assert e.to_png() != before and e.readout() == "gap 3: key B gets weight 0.953"


def test_bad_gap():
    with pytest.raises(ArgumentError, match="gap must be between 0.0 and 10.0"):
        SoftmaxOfTwo(gap=11.0)


def test_blitted_frames_equal_a_fresh_render():
    moved = SoftmaxOfTwo()
    for gap in (5.0, 0.5, 10.0, 2.5):
        moved.update(gap=gap)
    assert moved.to_png() == SoftmaxOfTwo(gap=2.5).to_png()
