"""Lesson 6's your-turn cells (compute_bias, attend): slips in the bias lookup and in the masked softmax.

The slips named by the reviews of 2026-12-04 are here: compute_bias without the query offset, with
query minus key, bucketed the other way, without the leading 1; attend over dim=-2, masking by
multiplying, scaling by sqrt(d) and masking after the softmax, filling with -inf, filling with 0,
renormalising after the softmax.
"""
from __future__ import annotations

import math

import torch
from harness import TurnCheck, your_turn_answer

import t5lesson as t5
from t5lesson.layer import T5SelfAttention
from t5lesson.lessons.layer_turns import trained_layer

STEM = "06_t5_attention_layer"


def _namespace():
    return {"torch": torch, "t5": t5, "math": math}


# --- compute_bias ---------------------------------------------------------------------------------

def _random_bias_setting(generator):
    """(layer, q_len, k_len, query_offset) with every argument away from its default, odd and even sizes."""
    pick = lambda low, high: int(torch.randint(low, high, (1,), generator=generator))  # noqa: E731
    causal = bool(pick(0, 2))
    num_buckets = pick(4, 40)
    max_exact = num_buckets // (1 if causal else 2) // 2
    max_distance = pick(max_exact + 1, 200)
    layer = trained_layer(causal, num_buckets, max_distance, seed=pick(0, 10**6), num_heads=pick(1, 5))
    q_len = pick(1, 12)
    offset = pick(0, 3) and pick(1, 3 * max_distance)
    return layer, q_len, q_len + offset, offset


def differs_bias(function, seed):
    """Many random layers and lengths: the first setting where `function` differs from the course's."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(150):
            layer, q_len, k_len, offset = _random_bias_setting(generator)
            want = T5SelfAttention.compute_bias(layer, q_len, k_len, query_offset=offset)
            got = function(layer, q_len, k_len, query_offset=offset)
            if not isinstance(got, torch.Tensor) or got.shape != want.shape or not torch.allclose(got, want):
                return (f"compute_bias on a {'decoder' if layer.causal else 'encoder'} layer ({layer.num_buckets} "
                        f"buckets, max_distance {layer.max_distance}), {q_len} queries from {offset}: differs")
    return None


BIAS_ANSWER = your_turn_answer(STEM, "compute_bias")


def _bias(body: str) -> str:
    return "def compute_bias(self, q_len, k_len, query_offset=0):\n" + body


BIAS_LINES = ("    query_position = torch.arange(q_len)[:, None] + query_offset\n"
              "    key_position = torch.arange(k_len)[None, :]\n")
BUCKET = ("    buckets = t5.relative_position_bucket({}, bidirectional={}, num_buckets=self.num_buckets, "
          "max_distance=self.max_distance)\n")
LOOKUP = "    return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)\n"

BIAS_WRONG = {
    "the query offset forgotten": _bias(
        "    query_position = torch.arange(q_len)[:, None]\n    key_position = torch.arange(k_len)[None, :]\n"
        + BUCKET.format("key_position - query_position", "not self.causal") + LOOKUP),
    "query minus key": _bias(BIAS_LINES + BUCKET.format("query_position - key_position", "not self.causal") + LOOKUP),
    "bucketed the other way (bidirectional=self.causal)": _bias(
        BIAS_LINES + BUCKET.format("key_position - query_position", "self.causal") + LOOKUP),
    "no leading 1 (no unsqueeze)": _bias(
        BIAS_LINES + BUCKET.format("key_position - query_position", "not self.causal")
        + "    return self.relative_attention_bias(buckets).permute(2, 0, 1)\n"),
    "the default buckets and distance": _bias(
        BIAS_LINES + "    buckets = t5.relative_position_bucket(key_position - query_position, "
        "bidirectional=not self.causal)\n" + LOOKUP),
    "the offset added to the keys": _bias(
        "    query_position = torch.arange(q_len)[:, None]\n"
        "    key_position = torch.arange(k_len)[None, :] + query_offset\n"
        + BUCKET.format("key_position - query_position", "not self.causal") + LOOKUP),
    "queries and keys swapped in the permute": _bias(
        BIAS_LINES + BUCKET.format("key_position - query_position", "not self.causal")
        + "    return self.relative_attention_bias(buckets).permute(2, 1, 0).unsqueeze(0)\n"),
    "always bidirectional": _bias(BIAS_LINES + BUCKET.format("key_position - query_position", "True") + LOOKUP),
}

BIAS_RIGHT = {
    "transformers' T5Attention.compute_bias: context and memory positions, values permuted": '''
def compute_bias(self, q_len, k_len, query_offset=0):
    context_position = torch.arange(query_offset, query_offset + q_len, dtype=torch.long)[:, None]
    memory_position = torch.arange(k_len, dtype=torch.long)[None, :]
    relative_position = memory_position - context_position  # shape (query_length, key_length)
    relative_position_bucket = t5.relative_position_bucket(
        relative_position, bidirectional=(not self.causal), num_buckets=self.num_buckets,
        max_distance=self.max_distance)
    values = self.relative_attention_bias(relative_position_bucket)  # (query_length, key_length, num_heads)
    values = values.permute([2, 0, 1]).unsqueeze(0)  # (1, num_heads, query_length, key_length)
    return values
''',
    "indexing the weight, heads first by a transpose": '''
def compute_bias(self, q_len, k_len, query_offset=0):
    offsets = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None] - query_offset
    buckets = t5.relative_position_bucket(offsets, not self.causal, self.num_buckets, self.max_distance)
    table = self.relative_attention_bias.weight  # [num_buckets, heads]
    return table.T[:, buckets][None]
''',
}


# --- attend ---------------------------------------------------------------------------------------

def _random_attend_inputs(generator):
    """(layer, scores, allowed, v): random sizes, masks that hide whole rows, scores up to a few thousand."""
    pick = lambda low, high: int(torch.randint(low, high, (1,), generator=generator))  # noqa: E731
    batch, heads, q_len, k_len, d_kv = pick(1, 4), pick(1, 4), pick(1, 9), pick(1, 10), pick(1, 7)
    layer = trained_layer(bool(pick(0, 2)), d_kv=d_kv, num_heads=heads, seed=pick(0, 10**6))
    scale = [0.3, 1.0, 10.0, 300.0][pick(0, 4)]
    scores = torch.randn(batch, heads, q_len, k_len, generator=generator) * scale
    shape = [(batch, 1, q_len, k_len), (1, 1, q_len, k_len), (batch, 1, 1, k_len)][pick(0, 3)]
    allowed = torch.rand(shape, generator=generator) < [0.3, 0.7, 1.0][pick(0, 3)]
    v = torch.randn(batch, heads, k_len, d_kv, generator=generator)
    return layer, scores, allowed, v


def differs_attend(function, seed):
    """Many random scores, masks (whole rows hidden among them) and values: where `function` differs."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(300):
            layer, scores, allowed, v = _random_attend_inputs(generator)
            want = T5SelfAttention.attend(layer, scores, allowed, v)
            got = function(layer, scores.clone(), allowed.clone(), v.clone())
            if not isinstance(got, torch.Tensor) or got.shape != want.shape \
                    or not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
                return f"attend on scores {list(scores.shape)}, a mask {list(allowed.shape)}: differs"
    return None


ATTEND_ANSWER = your_turn_answer(STEM, "attend")


def _attend(body: str) -> str:
    return "def attend(self, scores, allowed, v):\n" + body


ATTEND_WRONG = {
    "softmax over dim=-2, the queries": _attend(
        "    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)\n"
        "    return torch.softmax(scores.float(), dim=-2).to(v.dtype) @ v\n"),
    "masking by multiplying the scores": _attend(
        "    return torch.softmax((scores * allowed).float(), dim=-1).to(v.dtype) @ v\n"),
    "divided by sqrt(d) and masked after the softmax": _attend(
        "    weights = torch.softmax(scores / math.sqrt(self.d_kv), dim=-1) * allowed\n    return weights @ v\n"),
    "filled with -inf (nan where a query may see no key)": _attend(
        "    scores = scores.masked_fill(~allowed, float('-inf'))\n"
        "    return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v\n"),
    "filled with 0": _attend(
        "    scores = scores.masked_fill(~allowed, 0.0)\n    return torch.softmax(scores, dim=-1) @ v\n"),
    "softmax, then the mask, then renormalised": _attend(
        "    weights = torch.softmax(scores, dim=-1) * allowed\n"
        "    return weights / weights.sum(dim=-1, keepdim=True) @ v\n"),
    "exp without the row maximum subtracted": _attend(
        "    e = scores.masked_fill(~allowed, -1e9).exp()\n    return e / e.sum(dim=-1, keepdim=True) @ v\n"),
    "no mask at all": _attend("    return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v\n"),
    "scaled by sqrt(d_kv), masked right": _attend(
        "    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min) / math.sqrt(self.d_kv)\n"
        "    return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v\n"),
    "the mask inverted": _attend(
        "    scores = scores.masked_fill(allowed, torch.finfo(scores.dtype).min)\n"
        "    return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v\n"),
}

ATTEND_RIGHT = {
    "transformers' eager attention: an additive finfo.min mask, softmax in float32, type_as": '''
def attend(self, scores, allowed, v):
    causal_mask = (1.0 - allowed.to(scores.dtype)) * torch.finfo(scores.dtype).min
    attn_weights = scores + causal_mask
    attn_weights = torch.nn.functional.softmax(attn_weights.float(), dim=-1).type_as(attn_weights)
    return torch.matmul(attn_weights, v)
''',
    "torch.where with -1e9, einsum, no cast": '''
def attend(self, scores, allowed, v):
    logits = torch.where(allowed, scores, torch.tensor(-1e9))
    weights = logits.softmax(-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v)
''',
    "a stable softmax written out": '''
def attend(self, scores, allowed, v):
    masked = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    e = (masked - masked.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)) @ v
''',
}

CHECKS = [
    TurnCheck(id="your turn compute_bias", answer=BIAS_ANSWER, wrong=BIAS_WRONG, right=BIAS_RIGHT,
              differs=differs_bias, namespace=_namespace, entry="compute_bias", max_mutants=25),
    TurnCheck(id="your turn attend", answer=ATTEND_ANSWER, wrong=ATTEND_WRONG, right=ATTEND_RIGHT,
              differs=differs_attend, namespace=_namespace, entry="attend", max_mutants=25),
]
