"""T5's attention through PyTorch's FlexAttention: the bias as a `score_mod`, the masks as a block mask.

    per_offset = per_offset_bias(table, q_len, k_len, ...)       [heads, q_len + k_len - 1], small
    score_mod  = bias_score_mod(per_offset, q_len)                 score + per_offset[h, kv - q + q_len - 1]
    mask_mod   = t5_mask_mod(causal=..., key_padding=..., ...)     causal AND padding, as booleans
    context    = flex_t5_attention(q, k, v, score_mod=..., mask_mod=...)   scale 1.0: no 1/sqrt(d_kv)

Why: T5's bias depends on a query and a key only through their offset k - q, so a whole
[heads, q_len, k_len] bias holds only q_len + k_len - 1 distinct values per head. The eager layer
(`t5lesson.layer`, like transformers' eager and sdpa paths) still lays them out as a
[1, heads, q_len, k_len] tensor, which at L = 16,384 and 8 heads is 8 GiB in fp32 before the
scores are even formed. A fused kernel never needs it: FlexAttention calls `score_mod` on each
score inside the kernel, and a lookup in the per-offset vector is all the bias is. FlashAttention
cannot do this, as it takes no arbitrary additive bias.

Two paths, the same numbers:
- eager (`compiled=False`, the default): `flex_attention` without `torch.compile`. PyTorch then
  runs an unfused reference implementation that evaluates score_mod and mask_mod on the whole
  score grid (and `create_block_mask` evaluates the mask_mod on a [batch, 1, q_len, k_len] grid of
  booleans), so it does hold full-size scores internally; our code builds no bias or mask tensor
  of that size. Starts at once, works everywhere: what the lessons and the tests use.
- compiled (`compiled=True`): `torch.compile(flex_attention)`, the fused kernel. Compiling takes
  a while on first use (a C++ compiler on CPU, Triton on a GPU); `benchmarks/flex_attention.py`
  uses it.

Rows whose every key is masked (a padding query of a causal layer with left padding, or a batch
row whose mask is all zeros): `T5SelfAttention` fills masked scores with finfo.min, so such a row
gets uniform weights over all keys; FlexAttention gives it zero weights and a zero context. We
guarantee equality on every row that has at least one allowed key; a fully masked row is a
padding position, which T5 ignores downstream (its output is the output projection of zeros,
i.e. zeros). Every other row never sees it either: a padding position is masked as a key.

Bucketing on the device: `offset_buckets` runs transformers' float32 operations with torch, on the
table's device, over the distinct offsets only: the offsets and buckets never leave the device.
At the few tie offsets (see `t5lesson.buckets`) it returns the exact bucket, as
`relative_position_bucket` does; which offsets are ties depends only on the configuration, so
they are found once per configuration, with integer arithmetic, and cached.

Gradients: the per-offset values come from the table by indexing, so gradients flow to the table.
PyTorch 2.13 has no flex_attention backward on CPU when q, k or v need gradients (training);
there `flex_t5_attention` runs `flex_reference`, the same mods applied to dense scores. With q, k
and v frozen, the table's gradient goes through flex_attention's own backward. On CPU every path
is deterministic; on a GPU the gradient to the per-offset values is accumulated with atomics and
is not.
"""
from __future__ import annotations

import contextlib
import functools
import math
import warnings

import numpy as np
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from ._validate import ArgumentError, check_bool, check_int
from .bias import _check_lengths, _check_table
from .buckets import bucket_config, exact_ties
from .layer import AttentionOutput, T5SelfAttention

__all__ = ["offset_buckets", "per_offset_bias", "dense_bias", "bias_score_mod", "full_bias_score_mod",
           "t5_mask_mod", "flex_t5_attention", "flex_reference", "FlexT5SelfAttention", "quiet_flex"]


def _described(x) -> str:
    """A wrong argument as an error message shows it: a tensor's shape, or another object's type."""
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


# --- the bias, per offset, on the device ---

@functools.lru_cache(maxsize=256)
def _ties(per_direction: int, max_exact: int, max_distance: int) -> tuple[tuple[int, int], ...]:
    """((n, k), ...): the |offsets| n at which the log formula is exactly the integer k (configuration only)."""
    tie_n, tie_k = exact_ties(np.arange(max_exact, max_distance), per_direction, max_exact, max_distance)
    return tuple(zip(tie_n, tie_k, strict=True))


def _log_buckets(n, per_direction, max_exact, max_distance):
    """Bucket of each distance n >= 0 within one direction: transformers' float32 ops, exact at ties."""
    # Clamp before the log so n = 0 never reaches it (the reference takes log(0) and discards it).
    large = torch.clamp(n, min=max_exact)
    # The same float32 expression, in the same order, as transformers' _relative_position_bucket.
    scaled = torch.log(large.float() / max_exact) / math.log(max_distance / max_exact) * (per_direction - max_exact)
    large = max_exact + scaled.to(torch.long)
    for value, k in _ties(per_direction, max_exact, max_distance):
        large = torch.where(n == value, max_exact + k, large)  # the exact bucket, whatever float32 made of it
    large = torch.clamp(large, max=per_direction - 1)
    return torch.where(n < max_exact, n, large)


def offset_buckets(q_len, k_len, *, bidirectional, num_buckets, max_distance, query_offset=0, device=None):
    """The bucket of every distinct offset k - (q + query_offset), q < q_len, k < k_len, lowest first.

    Returns a long tensor of q_len + k_len - 1 buckets on `device`: entry j is the bucket of offset
    j - (q_len - 1 + query_offset). Equal to `relative_position_bucket` on every offset and every
    machine; equal to transformers' `_relative_position_bucket` except at a tie offset, where the
    reference's own float32 result depends on the CPU (see `t5lesson.buckets`).
    """
    bidirectional = check_bool("bidirectional", bidirectional)
    per_direction, max_exact = bucket_config(bidirectional, num_buckets, max_distance)
    q_len, k_len, query_offset = _check_lengths(q_len, k_len, query_offset)
    offsets = torch.arange(-(q_len - 1 + query_offset), k_len - query_offset, device=device)
    if bidirectional:  # keys after the query use the upper half
        return torch.where(offsets > 0, per_direction, 0) + _log_buckets(
            offsets.abs(), per_direction, max_exact, max_distance)
    return _log_buckets(torch.clamp(-offsets, min=0), per_direction, max_exact, max_distance)


def per_offset_bias(table, q_len, k_len, *, bidirectional, max_distance, query_offset=0):
    """[heads, q_len + k_len - 1]: the bias of each distinct offset, lowest offset first.

    table: [num_buckets, heads] (transformers' layout), a torch tensor. Built on the table's device
    and differentiable with respect to it. Entry [h, kv - q + q_len - 1] is the bias of query q
    (position q + query_offset) and key kv, the value `dense_bias` lays out at [0, h, q, kv].
    """
    if not isinstance(table, torch.Tensor):
        raise ArgumentError(f"table must be a torch tensor [num_buckets, num_heads], got {type(table).__name__}")
    _check_table(table, bidirectional, max_distance)
    buckets = offset_buckets(q_len, k_len, bidirectional=bidirectional, num_buckets=table.shape[0],
                             max_distance=max_distance, query_offset=query_offset, device=table.device)
    return table[buckets].t().contiguous()  # one small gather: heads x (q_len + k_len - 1)


def dense_bias(per_offset, q_len, k_len):
    """[1, heads, q_len, k_len]: the per-offset bias laid out as the eager layer's position_bias.

    Only for a caller that asks for the materialised tensor (a `T5SelfAttention` above a flex layer,
    a figure); differentiable with respect to `per_offset`.
    """
    per_offset = _check_per_offset(per_offset, q_len, k_len)
    windows = per_offset.unfold(-1, k_len, 1)  # [heads, q_len, k_len] view: window w starts at offset index w
    rows = torch.arange(q_len - 1, -1, -1, device=per_offset.device)  # query q reads window q_len - 1 - q
    return windows.index_select(1, rows).unsqueeze(0)


def _check_per_offset(per_offset, q_len, k_len):
    q_len, k_len, _ = _check_lengths(q_len, k_len, 0)
    if not isinstance(per_offset, torch.Tensor) or per_offset.ndim != 2:
        raise ArgumentError(f"per_offset must be a tensor [heads, q_len + k_len - 1], got {_described(per_offset)}")
    if per_offset.shape[1] != q_len + k_len - 1:
        raise ArgumentError(f"per_offset must have q_len + k_len - 1 = {q_len + k_len - 1} offsets "
                            f"(q_len={q_len}, k_len={k_len}), got {per_offset.shape[1]}")
    return per_offset


# --- score_mod and mask_mod ---

def bias_score_mod(per_offset, q_len, query_offset=0):
    """A FlexAttention score_mod that adds T5's bias: score + per_offset[h, kv_idx - q_idx + q_len - 1].

    per_offset: [heads, q_len + k_len - 1], from `per_offset_bias`.

    The index is the offset kv_idx - (q_idx + query_offset) minus the lowest offset,
    -(q_len - 1 + query_offset): query_offset cancels, as the cache only moves which values
    `per_offset_bias` looked up. No 1/sqrt(d_kv) anywhere: flex_t5_attention passes scale=1.0.
    """
    q_len = check_int("q_len", q_len, minimum=1)
    check_int("query_offset", query_offset, minimum=0)
    if not isinstance(per_offset, torch.Tensor) or per_offset.ndim != 2 or per_offset.shape[1] < q_len:
        raise ArgumentError(f"per_offset must be a tensor [heads, q_len + k_len - 1] with q_len={q_len}, "
                            f"got {_described(per_offset)}")
    lowest, last = q_len - 1, per_offset.shape[1] - 1

    def score_mod(score, b, h, q_idx, kv_idx):
        # The clamp changes no index of a real (query, key) pair. It keeps the lookup inside the
        # vector where a fused kernel also scores the padding of a partial block, and it lets the
        # compiler prove the bound (PyTorch 2.13's CPU code for the bounds check does not compile).
        return score + per_offset[h, (kv_idx - q_idx + lowest).clamp(0, last)]

    return score_mod


def full_bias_score_mod(position_bias):
    """A score_mod for a materialised bias [1 or batch, heads, q_len, k_len] (a stack whose layer 0 is eager)."""
    last_q, last_kv = position_bias.shape[2] - 1, position_bias.shape[3] - 1  # clamped as in bias_score_mod
    if position_bias.shape[0] == 1:
        bias = position_bias[0]

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[h, q_idx.clamp(0, last_q), kv_idx.clamp(0, last_kv)]
    else:
        def score_mod(score, b, h, q_idx, kv_idx):
            return score + position_bias[b, h, q_idx.clamp(0, last_q), kv_idx.clamp(0, last_kv)]

    return score_mod


def t5_mask_mod(*, causal, key_padding=None, query_offset=0):
    """A FlexAttention mask_mod: True where query q_idx may see key kv_idx.

    causal: kv_idx <= q_idx + query_offset (the query's position). key_padding: [batch, k_len] of
    1/0 (1 = a real token), checked as key_padding[b, kv_idx]. Both, one, or none (every key allowed).
    The function carries `per_batch` (whether it reads b), so the block mask is built once for
    the whole batch when it does not.
    """
    causal = check_bool("causal", causal)
    query_offset = check_int("query_offset", query_offset, minimum=0)
    if key_padding is not None:
        if not isinstance(key_padding, torch.Tensor) or key_padding.ndim != 2:
            raise ArgumentError("key_padding must be a tensor [batch, k_len] of 1 (token) and 0 (padding), "
                                f"got {_described(key_padding)}")
        key_padding = key_padding.bool()
    last = key_padding.shape[1] - 1 if key_padding is not None else 0

    def mask_mod(b, h, q_idx, kv_idx):
        allowed = kv_idx >= 0  # a boolean of the right shape: every key, before the two masks
        if causal:
            allowed = allowed & (kv_idx <= q_idx + query_offset)
        if key_padding is not None:  # clamped as in bias_score_mod: the padding of a partial block stays inside
            allowed = allowed & key_padding[b, kv_idx.clamp(0, last)]
        return allowed

    mask_mod.per_batch = key_padding is not None
    return mask_mod


# --- the attention ---

UNCOMPILED = "flex_attention called without torch.compile"  # the warning eager FlexAttention gives, once


@contextlib.contextmanager
def quiet_flex():
    """FlexAttention without its warning that it is not compiled (on CPU the eager path is for values, not speed)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=UNCOMPILED)
        yield


@functools.cache
def _compiled_flex():
    # One static kernel per shape: with dynamic shapes PyTorch 2.13's CPU code generator can emit
    # C++ that does not compile once a second length has been seen.
    return torch.compile(flex_attention, dynamic=False)


def _needs_dense_path(q, k, v) -> bool:
    """PyTorch 2.13 refuses flex_attention's backward on CPU ("FlexAttention does not support backward
    on CPU") whenever q, k or v require grad; its check looks at those three only."""
    return q.device.type == "cpu" and torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))


def flex_t5_attention(q, k, v, *, score_mod=None, mask_mod=None, compiled=False):
    """softmax(q k^T + bias, masked) v, [batch, heads, q_len, d_kv], with FlexAttention and scale 1.0.

    q [batch, heads, q_len, d_kv], k and v [batch, heads, k_len, d_kv]. With a mask_mod the
    BlockMask is built here, with create_block_mask. compiled=False runs flex_attention eagerly
    (its unfused reference path; PyTorch's warning about it is silenced), compiled=True through
    torch.compile (the fused kernel; slow to compile on first use, and compiled again for each new
    shape: meant for fixed lengths, such as a benchmark or a prompt, not token-by-token decoding).

    On CPU, when q, k or v require grad (training), PyTorch has no flex_attention backward: the
    call then goes to `flex_reference`, the same score_mod and mask_mod applied to dense scores,
    so the gradient still reaches the table. Gradients to the table alone (q, k and v frozen) go
    through flex_attention's own backward on CPU too.
    """
    _check_qkv(q, k, v)
    compiled = check_bool("compiled", compiled)
    if _needs_dense_path(q, k, v):
        return flex_reference(q, k, v, score_mod=score_mod, mask_mod=mask_mod)
    block_mask = None
    if mask_mod is not None:
        batch = q.shape[0] if getattr(mask_mod, "per_batch", True) else None
        # On a GPU the compiled path also compiles the block mask's construction, so that no
        # [batch, 1, q_len, k_len] grid of booleans is built there either.
        block_mask = create_block_mask(mask_mod, batch, None, q.shape[2], k.shape[2], device=q.device,
                                       _compile=compiled and q.device.type == "cuda")
    if compiled:
        return _compiled_flex()(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=1.0)
    with quiet_flex():
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=1.0)


def _check_qkv(q, k, v):
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.ndim != 4:
            raise ArgumentError(f"{name} must be a tensor [batch, heads, length, d_kv], got {_described(x)}")
    if k.shape != v.shape or q.shape[:2] != k.shape[:2] or q.shape[3] != k.shape[3]:
        raise ArgumentError(f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} must share batch, "
                            "heads and d_kv, and k and v their length")


def flex_reference(q, k, v, *, score_mod=None, mask_mod=None):
    """What flex_attention computes (scale 1.0), written out on dense [batch, heads, q_len, k_len] scores.

    score_mod and mask_mod are called once, on broadcastable index tensors instead of one score at
    a time, which works for every mod built from indexing and arithmetic (all of this module's).
    Scores are float32 (float64 for float64 inputs), as in flex_attention; a row with no allowed
    key gets zero weights, as in flex_attention. Differentiable: the CPU training path.
    """
    _check_qkv(q, k, v)
    batch, heads, q_len, k_len = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    b, h, q_idx, kv_idx = (torch.arange(n, device=q.device).view(shape) for n, shape in (
        (batch, (-1, 1, 1, 1)), (heads, (1, -1, 1, 1)), (q_len, (1, 1, -1, 1)), (k_len, (1, 1, 1, -1))))
    scores = (q @ k.transpose(-1, -2)).to(torch.float64 if q.dtype == torch.float64 else torch.float32)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx)
    if mask_mod is None:
        return torch.softmax(scores, dim=-1).to(v.dtype) @ v
    allowed = mask_mod(b, h, q_idx, kv_idx).expand(scores.shape)
    any_key = allowed.any(dim=-1, keepdim=True)  # rows with no key: zero weights (and no NaN in backward)
    scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~any_key, 0.0)
    weights = torch.softmax(scores, dim=-1) * any_key
    return weights.to(v.dtype) @ v


class FlexT5SelfAttention(T5SelfAttention):
    """`T5SelfAttention` with the bias as a score_mod and the masks as a block mask.

    Same constructor arguments, parameters, state_dict and forward as `T5SelfAttention`, plus two
    keyword-only options: compiled (run torch.compile's fused kernel) and return_dense_bias.

    position_bias, handed up the stack: the layer that owns the table returns the per-offset bias,
    a [heads, q_len + k_len - 1] tensor, and the layers above take it as `position_bias=` as
    before. A layer also accepts the eager layer's [1, heads, q_len, k_len] bias, so an eager
    layer 0 may feed flex layers. For the other way round (a flex layer 0 under eager layers),
    build it with return_dense_bias=True: it then returns the materialised [1, heads, q_len, k_len]
    tensor, at the memory cost that the flex path exists to avoid.
    """

    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                 max_distance=128, bias_init="normal", *, compiled=False, return_dense_bias=False):
        super().__init__(d_model, num_heads, d_kv, causal=causal, has_relative_bias=has_relative_bias,
                         num_buckets=num_buckets, max_distance=max_distance, bias_init=bias_init)
        self.compiled = check_bool("compiled", compiled)
        self.return_dense_bias = check_bool("return_dense_bias", return_dense_bias)

    def per_offset_bias(self, q_len, k_len, query_offset=0):
        """[heads, q_len + k_len - 1] from this layer's table, on its device."""
        return per_offset_bias(self.relative_attention_bias.weight, q_len, k_len, bidirectional=not self.causal,
                               max_distance=self.max_distance, query_offset=query_offset)

    def _bias(self, position_bias, q, q_len, k_len, past_len):
        """(the position_bias to hand up, the score_mod that adds it or None)."""
        if position_bias is None:
            if not self.has_relative_bias:  # no table, nothing handed: zero bias, as the eager layer
                return q.new_zeros(self.num_heads, q_len + k_len - 1), None
            position_bias = self.per_offset_bias(q_len, k_len, query_offset=past_len)
        if not isinstance(position_bias, torch.Tensor) or position_bias.ndim not in (2, 4):
            raise ArgumentError("position_bias must be a per-offset bias [heads, q_len + k_len - 1] or a "
                                f"materialised one [1, heads, q_len, k_len], got {_described(position_bias)}")
        if position_bias.ndim == 2:
            _check_per_offset(position_bias, q_len, k_len)
            return position_bias, bias_score_mod(position_bias, q_len, past_len)
        if tuple(position_bias.shape[1:]) != (self.num_heads, q_len, k_len):
            raise ArgumentError(f"position_bias must have shape [1, heads={self.num_heads}, q_len={q_len}, "
                                f"k_len={k_len}], got {list(position_bias.shape)}")
        return position_bias, full_bias_score_mod(position_bias)

    def _mask_mod(self, attention_mask, cross, past_len, device):
        causal = self.causal and not cross  # cross-attention: every decoder token may see every real encoder token
        if not causal and attention_mask is None:
            return None
        padding = attention_mask.to(device) if attention_mask is not None else None
        return t5_mask_mod(causal=causal, key_padding=padding, query_offset=past_len)

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                use_cache=False, key_value_states=None) -> AttentionOutput:
        """As `T5SelfAttention.forward`; position_bias is per-offset (see the class docstring)."""
        past_len = self._check_inputs(hidden_states, attention_mask, past_key_value, key_value_states)
        q, k, v = self.project(hidden_states, past_key_value, key_value_states)
        q_len, k_len = q.shape[2], k.shape[2]
        position_bias, score_mod = self._bias(position_bias, q, q_len, k_len, past_len)
        mask_mod = self._mask_mod(attention_mask, key_value_states is not None, past_len, q.device)
        context = flex_t5_attention(q, k, v, score_mod=score_mod, mask_mod=mask_mod, compiled=self.compiled)
        if self.return_dense_bias and position_bias.ndim == 2:
            position_bias = dense_bias(position_bias, q_len, k_len)
        return AttentionOutput(self.o(self.merge_heads(context)), position_bias, (k, v) if use_cache else None)
