"""Lesson 8's your-turn cell, flex_attend: T5's attention through FlexAttention, checked on the learner's layer.

The learner writes `flex_attend(layer, q, k, v, query_offset=0, key_padding=None)`: the bias of every
distinct offset as a vector, a `score_mod` that adds the entry of offset `kv_idx - (q_idx +
query_offset)`, a `mask_mod` (the causal mask in a decoder AND the keys' padding), and the call of
`torch.nn.attention.flex_attention.flex_attention` with `scale=1.0`. Nothing `[q_len, k_len]` is built.

The check runs it on layers of the class lesson 8 uses: the learner's lesson-6 `T5Layer` when lesson 6
saved it next to the notebook (`lesson_6_layer`), else the course's `T5SelfAttention`. Each layer gets
trained-looking weights (a table of non-zero entries, not a fresh one a slip could hide behind), and
the expected result is that layer's own eager attention,

    layer.attend(layer.scores(q, k) + layer.compute_bias(q_len, k_len, query_offset),
                 layer.allowed(q_len, k_len, key_padding, query_offset), v),

on an encoder and a decoder, padded on the right and on the left, a cached step of one token and of
several, bucket settings other than the default (an odd number of buckets among them) and odd sizes.
Queries that may see no key at all (a decoder's first queries under left padding) are left out of the
comparison: FlexAttention gives them zeros, the eager layer even weights, and no model uses them.

A `flex_attend` that calls the layer's `compute_bias` or `allowed` builds the `[q_len, k_len]` tensors
the lesson is about avoiding: the check says so instead of "matches".
"""
from __future__ import annotations

import math

import torch

from .. import flex
from ..buckets import relative_position_bucket
from ..flex import quiet_flex
from .your_turn import Turn, case, compare_values

__all__ = ["flex_attend", "check_flex_attend", "FLEX_CASES", "FLEX_HINTS", "TURNS", "layer_class", "quiet_flex"]

TOL = 1e-5


def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
    """The course's answer: T5's attention context [batch, heads, q_len, d_kv] through FlexAttention."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    batch, _, q_len, _ = q.shape
    k_len = k.shape[2]
    offsets = torch.arange(-(query_offset + q_len - 1), k_len - query_offset)  # every key - query, lowest first
    buckets = relative_position_bucket(offsets, bidirectional=not layer.causal, num_buckets=layer.num_buckets,
                                       max_distance=layer.max_distance)
    per_offset = layer.relative_attention_bias.weight[buckets].T  # [heads, q_len + k_len - 1]

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + per_offset[h, kv_idx - q_idx + q_len - 1]  # offset kv_idx - (q_idx + query_offset)

    def mask_mod(b, h, q_idx, kv_idx):
        allowed = kv_idx >= 0
        if layer.causal:
            allowed = allowed & (kv_idx <= q_idx + query_offset)
        if key_padding is not None:
            allowed = allowed & key_padding.bool()[b, kv_idx]
        return allowed

    block_mask = create_block_mask(mask_mod, batch, None, q_len, k_len, device=q.device.type)
    return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=1.0)


# --- the check ---------------------------------------------------------------------------------------

# (causal, num_buckets, max_distance, batch, q_len, query_offset, padding): k_len = query_offset + q_len;
# padding "right"/"left" is the last/first rows' keys of the last row of the batch.
FLEX_CASES = (
    (False, 32, 128, 2, 7, 0, "right"),
    (True, 32, 128, 2, 9, 0, "right"),
    (True, 8, 20, 2, 3, 9, "none"),
    (True, 16, 24, 3, 1, 29, "left"),
    (False, 11, 20, 2, 13, 0, "left"),
    (True, 9, 16, 1, 5, 35, "none"),
    (True, 8, 20, 2, 6, 0, "left"),
)


def _words(causal, buckets, distance, batch, q_len, offset, padding) -> str:
    who = "a decoder" if causal else "an encoder"
    if offset:
        plural = "query" if q_len == 1 else "queries"
        what = f"{q_len} new {plural} after {offset} cached"
    else:
        what = f"{q_len} queries and keys"
    pads = {"right": f", row {batch - 1} padded on the right", "left": f", row {batch - 1} padded on the left",
            "none": ", no padding"}[padding]
    return f"{who} ({buckets} buckets up to distance {distance}), batch {batch}, {what}{pads}"


_LAYER_CLASS: dict = {}


def layer_class(folder=".") -> tuple[type, str]:
    """(the attention class lesson 8 checks with, one line saying which): `lesson_6_layer`, loaded once per
    version of the saved file."""
    from pathlib import Path

    from .layer_build import LESSON_7_FILE, lesson_6_layer

    path = Path(folder) / LESSON_7_FILE
    key = (str(path.resolve()), path.stat().st_mtime_ns if path.exists() else None)
    if key not in _LAYER_CLASS:
        _LAYER_CLASS.clear()
        _LAYER_CLASS[key] = lesson_6_layer(folder)
    return _LAYER_CLASS[key]


def _layer(cls, causal, num_buckets, max_distance, seed):
    """A layer of `cls` with the weights of lesson 6's trained_layer (a table of non-zero entries)."""
    from .layer_turns import trained_layer

    course = trained_layer(causal, num_buckets, max_distance, seed=seed)
    layer = cls(course.d_model, course.num_heads, course.d_kv, causal=causal, has_relative_bias=True,
                num_buckets=num_buckets, max_distance=max_distance)
    layer.load_state_dict(course.state_dict())
    return layer.eval()


def _inputs(layer, batch, q_len, offset, padding, seed):
    generator = torch.Generator().manual_seed(seed)
    k_len = offset + q_len
    x = torch.randn(batch, k_len, layer.d_model, generator=generator)
    mask = None
    if padding != "none":
        mask = torch.ones(batch, k_len, dtype=torch.long)
        cut = max(1, k_len // 3)
        if padding == "right":
            mask[-1, -cut:] = 0
        else:
            mask[-1, :cut] = 0
    with torch.no_grad():
        q = layer.split_heads(layer.q(x[:, offset:]))
        k, v = layer.split_heads(layer.k(x)), layer.split_heads(layer.v(x))
    return q, k, v, mask


class _Watched:
    """Counts calls of the layer's compute_bias and allowed made while the learner's function runs."""

    def __init__(self, layer):
        self.layer, self.called = layer, []

    def __enter__(self):
        for name in ("compute_bias", "allowed"):
            method = getattr(self.layer, name)

            def watched(*args, _method=method, _name=name, **kwargs):
                self.called.append(_name)
                return _method(*args, **kwargs)

            setattr(self.layer, name, watched)
        return self

    def __exit__(self, *exc):
        for name in ("compute_bias", "allowed"):
            self.layer.__dict__.pop(name, None)


def _expected(layer, q, k, v, offset, mask):
    q_len, k_len = q.shape[2], k.shape[2]
    allowed = layer.allowed(q_len, k_len, mask, query_offset=offset)
    context = layer.attend(layer.scores(q, k) + layer.compute_bias(q_len, k_len, query_offset=offset), allowed, v)
    seen = allowed.expand(q.shape[0], 1, q_len, k_len).any(-1, keepdim=True)  # [batch, 1, q_len, 1]
    return context, seen


def _scale_slip(got, layer, q, k, v, offset, mask) -> str:
    """'. The result is the attention of the scores divided by sqrt(d_kv)' when it is, else ''."""
    q_len, k_len = q.shape[2], k.shape[2]
    allowed = layer.allowed(q_len, k_len, mask, query_offset=offset)
    bias = layer.compute_bias(q_len, k_len, query_offset=offset)
    root = math.sqrt(layer.d_kv)
    for scores in (layer.scores(q, k) / root + bias, (layer.scores(q, k) + bias) / root):
        if torch.allclose(got, layer.attend(scores, allowed, v), atol=TOL):
            return (". That is the attention of the scores divided by sqrt(d_kv): T5 does not scale them, and "
                    "flex_attention does unless it is given scale=1.0")
    return ""


def check_flex_attend(learner, reference):
    """None when the learner's flex_attend gives the layer's own attention on every case, else where not."""
    cls, _ = layer_class()
    for n, (causal, buckets, distance, batch, q_len, offset, padding) in enumerate(FLEX_CASES, 1):
        label = f"case {n} of {len(FLEX_CASES)} ({_words(causal, buckets, distance, batch, q_len, offset, padding)})"
        layer = _layer(cls, causal, buckets, distance, seed=40 + n)
        q, k, v, mask = _inputs(layer, batch, q_len, offset, padding, seed=50 + n)
        with torch.no_grad(), quiet_flex():
            want, seen = _expected(layer, q, k, v, offset, mask)
            with case(label), _Watched(layer) as watch:
                got = learner(layer, q.clone(), k.clone(), v.clone(), query_offset=offset,
                              key_padding=None if mask is None else mask.clone())
            if watch.called:
                return (f"{label}: your function calls layer.{watch.called[0]}, which builds a [q_len, k_len] "
                        "tensor; the point of FlexAttention is to compute each entry where it is used, in "
                        "score_mod and mask_mod")
            if isinstance(got, torch.Tensor) and got.shape == want.shape:
                got = torch.where(seen, got, torch.zeros(()))  # queries with no key to see are not compared
                want = torch.where(seen, want, torch.zeros(()))
            problem = compare_values(got, want, TOL)
            if problem:
                slip = _scale_slip(got, layer, q, k, v, offset, mask) if got.shape == want.shape else ""
                return f"{label}: {problem}{slip}"
    return None


FLEX_HINTS = (
    "The bias of a pair depends only on its offset, key position minus query position. How many different "
    "offsets occur between q_len queries that start at position query_offset and k_len keys, and which is the "
    "lowest? And what does flex_attention do to the scores by default that T5 does not?",
    "Bucket the offsets from the lowest, -(query_offset + q_len - 1), up to k_len - query_offset - 1, with the "
    "layer's own rule and settings, and read the table at those buckets: one row per head. In score_mod the "
    "pair (q_idx, kv_idx) has offset kv_idx - (q_idx + query_offset); subtract the lowest offset to get its "
    "index. mask_mod is True where the key is not padding and, in a decoder, not after the query's own "
    "position q_idx + query_offset. Build the block mask from mask_mod, and pass scale=1.0.",
    "offsets = torch.arange(-(query_offset + q_len - 1), k_len - query_offset); buckets = "
    "t5.relative_position_bucket(offsets, bidirectional=not layer.causal, num_buckets=layer.num_buckets, "
    "max_distance=layer.max_distance); per_offset = layer.relative_attention_bias.weight[buckets].T; "
    "score_mod returns score + per_offset[h, kv_idx - q_idx + q_len - 1]; mask_mod returns (kv_idx <= q_idx + "
    "query_offset if layer.causal) & key_padding.bool()[b, kv_idx]; then flex_attention(q, k, v, "
    "score_mod=score_mod, block_mask=create_block_mask(mask_mod, batch, None, q_len, k_len, device=\"cpu\"), "
    "scale=1.0)",
)


# The package's own FlexAttention path: a learner's function that hands the work to it is told so.
COURSE_VERSIONS = (flex.flex_t5_attention, flex.bias_score_mod, flex.t5_mask_mod, flex.per_offset_bias)


TURNS = {
    "flex_attend": Turn(reference=flex_attend, check=check_flex_attend, hints=FLEX_HINTS, tol=TOL,
                        course_versions=COURSE_VERSIONS),
}
