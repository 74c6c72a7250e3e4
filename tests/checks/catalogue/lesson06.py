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


# --- exercise 6 q4: the class MyT5Attention -------------------------------------------------------
#
# q4 is graded in three parts of a third each: self-attention (with the initialisation), cross-attention
# (with its cache) and packed rows. A slip is held when it earns under a third of every part it breaks:
# under 1/3 of the whole when it breaks all three (the shared core: scores, masks, heads, projections),
# under 1/3 + 2/9 = 5/9 when it breaks two (the position bias: self-attention and packed rows; cross-
# attention has none), under 2/3 + 1/9 = 7/9 when it is confined to one part. The first entry makes the
# mutants; the others have max_mutants=0.

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
    source = LAYER_ANSWER
    for old, new in edits:
        assert source.count(old) == 1, f"the q4 answer has {source.count(old)} of {old!r}"
        source = source.replace(old, new)
    return source


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

    config = {"d_model": 192, "num_heads": 3, "d_kv": 48, "causal": bool(torch.randint(0, 2, (1,), generator=generator))}
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
