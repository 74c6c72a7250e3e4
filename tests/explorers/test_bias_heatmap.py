"""The bias heatmap explorer (lesson 4): panels show relative_bias, the mask and the weights."""
import numpy as np
import pytest

from t5lesson import ArgumentError, attention_scores, causal_mask, relative_bias, softmax
from t5lesson.explorers.bias_heatmap import BiasHeatmapExplorer
from t5lesson.lessons.toy_heads import HEAD_NAMES, toy_bias_table


def test_panels_show_bias_masked_bias_and_weights():
    e = BiasHeatmapExplorer(head=2, seq_len=12, query_offset=0, attention="decoder", content=0.0)
    bias = relative_bias(toy_bias_table(False), 12, 12, bidirectional=False)[2]
    shown_bias, shown_masked, shown_weights = (np.asarray(im.get_array()) for im in e.images)
    np.testing.assert_array_equal(shown_bias, bias)
    allowed = causal_mask(12, 12)
    assert np.isnan(shown_masked[~allowed]).all()
    np.testing.assert_array_equal(shown_masked[allowed], bias[allowed])
    np.testing.assert_allclose(shown_weights, softmax(attention_scores(np.zeros((12, 1)), np.zeros((12, 1)),
                                                                       bias=bias, mask=allowed)))
    np.testing.assert_allclose(shown_weights.sum(-1), 1.0)


def test_cached_queries_are_the_last_rows_of_the_full_bias():
    full = BiasHeatmapExplorer(head=0, seq_len=20, query_offset=0)
    cached = BiasHeatmapExplorer(head=0, seq_len=20, query_offset=15)
    np.testing.assert_array_equal(cached.bias, full.bias[15:])
    np.testing.assert_allclose(cached.weights, full.weights[15:], rtol=1e-12)
    assert cached.images[0].get_extent() == [-0.5, 19.5, 19.5, 14.5]
    assert "only query rows 15..19 (15 tokens already cached)" in cached.readout()


def test_encoder_has_no_mask_and_cache_beyond_length_is_clamped():
    e = BiasHeatmapExplorer(attention="encoder", seq_len=8, query_offset=30)
    assert e.allowed is None and e.bias.shape == (1, 8)
    assert not np.isnan(np.asarray(e.images[1].get_array())).any()
    assert "clamped to 7" in e.readout()


def test_update_changes_the_picture_in_place():
    e = BiasHeatmapExplorer()
    images, before = list(e.images), e.to_png()
    e.update(head=0, seq_len=40, content=2.5)
    assert e.images == images and e.to_png() != before


def test_custom_decoder_only_table():
    table = np.random.default_rng(0).normal(size=(16, 2))
    e = BiasHeatmapExplorer(tables={"decoder": table}, head_names=("a", "b"), max_distance=32, head=1)
    params = {p.name: p for p in e.params}
    assert params["attention"].options == ("decoder",) and params["head"].max == 1
    np.testing.assert_array_equal(e.bias, relative_bias(table, 16, 16, bidirectional=False, max_distance=32)[1])
    with pytest.raises(ArgumentError, match="head must be between 0 and 1"):
        e.update(head=2)
    with pytest.raises(ArgumentError, match=r"attention must be one of \['decoder'\]"):
        e.update(attention="encoder")


@pytest.mark.parametrize("kwargs, message", [
    (dict(tables={"both": np.zeros((32, 4))}), "tables must be a dict with keys among"),
    (dict(tables={"decoder": np.zeros((32,))}), "must be a float NumPy array"),
    (dict(tables={"decoder": np.zeros((32, 4))}, head_names=("x",)), "head_names must be 4 strings"),
    (dict(tables={"decoder": np.zeros((32, 4))}, max_distance=10), "max_distance must be > max_exact"),
    (dict(tables={"encoder": np.zeros((32, 4)), "decoder": np.zeros((32, 2))}), "same number of heads"),
    (dict(seq_len=1), "seq_len must be between 2 and 64"),
    (dict(content=-1.0), "content must be between 0.0 and 4.0"),
    (dict(head=len(HEAD_NAMES)), "head must be between 0 and 3"),
])
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        BiasHeatmapExplorer(**kwargs)
