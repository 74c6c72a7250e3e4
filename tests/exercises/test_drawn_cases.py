"""The grader's drawn cases of exercises 1, 3, 4, 5 and 6 grade as check()'s cases do.

The grader runs each code question on cases drawn from the instructor's seed (`Exercise.drawn`);
test_hidden_cases.py checks that the solution notebook earns full marks on them. Here, on the cases
drawn from several seeds: answers a learner gets wrong in a known way (the slips the other tests
grade on check()'s cases, and off-by-one slips in the bucket function) still lose credit, and right
answers written another way (the bucket in float32, with torch or NumPy) keep full marks, so no drawn
offset sits where float32 and float64 disagree.
"""
from __future__ import annotations

import math
from functools import cache, partial

import numpy as np
import pytest
import torch
from test_exercises_01_02 import good_entropy, good_scores

import t5lesson as t5
from t5lesson import exercises
from t5lesson.buckets import bucket_config
from t5lesson.grading import harvest
from t5lesson.grading.verdict import CORRECT

SEEDS = ("week 3", "resit", "42")


@cache
def drawn(exercise_id: str, question_id: str, seed: str):
    return exercises.get(exercise_id).drawn(seed)[question_id]


def score(question, function):
    """`function` graded on `question`'s cases as the grader does: harvested to plain data, then scored."""
    with np.errstate(all="ignore"):
        return question.score(harvest.collect(question.harvest_spec(), {question.name: function}))


def assert_loses_credit(question, function, name, raises=False):
    """The wrong answer `function` earns less than full marks, by wrong results (unless it `raises`)."""
    outcome = score(question, function)
    assert outcome.points < question.points, (name, outcome.line())
    assert raises or " raised " not in outcome.message, (name, outcome.line())


# --- exercise 1 ----------------------------------------------------------------------------------

WRONG_ENTROPY = {
    "0 log 0 computed (nan)": lambda w: float(-(np.asarray(w) * np.log(np.asarray(w))).sum()),
    "log base 2": lambda w: good_entropy(w) / math.log(2),
    "a list of one": lambda w: [good_entropy(w)],
    "the sign left out": lambda w: -good_entropy(w),
}
WRONG_SCORES = {
    "divided by sqrt(d)": lambda q, k, b, m: good_scores(q, k, b, m) / math.sqrt(len(q[0])),
    "transposed": lambda q, k, b, m: good_scores(q, k, b, m).T,
    "no bias": lambda q, k, b, m: good_scores(q, k, np.zeros_like(np.asarray(b, dtype=float)), m),
    "bias subtracted": lambda q, k, b, m: good_scores(q, k, -np.asarray(b, dtype=float), m),
    "masked at -100": lambda q, k, b, m: np.where(np.asarray(m) == 1, good_scores(q, k, b, m), -100.0),
}


@pytest.mark.parametrize("seed", SEEDS)
def test_exercise_1_right_answers_get_full_marks_on_drawn_cases(seed):
    assert score(drawn("01_unscaled_scores", "q7", seed), good_entropy).status == CORRECT
    assert score(drawn("01_unscaled_scores", "q9", seed), good_scores).status == CORRECT


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("question_id, name, function", [("q7", n, f) for n, f in WRONG_ENTROPY.items()]
                         + [("q9", n, f) for n, f in WRONG_SCORES.items()])
def test_exercise_1_mistakes_lose_credit_on_drawn_cases(question_id, name, function, seed):
    assert_loses_credit(drawn("01_unscaled_scores", question_id, seed), function, name)


def test_sqrt_d_scaling_is_right_only_where_d_is_1():
    """Every drawn score case but the one with d = 1 tells the scaled score from T5's."""
    for seed in SEEDS:
        outcome = score(drawn("01_unscaled_scores", "q9", seed), WRONG_SCORES["divided by sqrt(d)"])
        assert outcome.message.startswith("1 of 7 cases right."), outcome.line()


# --- exercise 3 ----------------------------------------------------------------------------------

def bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128, *, log=math.log,
           halve_first=True, clamp=-1, width=0, truncate=int, sign=1, causal_abs=False):
    """The solution's bucket function; each keyword changes one step the way a learner slips."""
    per_direction, offset = num_buckets, 0
    max_exact = num_buckets // 2
    if bidirectional:
        per_direction //= 2
        if sign * relative_position > 0:
            offset = per_direction
        n = abs(relative_position)
    else:
        n = abs(relative_position) if causal_abs else max(-relative_position, 0)
    if halve_first:
        max_exact = per_direction // 2
    if n < max_exact:
        return offset + n
    spread = float(log(n / max_exact) / log(max_distance / max_exact))
    last = per_direction + clamp
    return offset + min(max_exact + truncate(spread * (per_direction - max_exact + width)), last)


def float32_log(x):
    return np.log(np.float32(x))


def torch_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """The bucket as transformers computes it: float32 torch tensors."""
    rel = torch.tensor([relative_position])
    out = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        out += (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = -torch.clamp(rel, max=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return int((out + torch.where(n < max_exact, n, large))[0])


def batched(one):
    """Question 7 takes one offset or a nested list of them: `one` applied entry by entry."""
    def many(relative_position, *args, **kwargs):
        if isinstance(relative_position, (list, tuple)):
            return [many(r, *args, **kwargs) for r in relative_position]
        return one(relative_position, *args, **kwargs)
    return many


RIGHT_BUCKETS = {
    "float64 (math.log)": batched(bucket),
    "float32 (NumPy)": batched(partial(bucket, log=float32_log)),
    "float32 (torch)": batched(torch_bucket),
}
WRONG_BUCKETS = {
    "no clamp": {"clamp": 10 ** 6},
    "clamped one bucket too high": {"clamp": 0},
    "max_exact before halving": {"halve_first": False},
    "rounded, not truncated": {"truncate": round},
    "one bucket too few in the log range": {"width": -1},
    "halves swapped": {"sign": -1},
    "a decoder's future keys by their distance": {"causal_abs": True},
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", RIGHT_BUCKETS)
def test_the_bucket_in_float32_or_float64_gets_full_marks_on_drawn_cases(name, seed):
    """No drawn offset lies where the float32 log and the float64 one truncate differently."""
    question = drawn("03_relative_position_buckets", "q7", seed)
    assert score(question, RIGHT_BUCKETS[name]).status == CORRECT


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", WRONG_BUCKETS)
def test_bucket_slips_lose_credit_on_drawn_cases(name, seed):
    question = drawn("03_relative_position_buckets", "q7", seed)
    assert_loses_credit(question, batched(partial(bucket, **WRONG_BUCKETS[name])), name)


def config_of(kwargs) -> tuple[bool, int, int]:
    """(bidirectional, num_buckets, max_distance) of a case's keyword arguments, T5's defaults filled in."""
    given = dict(kwargs)
    return given.get("bidirectional", True), given.get("num_buckets", 32), given.get("max_distance", 128)


REGION_WORDS = {"exact": "the exact range", "log": "the logarithmic range", "inside": "the logarithmic range",
                "beyond": "beyond max_distance"}


def region_of(rel: int, config) -> str:
    """The slot (side, region) an offset of `config` fills: side 0 is offset 0; "log" is the logarithmic
    range (a slot's "inside" too)."""
    _, max_exact = bucket_config(*config)
    n = abs(rel)
    region = "exact" if n < max_exact else "beyond" if n >= config[2] else "log"
    return (int(np.sign(rel)), "exact" if rel == 0 else region)


def slot_of(side: int, region: str) -> tuple[int, str]:
    return (side, "log" if region == "inside" else region)


def offsets_in(value) -> list[int]:
    return [value] if isinstance(value, int) else [o for row in value for o in offsets_in(row)]


def test_drawn_offsets_keep_their_slots_and_avoid_ties():
    """Per configuration family: one single offset that fills one of its slots, then five arrays of offsets
    that each fill every slot (and two more in the exact range; every other one padded to a multiple of six
    with more exact ones); no offset is a near-tie of its table."""
    from collections import Counter

    from t5lesson.exercises.ex03_relative_position_buckets import _ARRAYS_PER_FAMILY, _HIDDEN_FAMILIES, _near_tie

    public = exercises.get("03_relative_position_buckets")["q7"].cases
    size = 1 + _ARRAYS_PER_FAMILY
    for seed in SEEDS:
        cases = drawn("03_relative_position_buckets", "q7", seed).cases
        assert len(cases) == size * len(_HIDDEN_FAMILIES)
        assert sum(isinstance(c.args[0], int) for c in cases) == len(_HIDDEN_FAMILIES)
        for family, (_, slots) in enumerate(_HIDDEN_FAMILIES):
            block = cases[size * family:size * (family + 1)]
            config = config_of(block[0].kwargs)
            assert all(config_of(c.kwargs) == config for c in block), (seed, block)
            wanted = Counter(slot_of(*slot) for slot in slots) + Counter([(1, "exact"), (-1, "exact")])
            rel = block[0].args[0]
            assert isinstance(rel, int) and region_of(rel, config) in wanted, (seed, block[0])
            future_in_decoder = rel > 0 and not config[0]  # all of them share bucket 0
            region = region_of(rel, config)[1]
            assert future_in_decoder or rel == 0 or block[0].topic.endswith(REGION_WORDS[region]), (seed, block[0])
            for k, case in enumerate(block[1:]):
                got = Counter(region_of(rel, config) for rel in offsets_in(case.args[0]))
                extra = got - wanted
                assert not wanted - got and set(extra) <= {(1, "exact"), (-1, "exact")}, (seed, case)
                assert not k % 2 or sum(got.values()) % 6 == 0, (seed, case)
            for case in block:
                assert not [o for o in offsets_in(case.args[0]) if _near_tie(abs(o), *config)], (seed, case)
        assert sum(c in public for c in cases) <= len(public) // 4


def ranges(bidirectional=True, num_buckets=32, max_distance=128, *, function=t5.relative_position_bucket,
           open_ends=True, unused=True):
    """The solution's boundary table (scan -max_distance..max_distance); keywords make the slips."""
    offsets = np.arange(-max_distance, max_distance + 1)
    buckets = np.array([function(int(o), bidirectional, num_buckets, max_distance) for o in offsets])
    table = [None] * num_buckets
    for b in np.unique(buckets):
        covered = offsets[buckets == b]
        lo, hi = int(covered.min()), int(covered.max())
        if open_ends:
            lo, hi = (None if lo == -max_distance else lo), (None if hi == max_distance else hi)
        table[int(b)] = (lo, hi)
    return table if unused else [r for r in table if r is not None]


def encoder_only(bidirectional=True, num_buckets=32, max_distance=128):
    if not bidirectional:
        raise ValueError("decoder not done yet")
    return ranges(True, num_buckets, max_distance)


@pytest.mark.parametrize("seed", SEEDS)
def test_bucket_tables_on_drawn_cases(seed):
    question = drawn("03_relative_position_buckets", "q8", seed)
    assert score(question, ranges).status == CORRECT
    assert score(question, partial(ranges, function=torch_bucket)).status == CORRECT  # no tie
    assert_loses_credit(question, partial(ranges, open_ends=False), "numbers at the open ends")
    assert_loses_credit(question, partial(ranges, unused=False), "unused buckets left out")
    assert_loses_credit(question, encoder_only, "encoder tables only", raises=True)


def test_drawn_tables_are_of_their_kind():
    """Each drawn table keeps its public counterpart's kind, is written as check()'s are, and (T5's own two
    aside) has no near-tie at any distance and no more offsets to scan than check()'s longest."""
    from t5lesson.exercises.ex03_relative_position_buckets import _CONFIGS, _near_tie

    for seed in SEEDS:
        cases = drawn("03_relative_position_buckets", "q8", seed).cases
        for case, (public, topic) in zip(cases, _CONFIGS, strict=True):
            bidirectional, num_buckets, max_distance = config = config_of(case.kwargs)
            assert case.topic == topic and (case.kwargs == public) == ("T5's default" in topic)
            always_unused = (1 + num_buckets % 2) if bidirectional else 0  # offset 0 of the upper half; odd: the last
            assert not bidirectional or num_buckets % 2 == ("odd" in topic)
            skips = len(t5.bucket_ranges(*config).unused) > always_unused
            assert skips >= (topic in ("max_distance small for the number of buckets", "a decoder table that skips "
                                                                                     "buckets")), (seed, case)
            assert "T5's default" in topic or not any(_near_tie(n, *config) for n in range(max_distance))
            assert max_distance <= 1000


# --- exercise 4 ----------------------------------------------------------------------------------

def my_step_biases(table, prompt_len, new_tokens, max_distance=128, *, sign=1, cache_used=True, causal=True,
                   heads_first=True, prompt_call=True):
    """The solution's bias of every call of decoding with a cache; each keyword changes one step the way a
    learner slips."""
    table = np.asarray(table, dtype=float)
    calls = [(prompt_len, prompt_len, 0)] if prompt_call else []
    calls += [(1, prompt_len + t, prompt_len + t - 1) for t in range(1, new_tokens + 1)]
    biases = []
    for q_len, k_len, query_offset in calls:
        queries = (query_offset if cache_used else 0) + np.arange(q_len)
        offsets = sign * (np.arange(k_len)[None, :] - queries[:, None])
        buckets = t5.relative_position_bucket(offsets, not causal, table.shape[0], max_distance)
        biases.append(table[buckets].transpose(2, 0, 1) if heads_first else table[buckets])
    return biases


def my_mask(q_len, k_len, query_offset=0, *, offset_used=True, strict=False):
    queries = (query_offset if offset_used else 0) + np.arange(q_len)
    keys = np.arange(k_len)[None, :]
    return keys < queries[:, None] if strict else keys <= queries[:, None]


WRONG_STEPS = {"the cache forgotten (each new token at position 0)": {"cache_used": False},
               "offset i - j": {"sign": -1}, "decoder bucketed as an encoder": {"causal": False},
               "heads last": {"heads_first": False}, "the prompt's call left out": {"prompt_call": False}}


@pytest.mark.parametrize("seed", SEEDS)
def test_exercise_4_on_drawn_cases(seed):
    bias, mask = drawn("04_bias_heatmaps", "q5", seed), drawn("04_bias_heatmaps", "q6", seed)
    assert score(bias, my_step_biases).status == CORRECT and score(mask, my_mask).status == CORRECT
    for name, flags in WRONG_STEPS.items():
        assert_loses_credit(bias, partial(my_step_biases, **flags), name)
    for name, flags in {"query_offset ignored": {"offset_used": False}, "the diagonal masked": {"strict": True}
                        }.items():
        assert_loses_credit(mask, partial(my_mask, **flags), name)


# --- exercise 5 ----------------------------------------------------------------------------------

def clipped(table, length, clip, *, future=0.0, back=1, clip_used=True, shift=0):
    table = np.asarray(table, dtype=float)
    d = back * (np.arange(length)[:, None] - np.arange(length)[None, :])
    top = clip + shift if clip_used else len(table) - 1
    values = table[np.clip(d, 0, max(top, 0))]
    return values if future is None else np.where(d >= 0, values, future)


@pytest.mark.parametrize("seed", SEEDS)
def test_exercise_5_on_drawn_cases(seed):
    question = drawn("05_length_generalisation", "q5", seed)
    assert score(question, clipped).status == CORRECT
    for name, flags in {"future keys get table[0]": {"future": None}, "offset j - i": {"back": -1},
                        "clip ignored": {"clip_used": False}, "clipped one too early": {"shift": -1}}.items():
        assert_loses_credit(question, partial(clipped, **flags), name)


# --- exercise 6 ----------------------------------------------------------------------------------
# Its variants, classic mistakes and diagnosis on drawn cases are in test_module_code.py and
# test_module_variants.py (seeds there). Here: what the draw checks on large-logit cases alone holds
# for the drawn cases of every kind.

@pytest.mark.parametrize("seed", SEEDS)
def test_every_drawn_layer_case_is_clear_cut(seed):
    """No drawn case of exercise 6 leaves a verdict on a hair: float32 drift stays under a quarter of the
    tolerance and no classic mistake comes within a hair of the right result, on every kind of case
    (the draw itself checks this only where logits are large, see t5_layer_cases._well_posed)."""
    from t5lesson.exercises import t5_layer_cases as layer_cases

    cases = drawn("06_t5_layer", "q4", seed).cases
    assert not [n for n, case in enumerate(cases, 1)
                if case.kwargs[0][1] != "init" and not layer_cases.clear_cut(dict(case.kwargs))]
    for case in cases[1:]:
        score = layer_cases.largest_score(dict(case.kwargs))
        if "large logits" in case.topic:
            assert score >= layer_cases.LARGE_LOGITS
        else:
            assert score <= layer_cases.ORDINARY_LOGITS
