"""Lesson 8's your-turn cell (flex_attend): slips in the per-offset bias, its index, the masks and the scale.

The slips the lesson's plan names are here: the offset's sign flipped, 1/sqrt(d) left in (flex_attention's
default scale, and a division in score_mod), query_offset forgotten, the causal mask as kv_idx < q_idx,
the padding read at the query instead of the key, the index not shifted by q_len - 1, the bucket of the
other direction; and a few more (the default bucket settings, the causal mask forgotten, heads and offsets
swapped, the query_offset counted twice).
"""
from __future__ import annotations

import math

import torch
from harness import TurnCheck, edited, your_turn_answer
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import t5lesson as t5
from t5lesson.layer import T5SelfAttention
from t5lesson.lessons.flex_turns import _expected, _layer, quiet_flex

STEM = "08_flex_attention"
ANSWER = your_turn_answer(STEM, "flex_attend")


def _namespace():
    return {"torch": torch, "t5": t5, "math": math, "flex_attention": flex_attention,
            "create_block_mask": create_block_mask}


def _random_setting(generator):
    """(layer, q, k, v, query_offset, key_padding): every argument away from its default, odd and even sizes."""
    pick = lambda low, high: int(torch.randint(low, high, (1,), generator=generator))  # noqa: E731
    causal = bool(pick(0, 2))
    num_buckets = pick(4, 33)
    max_exact = num_buckets // (1 if causal else 2) // 2
    layer = _layer(T5SelfAttention, causal, num_buckets, pick(max_exact + 1, 60), seed=pick(0, 10 ** 6))
    batch, q_len = pick(1, 4), pick(1, 12)
    offset = pick(0, 40) if causal and pick(0, 2) else 0
    k_len = offset + q_len
    x = torch.randn(batch, k_len, layer.d_model, generator=generator)
    padding = None
    if pick(0, 3):
        lengths = torch.randint(1, k_len + 1, (batch,), generator=generator)
        padding = (torch.arange(k_len)[None, :] < lengths[:, None]).long()
        if pick(0, 2):
            padding = padding.flip(-1)  # padded on the left
    q = layer.split_heads(layer.q(x[:, offset:]))
    k, v = layer.split_heads(layer.k(x)), layer.split_heads(layer.v(x))
    return layer, q, k, v, offset, padding


def differs(function, seed):
    """Many random layers, lengths, cache offsets and paddings: where `function` differs from the layer's own
    eager attention (queries that may see no key left out)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad(), quiet_flex():
        for _ in range(60):
            layer, q, k, v, offset, padding = _random_setting(generator)
            want, seen = _expected(layer, q, k, v, offset, padding)
            got = function(layer, q.clone(), k.clone(), v.clone(), query_offset=offset,
                           key_padding=None if padding is None else padding.clone())
            if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                return "flex_attend returned another shape"
            got, want = torch.where(seen, got, 0.0), torch.where(seen, want, 0.0)
            if not torch.allclose(got, want, atol=1e-5, rtol=0):
                kind = "decoder" if layer.causal else "encoder"
                return (f"flex_attend on a {kind} ({layer.num_buckets} buckets), {q.shape[2]} queries from "
                        f"{offset}: differs")
    return None


def _slip(*edits: tuple[str, str]) -> str:
    """The course's answer with each (old, new) edit made; an edit that finds nothing is a bug here."""
    return edited(ANSWER, *edits)


INDEX = "per_offset[h, kv_idx - q_idx + q_len - 1]"
RANGE = "torch.arange(-(query_offset + q_len - 1), k_len - query_offset)"

WRONG = {
    "the offset's sign flipped (query minus key bucketed)": _slip(
        ("t5.relative_position_bucket(offsets,", "t5.relative_position_bucket(-offsets,")),
    "flex_attention's default scale, 1/sqrt(d)": _slip(
        ("block_mask=block_mask, scale=1.0)", "block_mask=block_mask)")),
    "score_mod divides the score by sqrt(d_kv)": _slip(
        (f"return score + {INDEX}", f"return score / math.sqrt(layer.d_kv) + {INDEX}")),
    "query_offset forgotten (offsets and causal mask as if the queries started at 0)": _slip(
        (RANGE, "torch.arange(-(q_len - 1), k_len)"), ("kv_idx <= q_idx + query_offset", "kv_idx <= q_idx")),
    "the causal mask as kv_idx < q_idx (each query hides itself)": _slip(
        ("kv_idx <= q_idx + query_offset", "kv_idx < q_idx + query_offset")),
    "the padding read at the query, not at the key": _slip(
        ("key_padding.bool()[b, kv_idx]", "key_padding.bool()[b, q_idx]")),
    "the index not shifted by q_len - 1": _slip((INDEX, "per_offset[h, kv_idx - q_idx]")),
    "the bucket of the other direction (bidirectional=layer.causal)": _slip(
        ("bidirectional=not layer.causal", "bidirectional=layer.causal")),
    "the default buckets and distance, not the layer's": _slip(
        ("num_buckets=layer.num_buckets,\n", ""), ("                                          "
                                                    "max_distance=layer.max_distance)", ")")),
    "the causal mask forgotten": _slip(
        ("            allowed = allowed & (kv_idx <= q_idx + query_offset)\n", "            pass\n")),
    "query_offset counted twice in the index": _slip(
        (INDEX, "per_offset[h, kv_idx - q_idx - query_offset + q_len - 1]")),
    "the causal mask without query_offset": _slip(("kv_idx <= q_idx + query_offset", "kv_idx <= q_idx")),
}

RIGHT = {
    "the masks inside score_mod (-inf where hidden), the table indexed per head": '''
def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
    q_len, k_len = q.shape[2], k.shape[2]
    lowest = -(query_offset + q_len - 1)
    buckets = t5.relative_position_bucket(torch.arange(lowest, k_len - query_offset), not layer.causal,
                                          layer.num_buckets, layer.max_distance)
    table = layer.relative_attention_bias.weight.T  # [heads, buckets]

    def score_mod(score, b, h, q_idx, kv_idx):
        position = q_idx + query_offset
        score = score + table[h, buckets[kv_idx - position - lowest]]
        hidden = (kv_idx > position) if layer.causal else (kv_idx < 0)
        if key_padding is not None:
            hidden = hidden | (key_padding[b, kv_idx] == 0)
        return torch.where(hidden, -float("inf"), score)

    return flex_attention(q, k, v, score_mod=score_mod, scale=1.0)
''',
    "per-offset values gathered with an embedding call, mask_mod without a block mask": '''
def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
    from torch.nn.attention.flex_attention import and_masks
    q_len, k_len = q.shape[2], k.shape[2]
    distinct = torch.arange(k_len + q_len - 1) - (q_len - 1 + query_offset)
    values = layer.relative_attention_bias(t5.relative_position_bucket(
        distinct, bidirectional=not layer.causal, num_buckets=layer.num_buckets,
        max_distance=layer.max_distance)).transpose(0, 1)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + values[h, (q_len - 1) + kv_idx - q_idx]

    def causal(b, h, q_idx, kv_idx):
        return (q_idx + query_offset >= kv_idx) | (not layer.causal)

    def real(b, h, q_idx, kv_idx):
        return kv_idx >= 0 if key_padding is None else key_padding[b, kv_idx] > 0

    mask = create_block_mask(and_masks(causal, real), q.shape[0], None, q_len, k_len, device="cpu")
    return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, scale=1.0)
''',
}

CHECKS = [
    TurnCheck(id="your turn flex_attend", answer=ANSWER, wrong=WRONG, right=RIGHT, differs=differs,
              namespace=_namespace, entry="flex_attend", max_mutants=25),
]
