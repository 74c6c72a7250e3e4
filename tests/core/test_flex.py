"""FlexT5SelfAttention against T5SelfAttention (same weights) on the oracle's configurations of test_layer.py,
and the pieces: offset_buckets against relative_position_bucket and transformers, the score_mod, the mask_mod.

What is guaranteed: equal to 1e-6 (fp32, CPU) on every query row that has at least one allowed key;
a row with none (a padding query) gets a zero context from FlexAttention where the eager layer averages
every value, so those rows are compared with zero instead.
"""
import numpy as np
import pytest
import torch
from test_buckets import exact_ties, valid_configs
from test_layer import _allowed, _inputs
from transformers.models.t5.modeling_t5 import T5Attention

from t5lesson import ArgumentError, T5SelfAttention, relative_position_bucket
from t5lesson.flex import (
    FlexT5SelfAttention,
    bias_score_mod,
    dense_bias,
    flex_reference,
    flex_t5_attention,
    offset_buckets,
    per_offset_bias,
    t5_mask_mod,
)

TOL = 1e-6
CONFIGS = [dict(d_model=32, num_heads=4, d_kv=8),
           dict(d_model=32, num_heads=2, d_kv=24, num_buckets=16, max_distance=20)]


def _pair(causal, seed, has_relative_bias=True, **config):
    """An eager layer and a flex layer with the same weights."""
    config = config or CONFIGS[0]
    torch.manual_seed(seed)
    eager = T5SelfAttention(causal=causal, has_relative_bias=has_relative_bias, **config)
    flex = FlexT5SelfAttention(causal=causal, has_relative_bias=has_relative_bias, **config)
    flex.load_state_dict(eager.state_dict())
    return eager, flex


def _valid_rows(pad, causal, q_len, past=0):
    """[batch, q_len]: the query rows that can see at least one key."""
    allowed = _allowed(pad, causal, q_len, past)
    return allowed.expand(pad.shape[0], 1, q_len, pad.shape[1]).any(-1)[:, 0]


def _assert_rows_match(ours, theirs, valid):
    """Equal on rows with an allowed key; zero on rows without one (FlexAttention's empty row)."""
    assert (ours - theirs)[valid].abs().max().item() <= TOL
    assert torch.all(ours[~valid] == 0)


# --- bucketing on the device ---

LENGTHS = [(1, 1, 0), (7, 5, 0), (300, 300, 0), (1, 250, 249), (3, 40, 37), (130, 1, 0), (64, 200, 100)]


def test_offset_buckets_equal_relative_position_bucket_on_every_config():
    """Over 5,000 configurations, each with its own lengths and cache offset; ties included."""
    configs = list(valid_configs())
    reference = T5Attention._relative_position_bucket
    ties_seen = 0
    for i, (bidirectional, num_buckets, max_distance) in enumerate(configs):
        q_len, k_len, query_offset = LENGTHS[i % len(LENGTHS)]
        ours = offset_buckets(q_len, k_len, bidirectional=bidirectional, num_buckets=num_buckets,
                              max_distance=max_distance, query_offset=query_offset)
        offsets = torch.arange(-(q_len - 1 + query_offset), k_len - query_offset)
        assert ours.dtype == torch.long and ours.shape == offsets.shape
        expected = relative_position_bucket(offsets, bidirectional, num_buckets, max_distance)
        assert torch.equal(ours, expected), (bidirectional, num_buckets, max_distance)
        ties = list(exact_ties(bidirectional, num_buckets, max_distance))
        at_tie = torch.isin(offsets, torch.tensor(ties, dtype=torch.long))
        theirs = reference(offsets, bidirectional, num_buckets, max_distance)
        assert torch.equal(ours[~at_tie], theirs[~at_tie])  # transformers, bit for bit, away from ties
        assert ((theirs[at_tie] == ours[at_tie]) | (theirs[at_tie] == ours[at_tie] - 1)).all()
        ties_seen += int(at_tie.sum())
    assert ties_seen > 50


def test_offset_buckets_at_the_default_ties_and_far_away():
    ours = offset_buckets(6000, 6000, bidirectional=True, num_buckets=32, max_distance=128)
    offsets = np.arange(-5999, 6000)
    np.testing.assert_array_equal(ours.numpy(), relative_position_bucket(offsets))
    assert ours[offsets.searchsorted([-64, -32, -16, 16, 32, 64])].tolist() == [14, 12, 10, 26, 28, 30]
    decoder = offset_buckets(1, 5000, bidirectional=False, num_buckets=32, max_distance=128, query_offset=4999)
    np.testing.assert_array_equal(decoder.numpy(), relative_position_bucket(np.arange(-4999, 1), False))


def test_per_offset_bias_lays_out_as_the_eager_bias_and_carries_gradients():
    table = torch.randn(32, 4, requires_grad=True)
    per_offset = per_offset_bias(table, 9, 13, bidirectional=False, max_distance=128, query_offset=4)
    assert per_offset.shape == (4, 9 + 13 - 1)
    layer = T5SelfAttention(32, 4, 8, causal=True)
    with torch.no_grad():
        layer.relative_attention_bias.weight.copy_(table)
    assert torch.equal(dense_bias(per_offset, 9, 13), layer.compute_bias(9, 13, query_offset=4))
    per_offset.sum().backward()
    assert table.grad.sum().item() == pytest.approx(4 * 21)  # each offset's value reads one entry per head


# --- score_mod and mask_mod against dense tensors ---

def test_score_mod_and_mask_mod_equal_dense_attention_with_a_cache_offset():
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(2, 3, 5, 4, generator=g), torch.randn(2, 3, 12, 4, generator=g), torch.randn(2, 3, 12, 4,
                                                                                                        generator=g)
    table = torch.randn(32, 3, generator=g)
    pad = torch.ones(2, 12, dtype=torch.long)
    pad[1, :3] = 0
    per_offset = per_offset_bias(table, 5, 12, bidirectional=False, max_distance=128, query_offset=7)
    out = flex_t5_attention(q, k, v, score_mod=bias_score_mod(per_offset, 5, 7),
                            mask_mod=t5_mask_mod(causal=True, key_padding=pad, query_offset=7))
    bias = dense_bias(per_offset, 5, 12)
    allowed = _allowed(pad, True, 5, past=7)
    scores = (q @ k.transpose(-1, -2) + bias).masked_fill(~allowed, float("-inf"))
    assert (out - torch.softmax(scores, -1) @ v).abs().max().item() <= TOL


def test_flex_reference_is_what_flex_attention_computes_empty_rows_included():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(3, 2, 6, 8, generator=g) for _ in range(3))
    per_offset = torch.randn(2, 11, generator=g)
    pad = torch.ones(3, 6, dtype=torch.long)
    pad[2] = 0  # a batch row with no key at all: every one of its rows is empty
    pad[1, :2] = 0  # left padding: the first two causal rows are empty
    mods = dict(score_mod=bias_score_mod(per_offset, 6), mask_mod=t5_mask_mod(causal=True, key_padding=pad))
    flex = flex_t5_attention(q, k, v, **mods)
    dense = flex_reference(q, k, v, **mods)
    assert (flex - dense).abs().max().item() <= TOL
    assert torch.all(flex[2] == 0) and torch.all(flex[1, :, :2] == 0) and torch.all(dense[1, :, :2] == 0)
    unmasked = flex_t5_attention(q, k, v, score_mod=mods["score_mod"])
    assert (unmasked - flex_reference(q, k, v, score_mod=mods["score_mod"])).abs().max().item() <= TOL


# --- the layer against the eager layer: the configurations of test_layer.py ---

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("config", CONFIGS)
def test_full_pass_matches_the_eager_layer(causal, seed, config):
    eager, flex = _pair(causal, seed, **config)
    x, pad = _inputs(seed)
    with torch.no_grad():  # flex_attention itself (on CPU it has no backward when q, k, v need one)
        theirs, ours = eager(x, attention_mask=pad), flex(x, attention_mask=pad)
    valid = _valid_rows(pad, causal, x.shape[1])
    _assert_rows_match(ours.output, theirs.output, valid)
    assert ours.position_bias.shape == (config["num_heads"], 2 * 17 - 1)  # per offset, not [1, heads, L, L]
    assert torch.equal(dense_bias(ours.position_bias, 17, 17), theirs.position_bias)
    assert ours.past_key_value is None


@pytest.mark.parametrize("seed", range(2))
def test_incremental_decoding_matches_the_eager_layer(seed):
    eager, flex = _pair(True, seed)
    x, pad = _inputs(seed)
    chunks = [(0, 5), (5, 6), (6, 7), (7, 12)] + [(t, t + 1) for t in range(12, 17)]  # a prompt, then tokens
    past_e = past_f = None
    with torch.no_grad():
        for start, stop in chunks:
            xt, mask = x[:, start:stop], pad[:, :stop]
            theirs = eager(xt, attention_mask=mask, past_key_value=past_e, use_cache=True)
            ours = flex(xt, attention_mask=mask, past_key_value=past_f, use_cache=True)
            past_e, past_f = theirs.past_key_value, ours.past_key_value
            valid = _valid_rows(mask, True, stop - start, start)
            _assert_rows_match(ours.output, theirs.output, valid)
            assert torch.equal(dense_bias(ours.position_bias, stop - start, stop), theirs.position_bias)
    assert torch.equal(past_f[0], past_e[0])


@pytest.mark.parametrize("seed", range(2))
def test_cross_attention_with_its_cache_matches_the_eager_layer(seed):
    eager, flex = _pair(True, seed, has_relative_bias=False)
    x, _ = _inputs(seed, length=6)
    states, enc_pad = _inputs(seed + 10, length=9)
    enc_pad[0] = 0  # a whole row of padding: the flex layer gives zeros there
    valid = enc_pad.bool().any(-1)[:, None].expand(-1, 6)
    with torch.no_grad():
        _assert_rows_match(flex(x, attention_mask=enc_pad, key_value_states=states).output,
                           eager(x, attention_mask=enc_pad, key_value_states=states).output, valid)
        past_e = past_f = None
        for t in range(6):
            kwargs = dict(attention_mask=enc_pad, key_value_states=states, use_cache=True)
            theirs = eager(x[:, t:t + 1], past_key_value=past_e, **kwargs)
            ours = flex(x[:, t:t + 1], past_key_value=past_f, **kwargs)
            assert past_f is None or ours.past_key_value[0] is past_f[0]  # the cache is used as it is
            past_e, past_f = theirs.past_key_value, ours.past_key_value
            _assert_rows_match(ours.output, theirs.output, valid[:, :1])


def _stack(kinds, return_dense_bias=False):
    """Two causal layers (layer 0 owns the table), eager or flex each, with the same weights for every kind."""
    layers = []
    for i, kind in enumerate(kinds):
        torch.manual_seed(i)
        eager = T5SelfAttention(32, 4, 8, causal=True, has_relative_bias=i == 0)
        if kind == "flex":
            flex = FlexT5SelfAttention(32, 4, 8, causal=True, has_relative_bias=i == 0,
                                       return_dense_bias=return_dense_bias)
            flex.load_state_dict(eager.state_dict())
            eager = flex
        layers.append(eager)
    return layers


def _run_stack(layers, x, pad):
    h0 = layers[0](x, attention_mask=pad)
    h1 = layers[1](x + h0.output, attention_mask=pad, position_bias=h0.position_bias)
    assert h1.position_bias is h0.position_bias  # handed up, not rebuilt
    return h1.output


@pytest.mark.parametrize("kinds, dense", [(("flex", "flex"), False), (("eager", "flex"), False),
                                          (("flex", "eager"), True)])
def test_two_layer_stack_shares_layer0_bias(kinds, dense):
    """Flex layers hand each other the per-offset bias; an eager layer 0 may feed a flex layer 1 (it takes
    the [1, heads, L, L] bias too), and a flex layer 0 feeds an eager layer 1 when built with
    return_dense_bias=True."""
    x, pad = _inputs(1)
    valid = _valid_rows(pad, True, 17)
    with torch.no_grad():
        expected = _run_stack(_stack(("eager", "eager")), x, pad)
        got = _run_stack(_stack(kinds, return_dense_bias=dense), x, pad)
    # an empty row's hidden state differs (zero vs an average), but an empty row is a padding
    # position, masked as a key: every row with a key stays equal
    assert (got - expected)[valid].abs().max().item() <= TOL
    flex1 = _stack(("flex", "flex"))[1]
    assert list(flex1.state_dict()) == ["q.weight", "k.weight", "v.weight", "o.weight"]
    with torch.no_grad():
        assert flex1(x).position_bias.abs().sum() == 0  # no table, nothing handed: zeros, as the eager layer


# --- gradients ---

def _grads(layer, x, pad, frozen=False):
    layer.zero_grad()
    for name in "qkvo":
        getattr(layer, name).weight.requires_grad_(not frozen)
    out = layer(x, attention_mask=pad).output
    valid = _valid_rows(pad, layer.causal, x.shape[1])
    (out[valid] ** 2).sum().backward()
    return {name: p.grad.clone() for name, p in layer.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_reach_the_table_as_in_the_eager_layer(causal):
    """Training (q, k, v need gradients): on CPU PyTorch has no flex_attention backward, so the call goes to
    flex_reference, the same mods on dense scores. Table alone (projections frozen): flex_attention's backward."""
    x, pad = _inputs(2)
    for frozen in (False, True):
        eager, flex = _pair(causal, 2)
        theirs, ours = _grads(eager, x, pad, frozen), _grads(flex, x, pad, frozen)
        assert sorted(ours) == sorted(theirs) and "relative_attention_bias.weight" in ours
        assert ("q.weight" in ours) is not frozen
        for name in theirs:
            assert (ours[name] - theirs[name]).abs().max().item() <= 1e-5, (frozen, name)
        assert all(torch.equal(a, b) for a, b in zip(_grads(flex, x, pad, frozen).values(), ours.values(),
                                                      strict=True))  # deterministic on CPU


# --- errors ---

@pytest.mark.parametrize("call, message", [
    (lambda: offset_buckets(4, 4, bidirectional=True, num_buckets=32, max_distance=8), "max_distance must be >"),
    (lambda: offset_buckets(0, 4, bidirectional=True, num_buckets=32, max_distance=128), "q_len must be >= 1"),
    (lambda: offset_buckets(4, 4, bidirectional=True, num_buckets=32, max_distance=128, query_offset=-1),
     "query_offset must be >= 0"),
    (lambda: offset_buckets(4, 4, bidirectional=1, num_buckets=32, max_distance=128), "bidirectional must be"),
    (lambda: per_offset_bias(np.zeros((32, 4)), 4, 4, bidirectional=True, max_distance=128), "table must be a torch"),
    (lambda: per_offset_bias(torch.zeros(32), 4, 4, bidirectional=True, max_distance=128), r"table must have shape"),
    (lambda: dense_bias(torch.zeros(4, 6), 4, 4), "must have q_len \\+ k_len - 1 = 7 offsets"),
    (lambda: dense_bias(torch.zeros(1, 4, 7), 4, 4), r"per_offset must be a tensor \[heads"),
    (lambda: bias_score_mod(torch.zeros(4, 3), 4), r"per_offset must be a tensor"),
    (lambda: t5_mask_mod(causal=True, key_padding=torch.ones(4)), r"key_padding must be a tensor \[batch, k_len\]"),
    (lambda: t5_mask_mod(causal="yes"), "causal must be True or False"),
    (lambda: flex_t5_attention(torch.zeros(1, 2, 3), torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4)),
     r"q must be a tensor \[batch, heads, length, d_kv\]"),
    (lambda: flex_t5_attention(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 4, 4)),
     "must share batch"),
    (lambda: FlexT5SelfAttention(32, 4, 8)(torch.zeros(2, 3)), r"hidden_states must be a tensor"),
    (lambda: FlexT5SelfAttention(32, 4, 8)(torch.zeros(1, 3, 32), position_bias=torch.zeros(4, 6)),
     "5 offsets"),
    (lambda: FlexT5SelfAttention(32, 4, 8)(torch.zeros(1, 3, 32), position_bias=torch.zeros(1, 4, 3, 4)),
     r"position_bias must have shape \[1, heads=4, q_len=3, k_len=3\]"),
    (lambda: FlexT5SelfAttention(32, 4, 8)(torch.zeros(1, 3, 32), position_bias=torch.zeros(3)),
     "position_bias must be a per-offset bias"),
    (lambda: FlexT5SelfAttention(32, 4, 8, compiled=1), "compiled must be True or False"),
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_the_compiled_kernel_matches_on_a_length_that_is_not_a_whole_block():
    """torch.compile's fused kernel (the benchmark's path), causal with padding, at 130 = one block of 128 + 2."""
    import shutil

    if not shutil.which("g++") and not shutil.which("gcc"):
        pytest.skip("torch.compile on CPU needs a C++ compiler")
    eager, flex = _pair(True, 5)
    flex.compiled = True
    x, pad = _inputs(5, length=130)
    with torch.no_grad():
        _assert_rows_match(flex(x, attention_mask=pad).output, eager(x, attention_mask=pad).output,
                           _valid_rows(pad, True, 130))
