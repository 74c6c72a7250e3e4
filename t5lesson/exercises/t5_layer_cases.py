"""Exercise 6's module question: its cases, transformers' answer, and the classic mistakes.

`cases()` are the cases check() runs; the grader runs cases drawn from the instructor's seed
(`hidden_cases`): the same kinds in the same order (`_SPECS`) with new weights and states, each
drawn again until it is well posed (`_well_posed`: no verdict on it hangs on float32 rounding or
on a mistake that changes the result by a hair).

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
transformers on every case, check()'s and drawn ones, and that each mistake changes the cases it
is meant to show up in.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..grading.questions.kinds import Case
from ..grading.questions.module import Expected, closeness, compare
from . import one_torch_thread

__all__ = ["cases", "hidden_cases", "reference_case", "simulate", "diagnose", "shows", "MISTAKES", "projection_stds"]

# small, so that the record of all cases stays far below the harvest limits
SMALL = {"d_model": 8, "num_heads": 2, "d_kv": 4, "num_buckets": 32, "max_distance": 128}
FEW = {**SMALL, "num_buckets": 8, "max_distance": 16}  # a long decoder reaches the log buckets and the clamp
INIT = {"d_model": 256, "num_heads": 4, "d_kv": 32, "num_buckets": 32, "max_distance": 128}
LENGTH = 6
CROSS = "cross-attention"  # the topic prefix of the cases where the layer attends to the encoder's states
PACKED = "packed rows:"  # the topic prefix of the cases with several examples in one row (segment_ids)


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


def _segment_ids(examples, length: int) -> tuple:
    """Rows of segment ids from each row's example lengths: (3, 2) -> 1 1 1 2 2, then 0 (padding) to `length`."""
    rows = []
    for lengths in examples:
        row = [number for number, n in enumerate(lengths, 1) for _ in range(n)]
        rows.append(tuple(row + [0] * (length - len(row))))
    return tuple(rows)


def _case(seed, plan, topic, *, causal, pads=None, scale=1.0, two_layers=False, length=LENGTH, base=SMALL,
          encoder=0, packed=None):
    """One hidden case; `encoder` > 0: a cross-attention case (a decoder layer without a table, its keys
    and values from `encoder` encoder states, the mask the encoder's padding); `packed`: each row's example
    lengths, several short examples packed into one row (the row is padded after them)."""
    rng = np.random.default_rng(seed)
    config = _config(causal, has_relative_bias=not encoder, base=base)
    kwargs = {"plan": plan, "config": config, "weights": _weights(rng, config, table=not encoder),
              "hidden": _nested(np.round(rng.normal(scale=scale, size=(2, length, base["d_model"])), 3)),
              "mask": _mask(pads or {}, length=encoder or length)}
    if packed:
        kwargs["segments"] = _segment_ids(packed, length)
        kwargs["mask"] = tuple(tuple(int(s > 0) for s in row) for row in kwargs["segments"])
    if encoder:
        kwargs["encoder"] = _nested(np.round(rng.normal(scale=scale, size=(2, encoder, base["d_model"])), 3))
    if two_layers:
        kwargs["config1"] = _config(causal, has_relative_bias=False)
        kwargs["weights1"] = _weights(rng, kwargs["config1"], table=False)
        kwargs["hidden1"] = _nested(np.round(rng.normal(size=(2, length, SMALL["d_model"])), 3))
    return Case((), tuple(kwargs.items()), topic)


_INIT = Case((), (("plan", "init"), ("config", _config(False, base=INIT))),
             "T5's initialisation of the projections")

# (check()'s seed, plan, topic, the options of `_case`, weight) of every case but the initialisation (`_INIT`,
# worth 2, first). The weights say what each case is worth. The layer of objective 7 comes first: self-attention
# (with the initialisation) is a third of the question and cross-attention a third; packed rows, one step beyond
# the lessons, are the last third. The initialisation earns its share only beside a case that computes something
# (see `SUPPORTING`).
_SPECS = (
    (1, "bias", "the encoder's position_bias", {"causal": False}, 4),
    (11, "bias", "the decoder's position_bias, 10 tokens", {"causal": True, "length": 10}, 4),
    (2, "full", "encoder, no padding", {"causal": False}, 4),
    (3, "full", "encoder, row 1 padded on the right", {"causal": False, "pads": {1: "right"}}, 4),
    (4, "full", "decoder, row 1 padded on the right", {"causal": True, "pads": {1: "right"}}, 3),
    (5, "full", "decoder, row 0 padded on the left", {"causal": True, "pads": {0: "left"}}, 4),
    (12, "full", "decoder, 24 tokens, 8 buckets up to distance 16", {"causal": True, "length": 24, "base": FEW}, 5),
    (6, "steps_bias", "the position_bias of the 6th token, 5 in the cache", {"causal": True}, 4),
    (7, "steps", "decoding token by token with the cache, against one full pass", {"causal": True}, 6),
    (8, "two_layers", "a second layer reusing layer 0's bias", {"causal": True, "two_layers": True}, 5),
    (9, "full", "large logits (about a thousand)", {"causal": False, "scale": 30.0}, 5),
    (13, "full", f"{CROSS}, 5 decoder tokens, 7 encoder tokens, row 1 padded on the right",
     {"causal": True, "length": 5, "encoder": 7, "pads": {1: "right"}}, 15),
    (14, "cross_steps", f"{CROSS} with the cache, 8 decoder, 6 encoder tokens, row 0 padded on the left",
     {"causal": True, "length": 8, "encoder": 6, "pads": {0: "left"}}, 12),
    (15, "cross_steps", f"{CROSS} with the cache: a 2-token prompt, then token by token",
     {"causal": True, "length": 5, "encoder": 7, "pads": {0: "left"}}, 13),
    (16, "cross_steps", f"{CROSS} with the cache and large logits",
     {"causal": True, "length": 4, "encoder": 6, "scale": 30.0}, 10),
    (17, "full", f"{PACKED} encoder, two examples per row", {"causal": False, "packed": ((3, 3), (2, 4))}, 9),
    (18, "full", f"{PACKED} encoder, three examples, row 1 padded after them",
     {"causal": False, "packed": ((2, 2, 2), (3, 1))}, 9),
    (19, "full", f"{PACKED} decoder, two examples per row", {"causal": True, "packed": ((4, 2), (1, 5))}, 9),
    (20, "full", f"{PACKED} decoder, 24 tokens, 8 buckets up to distance 16",
     {"causal": True, "length": 24, "base": FEW, "packed": ((10, 14), (6, 9, 5))}, 9),
    (21, "full", f"{PACKED} encoder with large logits", {"causal": False, "scale": 30.0, "packed": ((2, 4), (5, 1))},
     7),
    (22, "two_layers", f"{PACKED} decoder, a second layer reusing layer 0's bias",
     {"causal": True, "two_layers": True, "packed": ((3, 3), (2, 2, 2))}, 7),
)
SUPPORTING = (0,)  # the initialisation: it earns nothing on its own


def cases() -> tuple[Case, ...]:
    """The cases check() runs for exercise 6's module question, in the order the feedback numbers them."""
    return (_INIT,) + tuple(_case(seed, plan, topic, **options) for seed, plan, topic, options, _ in _SPECS)


def hidden_cases(rng) -> tuple[Case, ...]:
    """The grading cases: every public case's plan, configuration, lengths and padding, with weights
    and states drawn from `rng` (one seed per case, drawn again until the case is well posed)."""
    drawn = [_INIT]
    for _, plan, topic, options, _ in _SPECS:
        for _ in range(100):
            case = _case(int(rng.integers(2 ** 32)), plan, topic, **options)
            if _well_posed(case, large=options.get("scale", 1.0) > 1.0):
                break
        else:  # a recipe that cannot be met: a bug here, not a case to grade on
            raise RuntimeError(f"no well-posed case of {topic!r} in 100 draws")
        drawn.append(case)
    return tuple(drawn)


def case_weights() -> tuple[int, ...]:
    """What each case is worth, in the order of `cases()` (and of `hidden_cases`)."""
    return (2,) + tuple(weight for *_, weight in _SPECS)


# --- which drawn cases are well posed -------------------------------------------------------------

LARGE_LOGITS, ORDINARY_LOGITS = 300.0, 40.0  # a large-logit case's largest |score| at least; any other's at most
_NUMBERS = ("weights", "hidden", "encoder", "weights1", "hidden1")  # a case's float inputs


def _well_posed(case: Case, large: bool) -> bool:
    """Whether a drawn case tests what its kind is for, with no verdict on a knife's edge.

    Large-logit cases must reach scores where a softmax without the maximum subtracted overflows, and
    the others stay far from that, so the diagnosis of an overflow keeps its meaning. Only the
    large-logit cases can be on a knife's edge (`clear_cut`): their softmax is nearly one-hot, so
    float32 rounding of scores near a thousand moves the result by a good part of the tolerance, and
    a mistake that only halves or shifts the scores can move it by a hair. With scores of at most
    `ORDINARY_LOGITS` float32 drifts by about 1e-6 and every mistake moves the result by far more
    than the tolerance (tests/exercises/test_drawn_cases.py checks drawn cases of every kind).
    """
    kwargs = dict(case.kwargs)
    with one_torch_thread():
        score = largest_score(kwargs)
    if (score < LARGE_LOGITS) if large else (score > ORDINARY_LOGITS):
        return False
    return not large or clear_cut(kwargs)


def _in_float32(kwargs: dict) -> dict:
    """The case with its weights and states rounded to float32, as the learner's module receives them."""
    def rounded(values):
        if isinstance(values, dict):
            return {name: rounded(v) for name, v in values.items()}
        return np.asarray(values, dtype=np.float32).astype(float)

    return {name: rounded(value) if name in _NUMBERS and value is not None else value
            for name, value in kwargs.items()}


def clear_cut(kwargs: dict) -> bool:
    """Whether no verdict on the case hangs on a hair: transformers' float32 result agrees with our float64
    layer within a quarter of the tolerance, on the case's numbers and on those numbers rounded to float32
    (what a learner's module holds), so a right answer computed another way is right with room to spare;
    and each classic mistake either leaves the result as it is or changes it clearly (one that came within
    about 1e-2 of it would be blamed on precision instead of named)."""
    expected = reference_case(**kwargs)
    strict = Expected(expected.values, expected.rtol / 4, expected.atol / 4)
    with one_torch_thread():
        ours = [simulate(frozenset(), **kwargs), simulate(frozenset(), **_in_float32(kwargs))]
    if any(compare(strict, result) is not None for result in ours):
        return False
    for mistake in _candidates(kwargs):
        variant = _variant(kwargs, (mistake,), expected)
        if variant is not None and compare(expected, variant.values) is not None \
                and closeness(expected, variant.values) is not None:
            return False
    return True


# --- transformers, in the grader's process ---------------------------------------------------

def projection_stds(config) -> dict[str, float]:
    """T5's initial std of W_q, W_k, W_v, W_o (in that order), as `t5lesson.layer.init_stds` writes them
    (imported here, on use: it needs torch)."""
    from ..layer import init_stds

    return init_stds(config["d_model"], config["num_heads"], config["d_kv"])


def _allowed(mask, q_len, k_len, causal, query_offset=0, segments=None):
    """Bool [batch, 1, q_len, k_len]: the padding mask AND (in a decoder) the causal mask AND (packed rows)
    the same example: a key of another segment is hidden, as T5X's segment-id masks do
    (t5x/examples/t5/network.py, Transformer.encode and decode)."""
    import torch

    from ..scores import causal_mask

    allowed = torch.tensor(mask, dtype=torch.bool)[:, None, None, :k_len]
    if causal:
        allowed = allowed & torch.from_numpy(causal_mask(q_len, k_len, query_offset))
    allowed = allowed.expand(-1, 1, q_len, k_len)
    if segments is not None:
        ids = torch.tensor(segments)
        allowed = allowed & (ids[:, None, :, None] == ids[:, None, None, :])
    return allowed


def _unpadded_rows(output, mask):
    """NaN at the outputs of padded query positions: they are not compared."""
    real = np.asarray(mask, dtype=bool)[:, :, None]
    return np.where(real, output, np.nan)


def reference_case(plan, config, weights=None, hidden=None, mask=None, config1=None, weights1=None,
                   hidden1=None, encoder=None, segments=None) -> Expected:
    """What transformers' T5Attention gives for one case (see the module doc)."""
    with one_torch_thread():
        return _reference_case(plan, config, weights, hidden, mask, config1, weights1, hidden1, encoder, segments)


def _reference_case(plan, config, weights, hidden, mask, config1, weights1, hidden1, encoder,
                    segments) -> Expected:
    if plan == "init":
        return Expected(np.array(list(projection_stds(config).values())), rtol=0.1, atol=0.0)
    import torch

    from ..reference import reference_mask, t5_attention

    with torch.no_grad():
        layer = t5_attention(config, weights)
        x = torch.tensor(hidden, dtype=torch.float32)
        n = x.shape[1]
        if encoder is not None:  # cross-attention: every decoder token may see every real encoder token
            states = torch.tensor(encoder, dtype=torch.float32)
            additive = reference_mask(_allowed(mask, n, states.shape[1], causal=False))
            output, _, _ = layer(x, mask=additive, key_value_states=states)
            return Expected(output.numpy().astype(float))  # plan "cross_steps" too: the same keys at every call
        additive = reference_mask(_allowed(mask, n, n, config["causal"], segments=segments))
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
    keys = "an encoder state that is padding" if kwargs.get("encoder") is not None else "a padded key"
    return (f"with {side} padding, row {b} attends to {keys}: give every key whose attention_mask is 0 "
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
    "default_buckets": lambda kw: "the bias buckets offsets up to distance 128 whatever the layer is built with; "
                                  "use the max_distance it is given.",
    "no_padding": _sentence_padding,
    "mask_zero": lambda kw: "masked scores are set to 0 instead of a very negative number, so masked keys keep "
                            "some weight.",
    "no_causal": lambda kw: "a decoder query attends to later keys: apply the causal mask.",
    "query_offset": lambda kw: "during cached decoding the bias is computed as if the new token were at position "
                               "0; pass query_offset = the number of cached tokens.",
    "query_offset_mask": lambda kw: "during cached decoding the bias and the causal mask treat the new token as "
                                    "position 0; both need query_offset = the number of cached tokens.",
    "no_cache": lambda kw: "the cached keys and values are not used: put past_key_value's keys and values in "
                           "front of the new ones.",
    "cache_order": lambda kw: "the new keys and values are put in front of the cached ones; the cached ones come "
                              "first (they are the earlier positions).",
    "split_no_transpose": lambda kw: "the heads are split with a reshape alone: view as [batch, n, heads, d_kv], "
                                     "then swap n and heads.",
    "merge_no_transpose": lambda kw: "the heads are merged with a reshape alone: swap heads and n back before "
                                     "reshaping to [batch, n, heads * d_kv].",
    "ignores_shared_bias": lambda kw: "layer 1 ignored the position_bias handed to it; a layer without a table "
                                      "adds the bias it receives.",
    "cross_causal": lambda kw: "cross-attention applies the causal mask; a decoder token may see every encoder "
                               "state (only the encoder's padding is masked).",
    "cross_self_keys": lambda kw: "in cross-attention the keys and values come from hidden_states; they come from "
                                  "key_value_states, the encoder's output.",
    "no_segments": lambda kw: "in a packed row, tokens attend to the keys of other examples: allow a key only when "
                              "its segment_ids equals the query's.",
}

_SELF_ONLY = ("sqrt_d_all", "bias_negated", "offset_sign", "no_bias", "bidirectional_decoder", "default_buckets",
              "no_causal", "query_offset", "query_offset_mask", "no_cache", "cache_order", "ignores_shared_bias")
_PLANS_OF = {  # which mistakes can show in which plan (the others give the right answer there)
    "bias": ("bias_negated", "offset_sign", "no_bias", "bidirectional_decoder", "default_buckets"),
    "steps_bias": ("bias_negated", "offset_sign", "no_bias", "bidirectional_decoder", "default_buckets",
                   "query_offset"),
}


def _forward(config, weights, x, mask, position_bias=None, past=None, mistakes=frozenset(), encoder=None,
             segments=None):
    """One call of the layer in float64, possibly with mistakes: (output, position_bias, (keys, values)).

    The steps are transformers' own: project and split the heads (with the cache), the position bias,
    which keys each query may see, then the softmax-weighted values merged and projected out."""
    import torch

    w = {name: torch.tensor(values, dtype=torch.float64) for name, values in weights.items()}
    q, k, v, past_len = _projections(config, w, x, past, mistakes, encoder)
    q_len, k_len = q.shape[2], k.shape[2]
    if position_bias is None:
        offset = 0 if mistakes & {"query_offset", "query_offset_mask"} else past_len
        position_bias = _position_bias(config, w, q_len, k_len, offset, mistakes)
    used_bias = torch.zeros_like(position_bias) if "ignores_shared_bias" in mistakes else position_bias
    allowed = _allowed_keys(config, x.shape[0], q_len, k_len, mask, segments, past_len, encoder is not None,
                            mistakes)
    return _attend(config, w, q, k, v, used_bias, allowed, mistakes), position_bias, (k, v)


def _split_heads(t, config, mistakes):
    """[batch, n, heads * d_kv] -> [batch, heads, n, d_kv] (or the reshape alone, one of the mistakes)."""
    heads, d_kv = config["num_heads"], config["d_kv"]
    if "split_no_transpose" in mistakes:
        return t.reshape(t.shape[0], heads, -1, d_kv)
    return t.view(t.shape[0], -1, heads, d_kv).transpose(1, 2)


def _projections(config, w, x, past, mistakes, encoder):
    """The queries, keys and values split into heads, the cache put in front of the new keys and values:
    (q, k, v, the number of cached positions)."""
    import torch

    cross = encoder is not None
    q = _split_heads(x @ w["q.weight"].T, config, mistakes)
    source = x if (not cross or "cross_self_keys" in mistakes) else encoder
    if cross and past is not None:  # the encoder's keys and values, computed at the first step
        k, v = past
    else:
        k, v = (_split_heads(source @ w[f"{name}.weight"].T, config, mistakes) for name in "kv")
    past_len = 0
    if past is not None and not cross and "no_cache" not in mistakes:
        past_len = past[0].shape[2]
        if "cache_order" in mistakes:
            k, v = torch.cat([k, past[0]], dim=2), torch.cat([v, past[1]], dim=2)
        else:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
    return q, k, v, past_len


def _position_bias(config, w, q_len: int, k_len: int, offset: int, mistakes):
    """[1, heads, q_len, k_len]: the table's entry for each offset's bucket (zeros in a layer without a table),
    queries starting at position `offset`."""
    import torch

    from ..buckets import relative_position_bucket

    if not config["has_relative_bias"]:
        return torch.zeros(1, config["num_heads"], q_len, k_len, dtype=torch.float64)
    rel = torch.arange(k_len)[None, :] - (torch.arange(q_len)[:, None] + offset)
    if "offset_sign" in mistakes:
        rel = -rel
    bidirectional = not config["causal"] or "bidirectional_decoder" in mistakes
    distance = 128 if "default_buckets" in mistakes else config["max_distance"]
    buckets = relative_position_bucket(rel, bidirectional, config["num_buckets"], distance)
    position_bias = w["relative_attention_bias.weight"][buckets].permute(2, 0, 1)[None]
    if "bias_negated" in mistakes:
        position_bias = -position_bias
    if "no_bias" in mistakes:
        position_bias = torch.zeros_like(position_bias)
    return position_bias


def _allowed_keys(config, batch: int, q_len: int, k_len: int, mask, segments, past_len: int, cross: bool,
                  mistakes):
    """Bool [batch, 1, q_len, k_len]: the causal mask (self-attention in a decoder), the padding mask and
    (packed rows) the same example, each left out by the mistake that forgets it."""
    import torch

    allowed = torch.ones(batch, 1, q_len, k_len, dtype=torch.bool)
    if config["causal"] and "no_causal" not in mistakes and (not cross or "cross_causal" in mistakes):
        mask_offset = 0 if "query_offset_mask" in mistakes else past_len
        allowed = allowed & (torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + mask_offset)
    if mask is not None and "no_padding" not in mistakes:
        allowed = allowed & torch.tensor(mask, dtype=torch.bool)[:, None, None, -k_len:]
    if segments is not None and "no_segments" not in mistakes:
        ids = torch.tensor(segments)
        allowed = allowed & (ids[:, None, :, None] == ids[:, None, None, :])
    return allowed


def _attend(config, w, q, k, v, bias, allowed, mistakes):
    """The scores q·k + bias, masked, through the softmax onto the values; the heads merged and projected out."""
    import torch

    heads, d_kv = config["num_heads"], config["d_kv"]
    batch, q_len = q.shape[0], q.shape[2]
    scores = q @ k.transpose(-1, -2)
    if "sqrt_d" in mistakes:
        scores = scores / math.sqrt(d_kv)
    scores = scores + bias
    if "sqrt_d_all" in mistakes:
        scores = scores / math.sqrt(d_kv)
    scores = scores.masked_fill(~allowed, 0.0 if "mask_zero" in mistakes else torch.finfo(torch.float64).min)
    context = torch.softmax(scores, dim=-1) @ v
    if "merge_no_transpose" in mistakes:
        merged = context.reshape(batch, q_len, heads * d_kv)
    else:
        merged = context.transpose(1, 2).reshape(batch, q_len, heads * d_kv)
    return merged @ w["o.weight"].T


def _steps(config, weights, x, mask, mistakes, encoder=None):
    """Decoding with the cache (`decoding_steps`): (the outputs concatenated, the last step's position_bias)."""
    import torch

    past, outputs, bias = None, [], None
    for start, end in decoding_steps(x.shape[1], cross=encoder is not None):
        step_mask = mask if encoder is not None else ([row[:end] for row in mask] if mask is not None else None)
        out, bias, past = _forward(config, weights, x[:, start:end], step_mask, past=past, mistakes=mistakes,
                                   encoder=encoder)
        outputs.append(out)
    return torch.cat(outputs, dim=1), bias


def decoding_steps(length: int, cross: bool) -> list[tuple[int, int]]:
    """The (start, end) of each call while decoding with the cache: token by token; in cross-attention a
    2-token prompt first (several queries at once, so a position bias or a causal mask there shows), then
    token by token (the driver, t5_layer_driver.py, takes the same steps)."""
    first = min(2, length) if cross else 1
    return [(0, first)] + [(t, t + 1) for t in range(first, length)]


def simulate(mistakes=frozenset(), *, plan, config, weights=None, hidden=None, mask=None, config1=None,
             weights1=None, hidden1=None, encoder=None, segments=None) -> np.ndarray:
    """The case's result as our float64 layer computes it, with the given mistakes made on purpose."""
    import torch

    mistakes = frozenset(mistakes)
    if plan == "init":
        return np.array(list(projection_stds(config).values()))
    x = torch.tensor(hidden, dtype=torch.float64)
    states = None if encoder is None else torch.tensor(encoder, dtype=torch.float64)
    if plan in ("steps", "steps_bias", "cross_steps"):
        outputs, bias = _steps(config, weights, x, mask, mistakes, encoder=states)
        result = bias if plan == "steps_bias" else outputs
        assert result is not None, f"plan {plan}: no step was decoded"
        return result.numpy()
    out, bias, _ = _forward(config, weights, x, mask, mistakes=mistakes - {"ignores_shared_bias"}, encoder=states,
                            segments=segments)
    if plan == "bias":
        return bias.numpy()
    if plan == "two_layers":
        out, _, _ = _forward(config1, weights1, torch.tensor(hidden1, dtype=torch.float64), mask,
                             position_bias=bias, mistakes=mistakes, segments=segments)
    return out.numpy()


def _candidates(kwargs):
    plan = kwargs["plan"]
    names = list(_PLANS_OF.get(plan, MISTAKES))
    config = kwargs["config"]
    if kwargs.get("encoder") is not None:
        names = [n for n in names if n not in _SELF_ONLY]
    else:
        names = [n for n in names if not n.startswith("cross_")]
    if not config["causal"]:
        names = [n for n in names if n not in ("no_causal", "bidirectional_decoder", "query_offset",
                                               "query_offset_mask", "no_cache", "cache_order")]
    if plan not in ("steps", "steps_bias"):
        names = [n for n in names if n not in ("query_offset", "query_offset_mask", "no_cache", "cache_order")]
    if plan != "two_layers":
        names = [n for n in names if n != "ignores_shared_bias"]
    if config.get("max_distance") == 128:
        names = [n for n in names if n != "default_buckets"]
    if not any(0 in row for row in kwargs.get("mask") or ()):
        names = [n for n in names if n != "no_padding"]
    if kwargs.get("segments") is None:
        names = [n for n in names if n != "no_segments"]
    return names


_SIMULATED: dict = {}  # (case, mistakes) -> the simulated result: the same mistakes recur across a class


def _case_key(kwargs) -> tuple:
    return (kwargs["plan"], repr(kwargs.get("hidden"))[:400], repr(kwargs.get("encoder"))[:200],
            repr(kwargs.get("config")), repr(kwargs.get("mask")), repr(kwargs.get("segments")))


def _variant(kwargs, mistakes, expected: Expected) -> Expected | None:
    """The case's result with `mistakes` made (None where those mistakes cannot even run on it)."""
    key = (_case_key(kwargs), tuple(sorted(mistakes)))
    if key not in _SIMULATED:
        if len(_SIMULATED) > 20_000:
            _SIMULATED.clear()
        try:
            with one_torch_thread():
                _SIMULATED[key] = simulate(mistakes, **kwargs)
        except RuntimeError:  # e.g. cross-attention keys from hidden_states of another length: shapes clash
            _SIMULATED[key] = None
    if _SIMULATED[key] is None:
        return None
    care = np.isfinite(expected.values)
    return Expected(np.where(care, _SIMULATED[key], np.nan), expected.rtol, expected.atol)


def _reproduces(kwargs, combo, expected: Expected, got: np.ndarray) -> bool:
    variant = _variant(kwargs, combo, expected)
    return variant is not None and compare(variant, got) is None


def _sentence(kwargs, key) -> str:
    return " Also, ".join(MISTAKES[m](kwargs) for m in key)


OVERFLOW_SCORE = 80.0  # exp(x) overflows float32 near x = 88.7: only cases with larger scores can give inf


def largest_score(kwargs) -> float:
    """The largest |q·k + bias| of a case: exp of more than about 88 overflows in float32."""
    import torch

    if kwargs["plan"] in ("init", "bias", "steps_bias"):
        return 0.0
    w = {name: torch.tensor(values, dtype=torch.float64) for name, values in kwargs["weights"].items()}
    x = torch.tensor(kwargs["hidden"], dtype=torch.float64)
    states = x if kwargs.get("encoder") is None else torch.tensor(kwargs["encoder"], dtype=torch.float64)
    heads, d_kv = kwargs["config"]["num_heads"], kwargs["config"]["d_kv"]
    q = (x @ w["q.weight"].T).view(x.shape[0], -1, heads, d_kv).transpose(1, 2)
    k = (states @ w["k.weight"].T).view(states.shape[0], -1, heads, d_kv).transpose(1, 2)
    table = w.get("relative_attention_bias.weight")
    extra = float(table.abs().max()) if table is not None else 0.0
    return float((q @ k.transpose(-1, -2)).abs().max()) + extra


def diagnose(kwargs, got: np.ndarray, expected: Expected) -> list[tuple[tuple, str]]:
    """The mistakes (one, else a pair) that reproduce the learner's result: [(key, sentence), ...]."""
    plan = kwargs["plan"]
    if plan == "init":
        return [(("init",), _diagnose_init(kwargs["config"], got))]
    if not np.isfinite(got[np.isfinite(expected.values)]).all():
        with one_torch_thread():
            large = largest_score(kwargs) > OVERFLOW_SCORE
        if large:
            return [(("overflow",), "the result holds nan or inf: with scores this large exp overflows; subtract "
                                    "each row's maximum before exp (torch.softmax does).")]
        return []
    if closeness(expected, got) is not None:  # right steps, too little precision: no mistake of the list
        return []
    names = _candidates(kwargs)
    for size in (1, 2):
        found = [(combo, _sentence(kwargs, combo)) for combo in itertools.combinations(names, size)
                 if _reproduces(kwargs, combo, expected, got)]
        if found:
            return found
    return []


def shows(kwargs, key, expected: Expected) -> bool:
    """Would the mistake(s) `key` change this case's result? (Unknown keys: no.)"""
    if tuple(key) == ("overflow",):
        with one_torch_thread():
            return largest_score(kwargs) > OVERFLOW_SCORE
    if not all(name in MISTAKES for name in key) or kwargs["plan"] == "init":
        return False
    if not set(key) <= set(_candidates(kwargs)):
        return False
    variant = _variant(kwargs, key, expected)
    return variant is None or compare(expected, variant.values) is not None


def _diagnose_init(config, got: np.ndarray) -> str:
    want = projection_stds(config)
    std = dict(zip("qkvo", got, strict=True))
    near = lambda value, target: abs(value - target) <= 0.1 * target
    if near(std["q"], config["d_model"] ** -0.5) and all(near(std[n], want[n]) for n in "kvo"):
        return ("W_q starts with std d_model^-1/2, like W_k; T5 folds 1/sqrt(d_kv) into it: "
                "std (d_model·d_kv)^-1/2.")
    wrong = [f"W_{n}" for n in "qkvo" if not near(std[n], want[n])]
    verb = "does" if len(wrong) == 1 else "do"
    return (f"{', '.join(wrong)} {verb} not start with T5's initialisation: normal with std (d_model·d_kv)^-1/2 for "
            "W_q, d_model^-1/2 for W_k and W_v, (num_heads·d_kv)^-1/2 for W_o.")
