"""Lesson 7's attention-map explorer: three panels per layer and head, causal cells greyed."""
import numpy as np
import pytest

from t5lesson import ArgumentError
from t5lesson.common.figures import alt_text
from t5lesson.explorers.attention_maps import AttentionMapExplorer


def test_default_builds_and_moves():
    explorer = AttentionMapExplorer()
    first = explorer.to_png()
    assert explorer.update(layer=1, head=3).to_png() != first
    assert "layer 1, head 3" in explorer.readout()
    assert alt_text(explorer.fig)


def test_panels_show_the_chosen_layer_and_head_and_grey_future_keys():
    rng = np.random.default_rng(0)
    maps = {"encoder": rng.random((2, 3, 4, 4)), "decoder": rng.random((2, 3, 5, 5)), "cross": rng.random((2, 3, 5, 4))}
    explorer = AttentionMapExplorer(maps, list("abcd"), list("vwxyz"), layer=1, head=2)
    shown = explorer.images[1].get_array()
    assert np.isnan(shown[0, 1]) and not np.isnan(shown[1, 0])  # a future key is masked (grey)
    np.testing.assert_allclose(explorer.images[2].get_array(), maps["cross"][1, 2])
    with pytest.raises(ArgumentError):
        explorer.update(head=3)


def test_bad_maps_raise():
    rng = np.random.default_rng(0)
    good = {"encoder": rng.random((1, 2, 3, 3)), "decoder": rng.random((1, 2, 2, 2)), "cross": rng.random((1, 2, 2, 3))}
    with pytest.raises(ArgumentError, match="maps\\['cross'\\]"):
        AttentionMapExplorer({**good, "cross": rng.random((1, 2, 3, 3))}, list("abc"), list("xy"))
    with pytest.raises(ArgumentError, match="same"):
        AttentionMapExplorer({**good, "decoder": rng.random((1, 3, 2, 2))}, list("abc"), list("xy"))
    with pytest.raises(ArgumentError, match="labels"):
        AttentionMapExplorer(good)
