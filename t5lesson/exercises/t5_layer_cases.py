"""Exercise 6's module question: the hidden cases, transformers' answer, and the classic mistakes.

Each case is plain data (the grader passes JSON to the learner's kernel): a *plan* (see
`t5lesson.exercises.t5_layer_driver`), the layer's configuration, the weights (named as in
transformers' `T5Attention`), the hidden states and the 1/0 attention mask.

`reference_case` computes, in the grader's process, what transformers' `T5Attention` gives for
the case with the same weights (eager attention, the additive mask transformers' T5Stack would
pass). Outputs of padded query positions are not compared (NaN): no model defines them.

`simulate` is a small torch implementation of the same layer that can make one of the classic
mistakes on purpose (divide by sqrt(d_kv), flip the offset, forget the padding mask, put the
new token at position 0 during cached decoding, ...). `diagnose` runs those variants on a case
the learner got wrong and, when one of them (or a pair) reproduces the learner's result, names
the mistake in one sentence. The tests check that `simulate` without a mistake equals
transformers on every case, and that each mistake changes the cases it is meant to show up in.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..grading.questions.kinds import Case
from ..grading.questions.module import Expected, compare

__all__ = ["cases", "reference_case", "simulate", "diagnose", "shows", "MISTAKES", "PROJECTIONS_STD"]

SMALL = {"d_model": 16, "num_heads": 2, "d_kv": 4, "num_buckets": 32, "max_distance": 128}
INIT = {"d_model": 256, "num_heads": 4, "d_kv": 32, "num_buckets": 32, "max_distance": 128}
LENGTH = 6


def _nested(array: np.ndarray):
    return tuple(_nested(a) for a in array) if array.ndim else float(array)


def _weights(rng, config, table: bool, scale: float = 0.25) -> dict:
    inner = config["num_heads"] * config["d_kv"]
    shapes = {"q.weight": (inner, config["d_model"]), "k.weight": (inner, config["d_model"]),
              "v.weight": (inner, config["d_model"]), "o.weight": (config["d_model"], inner)}
    if table:
        shapes["relative_attention_bias.weight"] = (config["num_buckets"], config["num_heads"])
    return {name: _nested(np.round(rng.normal(scale=1.0 if "relative" in name else scale, size=shape), 3))
            for name, shape in shapes.items()}


def _config(causal: bool, has_relative_bias: bool = True, base=SMALL) -> dict:
    return {**base, "causal": causal, "has_relative_bias": has_relative_bias}


def _mask(pads: dict[int, str], batch: int = 2, length: int = LENGTH, count: int = 2):
    """1/0 rows: pads maps a batch row to "left" or "right" (its first or last `count` tokens are padding)."""
    rows = []
    for b in range(batch):
        row = [1] * length
        if pads.get(b) == "left":
            row[:count] = [0] * count
        elif pads.get(b) == "right":
            row[-count:] = [0] * count
        rows.append(tuple(row))
    return tuple(rows)


def _case(seed, plan, topic, *, causal, pads=None, scale=1.0, two_layers=False):
    rng = np.random.default_rng(seed)
    config = _config(causal)
    kwargs = {"plan": plan, "config": config, "weights": _weights(rng, config, table=True),
              "hidden": _nested(np.round(rng.normal(scale=scale, size=(2, LENGTH, SMALL["d_model"])), 3)),
              "mask": _mask(pads or {})}
    if two_layers:
        kwargs["config1"] = _config(causal, has_relative_bias=False)
        kwargs["weights1"] = _weights(rng, kwargs["config1"], table=False)
        kwargs["hidden1"] = _nested(np.round(rng.normal(size=(2, LENGTH, SMALL["d_model"])), 3))
    return Case((), tuple(kwargs.items()), topic)


def cases() -> tuple[Case, ...]:
    """The hidden cases of exercise 6's module question, in the order the feedback numbers them."""
    return (
        Case((), (("plan", "init"), ("config", _config(False, base=INIT))), "T5's initialisation of the projections"),
        _case(1, "bias", "the encoder's position_bias", causal=False),
        _case(2, "full", "encoder, no padding", causal=False),
        _case(3, "full", "encoder, row 1 padded on the right", causal=False, pads={1: "right"}),
        _case(4, "full", "decoder, row 1 padded on the right", causal=True, pads={1: "right"}),
        _case(5, "full", "decoder, row 0 padded on the left", causal=True, pads={0: "left"}),
        _case(6, "steps_bias", "the position_bias of the 6th token, 5 in the cache", causal=True),
        _case(7, "steps", "decoding token by token with the cache, against one full pass", causal=True),
        _case(8, "two_layers", "a second layer reusing layer 0's bias", causal=True, two_layers=True),
        _case(9, "full", "large logits (about a thousand)", causal=False, scale=30.0),
    )


# --- transformers, in the grader's process ---------------------------------------------------

PROJECTIONS_STD = {
    "q": lambda c: (c["d_model"] * c["d_kv"]) ** -0.5, "k": lambda c: c["d_model"] ** -0.5,
    "v": lambda c: c["d_model"] ** -0.5, "o": lambda c: (c["num_heads"] * c["d_kv"]) ** -0.5,
}


def _allowed(mask, q_len, k_len, causal, query_offset=0):
    """Bool [batch, 1, q_len, k_len]: the padding mask AND (in a decoder) the causal mask."""
    import torch

    from ..scores import causal_mask

    allowed = torch.tensor(mask, dtype=torch.bool)[:, None, None, :k_len]
    if causal:
        allowed = allowed & torch.from_numpy(causal_mask(q_len, k_len, query_offset))
    return allowed.expand(-1, 1, q_len, k_len)


def _unpadded_rows(output, mask):
    """NaN at the outputs of padded query positions: they are not compared."""
    real = np.asarray(mask, dtype=bool)[:, :, None]
    return np.where(real, output, np.nan)


def reference_case(plan, config, weights=None, hidden=None, mask=None, config1=None, weights1=None,
                   hidden1=None) -> Expected:
    """What transformers' T5Attention gives for one case (see the module doc)."""
    if plan == "init":
        return Expected(np.array([PROJECTIONS_STD[n](config) for n in "qkvo"]), rtol=0.1, atol=0.0)
    import torch

    from ..reference import reference_mask, t5_attention

    with torch.no_grad():
        layer = t5_attention(config, weights)
        x = torch.tensor(hidden, dtype=torch.float32)
        n = x.shape[1]
        additive = reference_mask(_allowed(mask, n, n, config["causal"]))
        if plan == "bias":
            return Expected(layer.compute_bias(n, n).numpy().astype(float))
        if plan == "steps_bias":
            return Expected(layer.compute_bias(1, n, past_seen_tokens=n - 1).numpy().astype(float))
        output, bias, _ = layer(x, mask=additive)
        if plan == "two_layers":
            second = t5_attention(config1, weights1)
            output, _, _ = second(torch.tensor(hidden1, dtype=torch.float32), mask=additive, position_bias=bias)
        # plan "full"; plan "steps" is compared with this same full pass
        return Expected(_unpadded_rows(output.numpy().astype(float), mask))


# --- the classic mistakes, simulated --------------------------------------------------------

def _sentence_padding(kwargs):
    sides = []
    for b, row in enumerate(kwargs.get("mask") or ()):
        if 0 in row:
            sides.append((b, "left" if row[0] == 0 else "right"))
    if not sides:
        return "the padding mask is applied where there is no padding."
    b, side = sides[0]
    return (f"with {side} padding, row {b} attends to a padded key: give every key whose attention_mask is 0 "
            "the most negative score.")


MISTAKES = {
    "sqrt_d": lambda kw: "the scores are divided by sqrt(d_kv); T5 uses q·k as it is (the scale went into W_q's "
                         "initialisation).",
    "sqrt_d_all": lambda kw: "the scores and the bias are divided by sqrt(d_kv); T5 divides nothing.",
    "bias_negated": lambda kw: "the bias is subtracted (its sign is flipped); T5 adds table[bucket] to the scores.",
    "offset_sign": lambda kw: "the bias is looked up for query − key; T5 buckets the offset key − query (j − i).",
    "no_bias": lambda kw: "no position bias is added to the scores.",
    "bidirectional_decoder": lambda kw: "the decoder buckets offsets as the encoder does; a causal layer uses "
                                        "bidirectional=False.",
    "no_padding": _sentence_padding,
    "no_causal": lambda kw: "a decoder query attends to later keys: apply the causal mask.",
    "query_offset": lambda kw: "during cached decoding the bias is computed as if the new token were at position "
                               "0; pass query_offset = the number of cached tokens.",
    "query_offset_mask": lambda kw: "during cached decoding the bias and the causal mask treat the new token as "
                                    "position 0; both need query_offset = the number of cached tokens.",
    "no_cache": lambda kw: "the cached keys and values are not used: put past_key_value's keys and values in "
                           "front of the new ones.",
    "ignores_shared_bias": lambda kw: "layer 1 ignored the position_bias handed to it; a layer without a table "
                                      "adds the bias it receives.",
}

_PLANS_OF = {  # which mistakes can show in which plan (the others give the right answer there)
    "bias": ("bias_negated", "offset_sign", "no_bias", "bidirectional_decoder"),
    "steps_bias": ("bias_negated", "offset_sign", "no_bias", "bidirectional_decoder", "query_offset"),
}


def _forward(config, weights, x, mask, position_bias=None, past=None, mistakes=frozenset()):
    """One call of the layer in float64, possibly with mistakes: (output, position_bias, (keys, values))."""
    import torch

    from ..buckets import relative_position_bucket

    w = {name: torch.tensor(values, dtype=torch.float64) for name, values in weights.items()}
    heads, d_kv = config["num_heads"], config["d_kv"]
    b, q_len, _ = x.shape

    def split(t):
        return t.view(b, -1, heads, d_kv).transpose(1, 2)

    q, k, v = (split(x @ w[f"{name}.weight"].T) for name in "qkv")
    past_len = 0
    if past is not None and "no_cache" not in mistakes:
        past_len = past[0].shape[2]
        k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
    k_len = k.shape[2]
    offset = 0 if mistakes & {"query_offset", "query_offset_mask"} else past_len
    if position_bias is None:
        if config["has_relative_bias"]:
            rel = torch.arange(k_len)[None, :] - (torch.arange(q_len)[:, None] + offset)
            if "offset_sign" in mistakes:
                rel = -rel
            bidirectional = not config["causal"] or "bidirectional_decoder" in mistakes
            buckets = relative_position_bucket(rel, bidirectional, config["num_buckets"], config["max_distance"])
            position_bias = w["relative_attention_bias.weight"][buckets].permute(2, 0, 1)[None]
            if "bias_negated" in mistakes:
                position_bias = -position_bias
            if "no_bias" in mistakes:
                position_bias = torch.zeros_like(position_bias)
        else:
            position_bias = torch.zeros(1, heads, q_len, k_len, dtype=torch.float64)
    used_bias = torch.zeros_like(position_bias) if "ignores_shared_bias" in mistakes else position_bias
    scores = q @ k.transpose(-1, -2)
    if "sqrt_d" in mistakes:
        scores = scores / math.sqrt(d_kv)
    scores = scores + used_bias
    if "sqrt_d_all" in mistakes:
        scores = scores / math.sqrt(d_kv)
    allowed = torch.ones(b, 1, q_len, k_len, dtype=torch.bool)
    if config["causal"] and "no_causal" not in mistakes:
        mask_offset = 0 if "query_offset_mask" in mistakes else past_len
        allowed = allowed & (torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + mask_offset)
    if mask is not None and "no_padding" not in mistakes:
        allowed = allowed & torch.tensor(mask, dtype=torch.bool)[:, None, None, -k_len:]
    scores = scores.masked_fill(~allowed, torch.finfo(torch.float64).min)
    weights_ = torch.softmax(scores, dim=-1)
    out = (weights_ @ v).transpose(1, 2).reshape(b, q_len, heads * d_kv) @ w["o.weight"].T
    return out, position_bias, (k, v)


def simulate(mistakes=frozenset(), *, plan, config, weights=None, hidden=None, mask=None, config1=None,
             weights1=None, hidden1=None) -> np.ndarray:
    """The case's result as our float64 layer computes it, with the given mistakes made on purpose."""
    import torch

    mistakes = frozenset(mistakes)
    if plan == "init":
        return np.array([PROJECTIONS_STD[n](config) for n in "qkvo"])
    x = torch.tensor(hidden, dtype=torch.float64)
    if plan in ("steps", "steps_bias"):
        past, outputs, bias = None, [], None
        for t in range(x.shape[1]):
            step_mask = [row[: t + 1] for row in mask] if mask is not None else None
            out, bias, past = _forward(config, weights, x[:, t:t + 1], step_mask, past=past, mistakes=mistakes)
            outputs.append(out)
        return (torch.cat(outputs, dim=1) if plan == "steps" else bias).numpy()
    out, bias, _ = _forward(config, weights, x, mask, mistakes=mistakes - {"ignores_shared_bias"})
    if plan == "bias":
        return bias.numpy()
    if plan == "two_layers":
        out, _, _ = _forward(config1, weights1, torch.tensor(hidden1, dtype=torch.float64), mask,
                             position_bias=bias, mistakes=mistakes)
    return out.numpy()


def _candidates(kwargs):
    plan = kwargs["plan"]
    names = list(_PLANS_OF.get(plan, MISTAKES))
    if not kwargs["config"]["causal"]:
        names = [n for n in names if n not in ("no_causal", "bidirectional_decoder", "query_offset",
                                               "query_offset_mask", "no_cache")]
    if plan not in ("steps", "steps_bias"):
        names = [n for n in names if n not in ("query_offset", "query_offset_mask", "no_cache")]
    if plan != "two_layers":
        names = [n for n in names if n != "ignores_shared_bias"]
    if not any(0 in row for row in kwargs.get("mask") or ()):
        names = [n for n in names if n != "no_padding"]
    return names


def _variant(kwargs, mistakes, expected: Expected) -> Expected:
    care = np.isfinite(expected.values)
    return Expected(np.where(care, simulate(mistakes, **kwargs), np.nan), expected.rtol, expected.atol)


def _sentence(kwargs, key) -> str:
    return " Also, ".join(MISTAKES[m](kwargs) for m in key)


def diagnose(kwargs, got: np.ndarray, expected: Expected) -> list[tuple[tuple, str]]:
    """The mistakes (one, else a pair) that reproduce the learner's result: [(key, sentence), ...]."""
    plan = kwargs["plan"]
    if plan == "init":
        return [(("init",), _diagnose_init(kwargs["config"], got))]
    if not np.isfinite(got[np.isfinite(expected.values)]).all():
        return [(("overflow",), "the result holds nan or inf: with large scores exp overflows; subtract each "
                                "row's maximum before exp (torch.softmax does).")]
    names = _candidates(kwargs)
    for size in (1, 2):
        found = [(combo, _sentence(kwargs, combo)) for combo in itertools.combinations(names, size)
                 if compare(_variant(kwargs, combo, expected), got) is None]
        if found:
            return found
    return []


def shows(kwargs, key, expected: Expected) -> bool:
    """Would the mistake(s) `key` change this case's result? (Unknown keys: no.)"""
    if not all(name in MISTAKES for name in key) or kwargs["plan"] == "init":
        return False
    if not set(key) <= set(_candidates(kwargs)):
        return False
    return compare(expected, _variant(kwargs, key, expected).values) is not None


def _diagnose_init(config, got: np.ndarray) -> str:
    want = {n: PROJECTIONS_STD[n](config) for n in "qkvo"}
    std = dict(zip("qkvo", got, strict=True))
    near = lambda value, target: abs(value - target) <= 0.1 * target
    if near(std["q"], config["d_model"] ** -0.5) and all(near(std[n], want[n]) for n in "kvo"):
        return ("W_q starts with std d_model^-1/2, like W_k; T5 folds 1/sqrt(d_kv) into it: "
                "std (d_model·d_kv)^-1/2.")
    wrong = [f"W_{n}" for n in "qkvo" if not near(std[n], want[n])]
    verb = "does" if len(wrong) == 1 else "do"
    return (f"{', '.join(wrong)} {verb} not start with T5's initialisation: normal with std (d_model·d_kv)^-1/2 for "
            "W_q, d_model^-1/2 for W_k and W_v, (num_heads·d_kv)^-1/2 for W_o.")
