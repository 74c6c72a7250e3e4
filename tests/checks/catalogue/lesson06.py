"""Lesson 6's your-turn cells (compute_bias, attend): slips in the bias lookup and in the masked softmax.

The slips named by the reviews of 2026-12-04 are here: compute_bias without the query offset, with
query minus key, bucketed the other way, without the leading 1; attend over dim=-2, masking by
multiplying, scaling by sqrt(d) and masking after the softmax, filling with -inf, filling with 0,
renormalising after the softmax.
"""
from __future__ import annotations

import math
from fractions import Fraction

import torch
from harness import QuestionCheck, TurnCheck, edited, your_turn_answer

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


# --- exercise 6 q4: the class MyT5Attention -------------------------------------------------------
#
# q4 is graded in three parts of a third each: self-attention (with the initialisation), cross-attention
# (with its cache) and packed rows. A slip is held when it earns under a third of every part it breaks:
# under 1/3 of the whole when it breaks all three (the shared core: scores, masks, heads, projections),
# under 1/3 + 2/9 = 5/9 when it breaks two (the position bias: self-attention and packed rows; cross-
# attention has none), under 2/3 + 1/9 = 7/9 when it is confined to one part. The first entry makes the
# mutants, from the shared core's methods only (a mutant elsewhere breaks one or two parts, which one fixed
# `below` cannot judge); the others have max_mutants=0.

def _solution_class() -> str:
    """The class of solutions/06_t5_layer.ipynb's q4 answer cell, the solution markers dropped."""
    import json

    from harness import ROOT

    cells = json.loads((ROOT / "solutions" / "06_t5_layer.ipynb").read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell.get("metadata", {}).get("t5lesson", {}).get("cell") == "q4-answer":
            lines = "".join(cell["source"]).splitlines()
            return "\n".join(line for line in lines if "### " not in line) + "\n"
    raise KeyError("no q4-answer cell in solutions/06_t5_layer.ipynb")


LAYER_ANSWER = _solution_class()


def _layer_namespace():
    return {"torch": torch, "nn": torch.nn, "math": math, "relative_position_bucket": t5.relative_position_bucket,
            "causal_mask": t5.causal_mask}


def _slip(*edits: tuple[str, str]) -> str:
    """The course's class with each (old, new) line edit made; an edit that finds nothing is a bug here."""
    return edited(LAYER_ANSWER, *edits)


class _Setting:
    """One random configuration of the layer: sizes, trained-looking weights, states, a padding mask."""

    def __init__(self, generator):
        pick = lambda low, high: int(torch.randint(low, high, (1,), generator=generator))  # noqa: E731
        self.pick, self.generator = pick, generator
        self.causal = bool(pick(0, 2))
        buckets = pick(4, 33)
        exact = buckets // 2  # a decoder's exact range (an encoder's is half that): valid for both
        self.config = {"d_model": pick(3, 13), "num_heads": pick(1, 4), "d_kv": pick(1, 6), "causal": self.causal,
                       "has_relative_bias": True, "num_buckets": buckets, "max_distance": pick(exact + 1, 40)}
        self.batch, self.n = pick(1, 4), pick(1, 12)
        self.scale = [0.3, 1.0, 4.0][pick(0, 3)]  # states as a trained layer's inputs: not all near unit size

    def weights(self, table: bool) -> dict:
        c = self.config
        inner, gain = c["num_heads"] * c["d_kv"], lambda: 0.2 + 1.5 * float(torch.rand(1, generator=self.generator))
        shapes = {"q.weight": (inner, c["d_model"]), "k.weight": (inner, c["d_model"]),
                  "v.weight": (inner, c["d_model"]), "o.weight": (c["d_model"], inner)}
        if table:
            shapes["relative_attention_bias.weight"] = (c["num_buckets"], c["num_heads"])
        return {name: torch.randn(shape, generator=self.generator) * gain() for name, shape in shapes.items()}

    def states(self, n: int) -> torch.Tensor:
        return torch.randn(self.batch, n, self.config["d_model"], generator=self.generator) * self.scale

    def mask(self, n: int) -> torch.Tensor:
        """1/0 [batch, n]: each row padded on the left, on the right or not at all; at least one real token."""
        rows = []
        for _ in range(self.batch):
            count, side = self.pick(0, n), self.pick(0, 3)
            row = torch.ones(n, dtype=torch.long)
            if side == 1 and count:
                row[:count] = 0
            elif side == 2 and count:
                row[-count:] = 0
            rows.append(row)
        return torch.stack(rows)

    def segments(self, n: int) -> torch.Tensor:
        """Segment ids [batch, n]: 1, 2, ... for the examples packed in a row, 0 for the padding after them."""
        rows = []
        for _ in range(self.batch):
            ends = sorted({self.pick(1, n + 1) for _ in range(self.pick(1, 4))})
            row = torch.zeros(n, dtype=torch.long)
            start = 0
            for number, end in enumerate(ends, 1):
                row[start:end] = number
                start = end
            rows.append(row)
        return torch.stack(rows)


def _pair(cls, config, weights):
    """(the learner's layer, transformers' T5Attention) with the same weights."""
    from t5lesson.reference import t5_attention

    layer = cls(**config)
    state = layer.state_dict()
    state.update({name: value.clone() for name, value in weights.items()})
    layer.load_state_dict(state)
    return layer.eval(), t5_attention(config, weights)


def _additive(mask, q_len, k_len, causal, segments=None):
    from t5lesson.exercises.t5_layer_cases import _allowed
    from t5lesson.reference import reference_mask

    return reference_mask(_allowed(mask.tolist(), q_len, k_len, causal, segments=segments))


def _close(got, want, real=None) -> bool:
    """Whether `got` is a tensor equal to `want` within float32 tolerance on the real query rows, and finite
    wherever transformers' is (padded rows included)."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    if not torch.isfinite(got[torch.isfinite(want)]).all():  # nan in a padded row poisons the next layer's values
        return False
    if real is not None:
        got, want = got[real.bool()], want[real.bool()]
    return bool(torch.allclose(got.double(), want.double(), rtol=1e-3, atol=1e-4))


def _outputs(result):
    """(output, position_bias, present) from what a layer's forward returned."""
    items = list(result)[:3] if isinstance(result, (tuple, list)) else [result]
    return tuple(items + [None] * (3 - len(items)))


def _self_attention(cls, s: _Setting) -> str | None:
    """One pass with padding (output and position_bias), then a second layer without a table handed the bias."""
    weights = s.weights(table=True)
    layer, ref = _pair(cls, s.config, weights)
    x, mask = s.states(s.n), s.mask(s.n)
    output, bias, _ = _outputs(layer(x, attention_mask=mask))
    want, _, _ = ref(x, mask=_additive(mask, s.n, s.n, s.causal))
    where = f"a {'decoder' if s.causal else 'encoder'} of {s.n} tokens, batch {s.batch}, mask {mask.tolist()}"
    if not _close(output, want, mask):
        return f"self-attention over {where}: the output differs from transformers' T5Attention"
    if not _close(bias, ref.compute_bias(s.n, s.n)):
        return f"self-attention over {where}: the position_bias differs"
    config1 = {**s.config, "has_relative_bias": False}
    second, ref1 = _pair(cls, config1, s.weights(table=False))
    x1 = s.states(s.n)
    got, _, _ = _outputs(second(x1, attention_mask=mask, position_bias=bias))
    _, handed, _ = ref(x, mask=_additive(mask, s.n, s.n, s.causal))
    want, _, _ = ref1(x1, mask=_additive(mask, s.n, s.n, s.causal), position_bias=handed)
    if not _close(got, want, mask):
        return f"a second layer handed layer 0's bias, {where}: the output differs"
    return None


def _cached_steps(cls, s: _Setting) -> str | None:
    """A decoder token by token with the cache, against one full pass; the last step's position_bias."""
    config = {**s.config, "causal": True}
    layer, ref = _pair(cls, config, s.weights(table=True))
    x, mask = s.states(s.n), s.mask(s.n)
    past, outputs, bias = None, [], None
    for t in range(s.n):
        out, bias, past = _outputs(layer(x[:, t:t + 1], attention_mask=mask[:, :t + 1], past_key_value=past,
                                         use_cache=True))
        outputs.append(out)
    want, _, _ = ref(x, mask=_additive(mask, s.n, s.n, True))
    where = f"decoding {s.n} tokens with the cache, mask {mask.tolist()}"
    if not all(isinstance(o, torch.Tensor) for o in outputs) or not _close(torch.cat(outputs, dim=1), want, mask):
        return f"{where}: the outputs differ from one pass of transformers' T5Attention"
    if not _close(bias, ref.compute_bias(1, s.n, past_seen_tokens=s.n - 1)):
        return f"{where}: the last step's position_bias differs"
    return None


def _counting(layer):
    """Hooks that count the calls of W_k and W_v; returns (the list they append to, the hooks)."""
    calls = []
    return calls, [getattr(layer, name).register_forward_hook(lambda *_: calls.append(1)) for name in "kv"]


def _cross_attention(cls, s: _Setting) -> str | None:
    """Cross-attention over padded encoder states: one pass, then token by token with the cache, counting the
    calls of W_k and W_v after the first step (the outputs cannot tell a layer that recomputes them)."""
    config = {**s.config, "causal": True, "has_relative_bias": False}
    layer, ref = _pair(cls, config, s.weights(table=False))
    enc_len = s.pick(1, 10)
    x, states, mask = s.states(s.n), s.states(enc_len), s.mask(enc_len)
    want, _, _ = ref(x, mask=_additive(mask, s.n, enc_len, False), key_value_states=states)
    where = f"cross-attention from {s.n} decoder tokens to {enc_len} encoder states, mask {mask.tolist()}"
    output, _, _ = _outputs(layer(x, attention_mask=mask, key_value_states=states))
    if not _close(output, want):
        return f"{where}: the output differs from transformers' T5Attention"
    calls, hooks = _counting(layer)
    try:
        past, outputs = None, []
        for t in range(s.n):
            del calls[:]
            out, _, past = _outputs(layer(x[:, t:t + 1], attention_mask=mask, key_value_states=states,
                                          past_key_value=past, use_cache=True))
            outputs.append(out)
            if t and calls:
                return f"{where}, with the cache: step {t + 1} runs W_k and W_v on the encoder's states again"
    finally:
        for hook in hooks:
            hook.remove()
    if not all(isinstance(o, torch.Tensor) for o in outputs) or not _close(torch.cat(outputs, dim=1), want):
        return f"{where}, token by token with the cache: the outputs differ"
    return None


def _packed_rows(cls, s: _Setting) -> str | None:
    """Several examples packed into each row (segment ids), one pass, then a second layer handed the bias."""
    weights = s.weights(table=True)
    layer, ref = _pair(cls, s.config, weights)
    x, segments = s.states(s.n), s.segments(s.n)
    mask = (segments > 0).long()
    additive = _additive(mask, s.n, s.n, s.causal, segments=segments.tolist())
    output, bias, _ = _outputs(layer(x, attention_mask=mask, segment_ids=segments))
    want, handed, _ = ref(x, mask=additive)
    where = f"packed rows in a {'decoder' if s.causal else 'encoder'}, segment ids {segments.tolist()}"
    if not _close(output, want, mask):
        return f"{where}: the output differs from transformers' T5Attention with T5X's segment mask"
    second, ref1 = _pair(cls, {**s.config, "has_relative_bias": False}, s.weights(table=False))
    x1 = s.states(s.n)
    got, _, _ = _outputs(second(x1, attention_mask=mask, position_bias=bias, segment_ids=segments))
    want, _, _ = ref1(x1, mask=additive, position_bias=handed)
    if not _close(got, want, mask):
        return f"{where}, a second layer handed layer 0's bias: the output differs"
    return None


def _initialisation(cls, generator) -> str | None:
    """T5's initial std of each projection, on a layer large enough to measure it within a few percent."""
    from t5lesson.layer import init_stds

    causal = bool(torch.randint(0, 2, (1,), generator=generator))
    config = {"d_model": 192, "num_heads": 3, "d_kv": 48, "causal": causal}
    torch.manual_seed(int(torch.randint(0, 10**6, (1,), generator=generator)))
    layer = cls(**config)
    for name, std in init_stds(192, 3, 48).items():
        got = float(layer.state_dict()[f"{name}.weight"].std())
        if abs(got - std) > 0.05 * std:
            return f"W_{name} starts with std {got:.4f}; T5's is {std:.4f}"
    return None


LAYER_PROBES = (_self_attention, _cached_steps, _cross_attention, _packed_rows)


def differs_layer(cls, seed):
    """Many random layers (encoder and decoder, odd and even lengths, padding on either side, caches, cross-
    attention, packed rows, trained-looking weights) against transformers' T5Attention: where `cls` differs."""
    generator = torch.Generator().manual_seed(seed)
    problem = _initialisation(cls, generator)
    if problem:
        return problem
    with torch.no_grad():
        for _ in range(12):
            setting = _Setting(generator)
            for probe in LAYER_PROBES:
                problem = probe(cls, setting)
                if problem:
                    return problem
    return None


ATTEND_LINES = ("        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)\n"
                "        weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)"
                "  # in float32, as t5lesson.softmax\n")
KV_LINE = "            k, v = self.split_heads(self.k(source)), self.split_heads(self.v(source))\n"
BIAS_CALL = "                position_bias = self.compute_bias(q_len, k_len, query_offset=past_len)\n"
SUM_LINE = "        context = self.attend(self.scores(q, k) + position_bias, allowed, v)\n"
CROSS_MASK = ("            allowed = torch.ones(1, 1, q_len, k_len, dtype=torch.bool)\n"
              "            if attention_mask is not None:\n"
              "                allowed = allowed & attention_mask.bool()[:, None, None, :]\n")
SEGMENT_LINE = "            allowed = allowed & (segment_ids[:, None, :, None] == segment_ids[:, None, None, :])\n"

LAYER_WRONG_EVERYWHERE = {  # the shared core: self-attention, cross-attention and packed rows all break
    "the scores divided by sqrt(d_kv)": _slip(
        ("        return q @ k.transpose(-1, -2)\n",
         "        return q @ k.transpose(-1, -2) / math.sqrt(self.d_kv)\n")),
    "scores and bias divided by sqrt(d_kv)": _slip(
        (SUM_LINE,
         "        context = self.attend((self.scores(q, k) + position_bias) / math.sqrt(self.d_kv), allowed, v)\n")),
    "masked after the softmax (weights times the mask)": _slip(
        (ATTEND_LINES, "        weights = torch.softmax(scores.float(), dim=-1).to(v.dtype) * allowed\n")),
    "masked scores set to 0": _slip(
        ("scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)", "scores.masked_fill(~allowed, 0.0)")),
    "the heads split with a reshape alone": _slip(
        ("        return x.view(batch, n, self.num_heads, self.d_kv).transpose(1, 2)\n",
         "        return x.reshape(batch, self.num_heads, n, self.d_kv)\n")),
    "the heads merged without swapping back": _slip(
        ("        return context.transpose(1, 2).reshape(batch, n, self.num_heads * self.d_kv)\n",
         "        return context.reshape(batch, n, self.num_heads * self.d_kv)\n")),
    "no output projection": _slip(
        ("        return self.o(self.merge_heads(context)), position_bias, present\n",
         "        return self.merge_heads(context), position_bias, present\n")),
    "the softmax over the queries (dim=-2)": _slip(
        ("torch.softmax(scores.float(), dim=-1)", "torch.softmax(scores.float(), dim=-2)")),
    "the values projected with W_k": _slip(
        (KV_LINE, "            k, v = self.split_heads(self.k(source)), self.split_heads(self.k(source))\n")),
}

LAYER_WRONG_BIAS = {  # the position bias: self-attention and packed rows break; cross-attention has none
    "no position bias": _slip(
        (BIAS_CALL, "                position_bias = q.new_zeros(1, self.num_heads, q_len, k_len)\n")),
    "the bias looked up for query minus key": _slip(
        ("relative_position_bucket(key_position - query_position,",
         "relative_position_bucket(query_position - key_position,")),
    "the bias subtracted": _slip((SUM_LINE, SUM_LINE.replace("+ position_bias", "- position_bias"))),
    "queries and keys swapped in the bias's permute": _slip(
        (".permute(2, 0, 1).unsqueeze(0)", ".permute(2, 1, 0).unsqueeze(0)")),
    "the bias added to the weights after the softmax": _slip(
        (SUM_LINE, "        context = self.attend(self.scores(q, k), allowed, v)\n"),
        ("        return weights @ v\n", "        return (weights + position_bias) @ v\n"),
        ("    def attend(self, scores, allowed, v):", "    def attend(self, scores, allowed, v, position_bias=0):"),
        ("self.attend(self.scores(q, k), allowed, v)", "self.attend(self.scores(q, k), allowed, v, position_bias)")),
    "the offsets clipped into the table instead of bucketed": _slip(
        ("        buckets = relative_position_bucket(key_position - query_position, bidirectional=not self.causal,\n"
         "                                           num_buckets=self.num_buckets, max_distance=self.max_distance)\n",
         "        buckets = (key_position - query_position).clamp(0, self.num_buckets - 1)\n")),
}

LAYER_WRONG_ONE_PART = {  # confined to cross-attention or to packed rows
    "cross-attention recomputes the encoder's keys and values at every step": _slip(
        ("        if cross and past_key_value is not None:"
         "  # the encoder's keys and values, computed at the first step\n"
         "            k, v = past_key_value\n        else:\n", "        if True:\n"),
        ("            if past_key_value is not None:  # self-attention",
         "            if past_key_value is not None and not cross:  # self-attention")),
    "cross-attention adds a position bias (a table in every layer)": _slip(
        ("        if has_relative_bias:\n            self.relative_attention_bias",
         "        if True:\n            self.relative_attention_bias"),
        ('            if hasattr(self, "relative_attention_bias") and not cross:\n',
         '            if hasattr(self, "relative_attention_bias"):\n')),
    "cross-attention applies the causal mask": _slip(
        (CROSS_MASK, "            allowed = self.allowed(q_len, k_len, attention_mask)\n")),
    "cross-attention ignores the encoder's padding": _slip(
        (CROSS_MASK, "            allowed = torch.ones(1, 1, q_len, k_len, dtype=torch.bool)\n")),
    "cross-attention's keys and values from hidden_states": _slip(
        ("            source = key_value_states if cross else hidden_states\n",
         "            source = hidden_states\n")),
    "packed rows: segment_ids ignored": _slip((SEGMENT_LINE, "            pass\n")),
    "packed rows: masked one way only (earlier examples visible)": _slip(
        (SEGMENT_LINE, SEGMENT_LINE.replace("] == segment_ids", "] >= segment_ids"))),
}

LAYER_RIGHT = {
    "transformers' T5Attention: shape/unshape, an additive finfo.min mask on the bias, softmax in float32": '''
class MyT5Attention(nn.Module):
    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.is_decoder, self.n_heads, self.key_value_proj_dim = causal, num_heads, d_kv
        self.relative_attention_num_buckets, self.relative_attention_max_distance = num_buckets, max_distance
        self.inner_dim = num_heads * d_kv
        self.q = nn.Linear(d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, d_model, bias=False)
        self.q.weight.data.normal_(mean=0.0, std=(d_model * d_kv) ** -0.5)
        self.k.weight.data.normal_(mean=0.0, std=d_model ** -0.5)
        self.v.weight.data.normal_(mean=0.0, std=d_model ** -0.5)
        self.o.weight.data.normal_(mean=0.0, std=(num_heads * d_kv) ** -0.5)
        self.has_relative_attention_bias = has_relative_bias
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)

    def compute_bias(self, query_length, key_length, past_seen_tokens=0):
        context_position = torch.arange(past_seen_tokens, past_seen_tokens + query_length)[:, None]
        memory_position = torch.arange(key_length)[None, :]
        relative_position = memory_position - context_position
        bucket = relative_position_bucket(relative_position, bidirectional=not self.is_decoder,
                                          num_buckets=self.relative_attention_num_buckets,
                                          max_distance=self.relative_attention_max_distance)
        return self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                use_cache=False, key_value_states=None, segment_ids=None):
        batch_size, seq_length = hidden_states.shape[:2]
        is_cross_attention = key_value_states is not None
        shape = lambda states: states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        query_states = shape(self.q(hidden_states))
        past_len = 0
        if is_cross_attention and past_key_value is not None:
            key_states, value_states = past_key_value
        else:
            current_states = key_value_states if is_cross_attention else hidden_states
            key_states, value_states = shape(self.k(current_states)), shape(self.v(current_states))
            if past_key_value is not None:
                past_len = past_key_value[0].shape[2]
                key_states = torch.cat([past_key_value[0], key_states], dim=2)
                value_states = torch.cat([past_key_value[1], value_states], dim=2)
        key_length = key_states.shape[-2]
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            if not self.has_relative_attention_bias or is_cross_attention:
                position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(seq_length, key_length, past_seen_tokens=past_len)
        keep = torch.ones(batch_size, 1, seq_length, key_length, dtype=torch.bool)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :].bool()
        if self.is_decoder and not is_cross_attention:
            keep = keep & (torch.arange(key_length)[None, :] <= torch.arange(seq_length)[:, None] + past_len)
        if segment_ids is not None:
            keep = keep & (segment_ids[:, None, :, None] == segment_ids[:, None, None, :])
        causal_mask = (~keep).to(scores.dtype) * torch.finfo(scores.dtype).min
        position_bias_masked = position_bias + causal_mask
        scores += position_bias_masked
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        present = (key_states, value_states) if use_cache else None
        return self.o(attn_output), position_bias, present
''',
    "einsum and torch.where with -1e9, masks from tril-like comparisons, weights as Parameters of nn.Linear": '''
class MyT5Attention(nn.Module):
    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.h, self.d, self.causal, self.nb, self.md = num_heads, d_kv, causal, num_buckets, max_distance
        for name, (fan_out, fan_in), std in (("q", (num_heads * d_kv, d_model), (d_model * d_kv) ** -0.5),
                                            ("k", (num_heads * d_kv, d_model), d_model ** -0.5),
                                            ("v", (num_heads * d_kv, d_model), d_model ** -0.5),
                                            ("o", (d_model, num_heads * d_kv), (num_heads * d_kv) ** -0.5)):
            linear = nn.Linear(fan_in, fan_out, bias=False)
            nn.init.normal_(linear.weight, 0.0, std)
            setattr(self, name, linear)
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)

    def heads(self, t):
        return t.unflatten(-1, (self.h, self.d)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                use_cache=False, key_value_states=None, segment_ids=None):
        q = self.heads(self.q(hidden_states))
        offset = 0
        if key_value_states is not None:
            k, v = past_key_value if past_key_value is not None else (
                self.heads(self.k(key_value_states)), self.heads(self.v(key_value_states)))
        else:
            k, v = self.heads(self.k(hidden_states)), self.heads(self.v(hidden_states))
            if past_key_value is not None:
                offset = past_key_value[0].shape[-2]
                k, v = torch.cat((past_key_value[0], k), -2), torch.cat((past_key_value[1], v), -2)
        i = torch.arange(q.shape[-2])[:, None] + offset
        j = torch.arange(k.shape[-2])[None, :]
        if position_bias is None:
            if key_value_states is None and hasattr(self, "relative_attention_bias"):
                b = relative_position_bucket(j - i, not self.causal, self.nb, self.md)
                position_bias = self.relative_attention_bias.weight[b].permute(2, 0, 1)[None]
            else:
                position_bias = torch.zeros(1, self.h, i.shape[0], j.shape[1])
        ok = torch.ones(1, 1, i.shape[0], j.shape[1], dtype=torch.bool)
        if self.causal and key_value_states is None:
            ok = ok & (j <= i)
        if attention_mask is not None:
            ok = ok & (attention_mask[:, None, None, :] == 1)
        if segment_ids is not None:
            ok = ok & (segment_ids.unsqueeze(1).unsqueeze(-1) == segment_ids.unsqueeze(1).unsqueeze(-2))
        logits = torch.einsum("bhqd,bhkd->bhqk", q, k) + position_bias
        weights = torch.where(ok, logits, torch.tensor(-1e9)).softmax(-1)
        out = torch.einsum("bhqk,bhkd->bqhd", weights, v).flatten(-2)
        return self.o(out), position_bias, (k, v) if use_cache else None
''',
}

CHECKS += [
    QuestionCheck(id="exercise 06 q4", answer=LAYER_ANSWER, wrong=LAYER_WRONG_EVERYWHERE, right=LAYER_RIGHT,
                  differs=differs_layer, namespace=_layer_namespace, entry="MyT5Attention", max_mutants=20,
                  mutate=("split_heads", "scores", "attend", "merge_heads"),
                  exercise="06_t5_layer", question="q4"),
    QuestionCheck(id="exercise 06 q4, two parts", answer=LAYER_ANSWER, wrong=LAYER_WRONG_BIAS, right=LAYER_RIGHT,
                  differs=differs_layer, namespace=_layer_namespace, entry="MyT5Attention", max_mutants=0,
                  exercise="06_t5_layer", question="q4", below=Fraction(5, 9)),
    QuestionCheck(id="exercise 06 q4, one part", answer=LAYER_ANSWER, wrong=LAYER_WRONG_ONE_PART, right=LAYER_RIGHT,
                  differs=differs_layer, namespace=_layer_namespace, entry="MyT5Attention", max_mutants=0,
                  exercise="06_t5_layer", question="q4", below=Fraction(7, 9)),
]
