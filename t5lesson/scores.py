"""Attention scores and weights, T5's way (unscaled) and the standard way, in NumPy and PyTorch.

    scores = (q @ k^T) * scale  +  bias  +  mask
    weights = softmax(scores) over keys, computed in float32

T5 uses scale = 1: no 1/sqrt(d). `scale="sqrt_d"` gives the standard 1/sqrt(d_k) for
comparison; a positive number is used as the multiplier itself. The bias is added *after*
scaling, on the logit scale, as T5 does.

Masks are boolean arrays, True where a query may attend to a key (see `causal_mask`,
`padding_mask`, `combine_masks`), or additive float arrays. A boolean mask becomes an additive
one holding the dtype's most negative finite number where attention is not allowed, as in
transformers (`torch.finfo(dtype).min`); Mesh TF uses -1e9.

A row with no allowed key at all (say a padded query in a decoder whose keys are all padding)
gets *uniform* weights over all its keys: every logit in it equals the same huge negative
number, so the softmax is flat. That is what transformers returns too; it is never NaN, and
such rows should be ignored downstream (the reference ignores them the same way).
"""
from __future__ import annotations

import math

import numpy as np

from ._validate import ArgumentError, check_array, check_int, is_torch, loaded_torch

__all__ = [
    "attention_scores", "attention", "softmax", "causal_mask", "padding_mask", "combine_masks",
    "additive_mask", "resolve_scale",
]


def causal_mask(q_len, k_len, query_offset=0):
    """Bool [q_len, k_len]: True where key j is not in the future of query i.

    Query i sits at position query_offset + i (query_offset = tokens already in the cache).
    """
    q_len = check_int("q_len", q_len, minimum=1)
    k_len = check_int("k_len", k_len, minimum=1)
    query_offset = check_int("query_offset", query_offset, minimum=0)
    query_pos = np.arange(q_len)[:, None] + query_offset
    return np.arange(k_len)[None, :] <= query_pos


def padding_mask(attention_mask):
    """Bool [batch, 1, 1, k_len] from a [batch, k_len] mask of 1 (real token) and 0 (padding).

    The two singleton axes broadcast over heads and queries.
    """
    torch_in = is_torch(attention_mask)
    m = attention_mask.detach().cpu().numpy() if torch_in else np.asarray(attention_mask)
    if m.ndim != 2:
        raise ArgumentError(f"attention_mask must have shape [batch, k_len], got shape {m.shape}")
    if not (m.dtype == bool or np.isin(m, (0, 1)).all()):
        raise ArgumentError("attention_mask must hold only 0/1 or True/False (1 = real token, 0 = padding)")
    allowed = m.astype(bool)[:, None, None, :]
    return loaded_torch().from_numpy(allowed).to(attention_mask.device) if torch_in else allowed


def combine_masks(*masks):
    """Logical AND of boolean masks (None entries are skipped); they must broadcast together."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    if any(is_torch(m) for m in masks):
        out = loaded_torch().as_tensor(masks[0])
        for m in masks[1:]:
            out = out & loaded_torch().as_tensor(m, device=out.device)
        return out
    out = np.asarray(masks[0], dtype=bool)
    for m in masks[1:]:
        out = out & np.asarray(m, dtype=bool)
    return out


def additive_mask(mask, dtype):
    """0 where allowed, the dtype's most negative finite value where not (bool masks only)."""
    if is_torch(mask):
        mask = mask.to(loaded_torch().bool)
        zero = loaded_torch().zeros((), dtype=dtype, device=mask.device)
        return loaded_torch().where(mask, zero, loaded_torch().finfo(dtype).min)
    mask = np.asarray(mask, dtype=bool)
    return np.where(mask, dtype.type(0), np.finfo(dtype).min).astype(dtype)


def resolve_scale(scale, d):
    """The multiplier applied to q.k: 1 for T5, 1/sqrt(d) for "sqrt_d", or the number given."""
    if isinstance(scale, str):
        if scale != "sqrt_d":
            raise ArgumentError(f'scale must be a positive number or "sqrt_d", got {scale!r}')
        return 1.0 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (0 < scale < math.inf):
        raise ArgumentError(f'scale must be a positive number or "sqrt_d", got {scale!r}')
    return float(scale)


def _check_pair(q, k):
    check_array("q", q, min_ndim=2)
    check_array("k", k, min_ndim=2)
    if is_torch(q) != is_torch(k):
        raise ArgumentError("q and k must both be NumPy arrays or both torch tensors")
    if q.shape[-1] != k.shape[-1]:
        raise ArgumentError(
            f"q and k must have the same last dimension d, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )


def _check_broadcast(name, x, shape):
    try:
        np.broadcast_shapes(tuple(x.shape), shape)
    except ValueError:
        raise ArgumentError(
            f"{name} of shape {tuple(x.shape)} does not broadcast to the scores' shape {shape} "
            "(..., q_len, k_len)"
        ) from None


def attention_scores(q, k, bias=None, mask=None, scale=1.0):
    """Logits [..., q_len, k_len] = (q @ k^T) * scale + bias + mask.

    q: [..., q_len, d]; k: [..., k_len, d]; bias and mask broadcast to the result (bias e.g.
    [heads, q_len, k_len] or [1, heads, q_len, k_len]). mask: bool (True = may attend) or additive.
    """
    _check_pair(q, k)
    multiplier = resolve_scale(scale, q.shape[-1])
    if is_torch(q):
        scores = loaded_torch().matmul(q, k.transpose(-1, -2))
    else:
        scores = q @ np.swapaxes(k, -1, -2)
    if multiplier != 1.0:
        scores = scores * multiplier
    shape = tuple(scores.shape)
    if bias is not None:
        _check_broadcast("bias", bias, shape)
        scores = scores + bias
    if mask is not None:
        if is_torch(scores) and not is_torch(mask):
            mask = loaded_torch().from_numpy(np.asarray(mask)).to(scores.device)  # a NumPy mask for torch scores
        elif not is_torch(scores) and is_torch(mask):
            raise ArgumentError("mask is a torch tensor but q and k are NumPy arrays: pass a NumPy mask")
        _check_broadcast("mask", mask, shape)
        is_bool = mask.dtype == loaded_torch().bool if is_torch(mask) else np.asarray(mask).dtype == bool
        scores = scores + (additive_mask(mask, scores.dtype) if is_bool else mask)
    return scores


def softmax(scores, axis=-1):
    """Numerically stable softmax, computed in float32 (or float64 if given) and cast back."""
    if is_torch(scores):
        work = scores.float() if scores.dtype in (loaded_torch().float16, loaded_torch().bfloat16) else scores
        # -inf becomes the most negative finite value, so a fully masked row is uniform, not NaN.
        work = work.clamp(min=loaded_torch().finfo(work.dtype).min)
        return loaded_torch().softmax(work, dim=axis).to(scores.dtype)
    scores = np.asarray(scores)
    work = scores.astype(np.float32) if scores.dtype == np.float16 else scores
    work = np.maximum(work, np.finfo(work.dtype).min)
    shifted = work - work.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return (e / e.sum(axis=axis, keepdims=True)).astype(scores.dtype)


def attention(q, k, v, bias=None, mask=None, scale=1.0, return_weights=False):
    """softmax(scores) @ v; returns the output, or (output, weights) with return_weights=True.

    v: [..., k_len, d_v]. See `attention_scores` for the rest.
    """
    _check_pair(q, k)
    check_array("v", v, min_ndim=2)
    if v.shape[-2] != k.shape[-2]:
        raise ArgumentError(f"k and v must have the same number of keys, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    weights = softmax(attention_scores(q, k, bias=bias, mask=mask, scale=scale))
    out = loaded_torch().matmul(weights, v) if is_torch(weights) else weights @ v
    return (out, weights) if return_weights else out
