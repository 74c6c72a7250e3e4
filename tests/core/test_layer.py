"""T5SelfAttention against transformers' T5Attention with copied weights: encoder, decoder, cache, cross-attention.

It follows the contract of exercise 6 and of lesson 6's class: parameters named as transformers',
forward returning (output, position_bias, present), and lesson 6's step methods.
"""
import pytest
import torch
from transformers import DynamicCache

from t5lesson import ArgumentError, T5SelfAttention, attention_weights
from t5lesson.reference import reference_attention, reference_mask

TOL = 1e-5


def _inputs(seed, batch=3, length=17, d_model=32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, d_model, generator=g)
    pad = torch.ones(batch, length, dtype=torch.long)
    pad[1, -(seed % 5 + 1):] = 0  # right padding
    pad[2, : seed % 3 + 1] = 0  # left padding
    return x, pad


def _allowed(pad, causal, q_len, past=0):
    allowed = pad.bool()[:, None, None, :]
    if causal:
        k_len = pad.shape[1]
        allowed = allowed & (torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + past)
    return allowed


def _valid_rows(allowed):
    """Queries that can see at least one key (fully masked rows are ignored downstream)."""
    return allowed.expand(-1, 1, *allowed.shape[2:]).any(-1)[:, 0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("config", [dict(d_model=32, num_heads=4, d_kv=8),
                                    dict(d_model=32, num_heads=2, d_kv=24, num_buckets=16, max_distance=20)])
def test_full_pass_matches_reference(causal, seed, config):
    torch.manual_seed(seed)
    layer = T5SelfAttention(causal=causal, **config)
    ref = reference_attention(layer)
    x, pad = _inputs(seed)
    ours = layer(x, attention_mask=pad)
    with torch.no_grad():
        out, bias, weights = ref(x, mask=reference_mask(_allowed(pad, causal, x.shape[1])))
    assert (ours.output - out).abs().max().item() <= TOL
    assert torch.equal(ours.position_bias, bias)
    mine = attention_weights(layer, x, ours.position_bias, pad)
    assert (mine - weights).abs().max().item() <= TOL
    output, position_bias, present = ours  # a plain tuple too, as exercise 6's contract asks
    assert present is None and position_bias is ours.position_bias


@pytest.mark.parametrize("seed", range(4))
def test_incremental_decoding_matches_reference_and_full_pass(seed):
    torch.manual_seed(seed)
    layer = T5SelfAttention(32, 4, 8, causal=True)
    ref = reference_attention(layer)
    x, pad = _inputs(seed)
    full = layer(x, attention_mask=pad).output
    cache, past, steps = DynamicCache(), None, []
    chunks = [(0, 5), (5, 6), (6, 7), (7, 12)] + [(t, t + 1) for t in range(12, 17)]  # a prompt, then tokens
    for start, stop in chunks:
        xt, mask = x[:, start:stop], pad[:, :stop]
        step = layer(xt, attention_mask=mask, past_key_value=past, use_cache=True)
        past = step.past_key_value
        with torch.no_grad():
            ref_out, ref_bias, _ = ref(xt, mask=reference_mask(_allowed(mask, True, stop - start, start)), cache=cache)
        assert (step.output - ref_out).abs().max().item() <= TOL
        assert torch.equal(step.position_bias, ref_bias)
        steps.append(step.output)
    stepwise = torch.cat(steps, dim=1)
    valid = _valid_rows(_allowed(pad, True, 17))
    assert (stepwise - full)[valid].abs().max().item() <= TOL


def test_two_layer_stack_shares_layer0_bias():
    torch.manual_seed(0)
    layer0 = T5SelfAttention(32, 4, 8, causal=True)
    layer1 = T5SelfAttention(32, 4, 8, causal=True, has_relative_bias=False)
    assert layer1.relative_bias is None and not hasattr(layer1, "relative_attention_bias")
    names = ["q.weight", "k.weight", "v.weight", "o.weight"]
    assert list(layer0.state_dict()) == names + ["relative_attention_bias.weight"]
    assert list(layer1.state_dict()) == names
    x, pad = _inputs(1)
    h0 = layer0(x, attention_mask=pad)
    h1 = layer1(x + h0.output, attention_mask=pad, position_bias=h0.position_bias)
    assert h1.position_bias is h0.position_bias
    ref1 = reference_attention(layer1)
    with torch.no_grad():
        out, _, _ = ref1(x + h0.output, mask=reference_mask(_allowed(pad, True, 17)), position_bias=h0.position_bias)
    assert (h1.output - out).abs().max().item() <= TOL
    # without a table and without a handed-in bias the layer uses zeros, as the reference does
    assert layer1(x).position_bias.abs().sum() == 0


def test_initialisation_gives_unit_scale_logits():
    torch.manual_seed(0)
    layer = T5SelfAttention(512, 8, 64)
    for name, std in [("q", (512 * 64) ** -0.5), ("k", 512 ** -0.5), ("v", 512 ** -0.5), ("o", (8 * 64) ** -0.5)]:
        assert abs(getattr(layer, name).weight.std().item() / std - 1) < 0.02
    x = torch.randn(4, 64, 512)
    q, k = layer.split_heads(layer.q(x)), layer.split_heads(layer.k(x))
    logits = q @ k.transpose(-1, -2)
    assert 0.5 < logits.var().item() < 2.0


@pytest.mark.parametrize("call, message", [
    (lambda layer: layer(torch.zeros(2, 3)), r"hidden_states must be a tensor \[batch, seq_len, d_model=32\]"),
    (lambda layer: layer(torch.zeros(2, 3, 16)), "d_model=32"),
    (lambda layer: layer(torch.zeros(2, 3, 32), attention_mask=torch.ones(2, 4)), r"attention_mask must have shape"),
    (lambda layer: layer(torch.zeros(1, 1, 32), past_key_value=(torch.zeros(1, 4, 2, 8),) * 2),
     "needs a causal layer"),
    (lambda layer: layer(torch.zeros(1, 2, 32), key_value_states=torch.zeros(1, 3, 32)), "cross-attention has no"),
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call(T5SelfAttention(32, 4, 8))


@pytest.mark.parametrize("call, message", [
    (lambda layer: layer(torch.zeros(2, 3, 32), key_value_states=torch.zeros(2, 4)), "key_value_states"),
    (lambda layer: layer(torch.zeros(2, 3, 32), key_value_states=torch.zeros(1, 4, 32)), r"\[batch=2"),
    (lambda layer: layer(torch.zeros(2, 3, 32), key_value_states=torch.zeros(2, 4, 32),
                         attention_mask=torch.ones(2, 3)), r"\[batch, enc_len\]"),
    (lambda layer: layer(torch.zeros(2, 1, 32), past_key_value=torch.zeros(2, 4, 1, 8)), "the \\(keys, values\\) pair"),
])
def test_cross_attention_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call(T5SelfAttention(32, 4, 8, causal=True, has_relative_bias=False))


@pytest.mark.parametrize("seed", range(3))
def test_cross_attention_with_its_cache_matches_reference(seed):
    torch.manual_seed(seed)
    layer = T5SelfAttention(32, 4, 8, causal=True, has_relative_bias=False)
    ref = reference_attention(layer)
    x, _ = _inputs(seed, length=6)
    states, enc_pad = _inputs(seed + 10, length=9)
    with torch.no_grad():
        theirs, _, _ = ref(x, key_value_states=states, mask=reference_mask(enc_pad.bool()[:, None, None, :]))
    ours = layer(x, attention_mask=enc_pad, key_value_states=states)
    assert (ours.output - theirs).abs().max().item() <= TOL
    past, steps = None, []
    for t in range(6):  # every call passes the encoder's states; the first computes the keys, the rest reuse them
        step = layer(x[:, t:t + 1], attention_mask=enc_pad, key_value_states=states, past_key_value=past,
                     use_cache=True)
        assert past is None or step.past_key_value[0] is past[0]
        past = step.past_key_value
        steps.append(step.output)
    assert tuple(past[0].shape) == (3, 4, 9, 8)
    assert (torch.cat(steps, dim=1) - theirs).abs().max().item() <= TOL


def test_the_course_layer_passes_lesson_6s_steps(capsys):
    from t5lesson.lessons.layer_build import check_steps

    assert check_steps(T5SelfAttention, cross=True)
    assert "step 10, cross-attention, token by token with the cache: matches" in capsys.readouterr().out


def test_constructor_errors():
    with pytest.raises(ArgumentError, match="num_heads must be >= 1"):
        T5SelfAttention(32, 0, 8)
    with pytest.raises(ArgumentError, match="causal must be True or False"):
        T5SelfAttention(32, 4, 8, causal=1)
    with pytest.raises(ArgumentError, match="max_distance must be > max_exact"):
        T5SelfAttention(32, 4, 8, num_buckets=32, max_distance=8)


def test_report_match(capsys):
    from t5lesson.reference import report_match

    assert report_match("same", torch.ones(3), torch.ones(3) + 1e-7)
    assert not report_match("far", torch.ones(3), torch.zeros(3))
    assert not report_match("shape", torch.ones(3), torch.ones(4))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "same: max |ours - transformers| <= 1e-05  ✓"
    assert out[1].endswith("> 1e-05  ✗") and "shapes differ" in out[2]
