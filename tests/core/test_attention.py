"""Scores, masks and softmax: NumPy and torch agree with each other and with the reference."""
import numpy as np
import pytest
import torch

from t5lesson import (
    ArgumentError,
    additive_mask,
    attention,
    attention_scores,
    causal_mask,
    combine_masks,
    padding_mask,
    softmax,
)
from t5lesson.reference import reference_mask


def _reference_eager(q, k, v, bias, allowed):
    """transformers' eager attention, the function T5Attention calls."""
    from transformers.models.t5.modeling_t5 import eager_attention_forward

    module = torch.nn.Module().eval()
    out, weights = eager_attention_forward(module, q, k, v, reference_mask(allowed), scaling=1.0,
                                           position_bias=bias)
    return out.transpose(1, 2), weights


@pytest.mark.parametrize("seed", range(10))
def test_torch_matches_reference_and_numpy(seed):
    g = torch.Generator().manual_seed(seed)
    b, h, q_len, k_len, d = 2, 3, 1 + seed, 3 + 2 * seed, 8
    q, k, v = (torch.randn(b, h, n, d, generator=g) for n in (q_len, k_len, k_len))
    bias = torch.randn(1, h, q_len, k_len, generator=g)
    pad = torch.ones(b, k_len, dtype=torch.long)
    pad[1, -1:] = 0
    allowed = combine_masks(torch.from_numpy(causal_mask(q_len, k_len, k_len - q_len)), padding_mask(pad))
    ours, weights = attention(q, k, v, bias=bias, mask=allowed, return_weights=True)
    ref_out, ref_w = _reference_eager(q, k, v, bias, allowed)
    torch.testing.assert_close(ours, ref_out, rtol=0, atol=1e-6)
    torch.testing.assert_close(weights, ref_w, rtol=0, atol=1e-7)
    np_out, np_w = attention(q.numpy(), k.numpy(), v.numpy(), bias=bias.numpy(), mask=allowed.numpy(),
                             return_weights=True)
    np.testing.assert_allclose(np_out, ours.numpy(), atol=1e-5)
    np.testing.assert_allclose(np_w, weights.numpy(), atol=1e-6)


def test_scale_options():
    q, k = np.random.randn(4, 16), np.random.randn(5, 16)
    raw = q @ k.T
    np.testing.assert_allclose(attention_scores(q, k), raw)
    np.testing.assert_allclose(attention_scores(q, k, scale="sqrt_d"), raw / 4)
    np.testing.assert_allclose(attention_scores(q, k, scale=0.5), raw / 2)
    bias = np.random.randn(4, 5)
    # the bias is added after scaling: it stays on the logit scale
    np.testing.assert_allclose(attention_scores(q, k, bias=bias, scale="sqrt_d"), raw / 4 + bias)


def test_masks():
    assert causal_mask(2, 4, query_offset=2).tolist() == [[True, True, True, False], [True, True, True, True]]
    pm = padding_mask(np.array([[1, 1, 0]]))
    assert pm.shape == (1, 1, 1, 3) and pm.ravel().tolist() == [True, True, False]
    add = additive_mask(np.array([True, False]), np.dtype(np.float32))
    assert add[0] == 0 and add[1] == np.finfo(np.float32).min
    assert combine_masks(None, None) is None


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_fully_masked_row_is_uniform_not_nan(framework):
    q, k = np.random.randn(3, 4).astype(np.float32), np.random.randn(5, 4).astype(np.float32)
    v = np.eye(5, dtype=np.float32)
    allowed = np.ones((3, 5), dtype=bool)
    allowed[1] = False
    if framework == "torch":
        q, k, v, allowed = map(torch.from_numpy, (q, k, v, allowed))
    _, w = attention(q, k, v, mask=allowed, return_weights=True)
    w = np.asarray(w)
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w[1], np.full(5, 0.2), atol=1e-7)
    # also with an additive -inf mask
    minus_inf = np.where(np.asarray(allowed), 0.0, -np.inf).astype(np.float32)
    if framework == "torch":
        minus_inf = torch.from_numpy(minus_inf)
    _, w2 = attention(q, k, v, mask=minus_inf, return_weights=True)
    np.testing.assert_allclose(np.asarray(w2), w, atol=1e-7)


def test_softmax_is_stable_and_float32_for_half():
    x = torch.tensor([[1000.0, 0.0, -1000.0]], dtype=torch.float16)
    assert softmax(x).dtype == torch.float16 and softmax(x)[0, 0] == 1
    np.testing.assert_allclose(softmax(np.array([1e4, 1e4 - 1.0])), [1 / (1 + np.exp(-1)), 1 / (1 + np.e)])


@pytest.mark.parametrize("call, message", [
    (lambda: attention_scores(np.zeros((2, 3)), np.zeros((2, 4))), "same last dimension d"),
    (lambda: attention_scores(np.zeros(3), np.zeros((2, 3))), "at least 2 dimensions"),
    (lambda: attention_scores(np.zeros((2, 3), dtype=int), np.zeros((2, 3))), "floating-point"),
    (lambda: attention_scores(np.zeros((2, 3)), torch.zeros(2, 3)), "must both be NumPy arrays or both torch"),
    (lambda: attention_scores(np.zeros((2, 3)), np.zeros((2, 3)), scale="sqrt"),
     'scale must be a positive number or "sqrt_d"'),
    (lambda: attention_scores(np.zeros((2, 3)), np.zeros((2, 3)), scale=0), "scale must be"),
    (lambda: attention_scores(np.zeros((2, 3)), np.zeros((2, 3)), bias=np.zeros((3, 3))), "does not broadcast"),
    (lambda: attention(np.zeros((2, 3)), np.zeros((4, 3)), np.zeros((5, 3))), "same number of keys"),
    (lambda: padding_mask(np.array([1, 0])), r"shape \[batch, k_len\]"),
    (lambda: padding_mask(np.array([[1, 2]])), "only 0/1"),
    (lambda: causal_mask(0, 3), "q_len must be >= 1"),
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_numpy_mask_with_torch_scores_and_the_reverse():
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    allowed = causal_mask(3, 5, query_offset=2)
    expected = attention_scores(q, k, mask=torch.from_numpy(allowed))
    torch.testing.assert_close(attention_scores(q, k, mask=allowed), expected)
    with pytest.raises(ArgumentError, match="mask is a torch tensor but q and k are NumPy arrays"):
        attention_scores(q.numpy(), k.numpy(), mask=torch.from_numpy(allowed))
