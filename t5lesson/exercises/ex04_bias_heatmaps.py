"""Exercise 04: the bias tensor from a table, the causal mask, the cache, and who owns the table.

Notebook: solutions/04_bias_heatmaps.ipynb (source), exercises/04_bias_heatmaps.ipynb (generated).
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); recompute one with
`t5grade hash QUESTION ANSWER --exercise ID`. tests/exercises/test_exercises_03_04.py checks the
numeric keys against the package.

The two code questions return arrays, so they use `PlainCode` (plain_code.py; question 5 its
`ShownCode` form, which shows the first wrong entry beside the expected one). Their inputs arrive
as plain lists (the grader passes JSON data): the bias table is a nested list [num_buckets][heads].
Results must stay under 1000 entries to be harvested, so the cases are small.

Question 5 (`my_step_biases`) goes one step beyond lesson 4's `bias_from_table`: the bias of every
call of decoding with a cache (the prompt, then one new token per call), so lesson 4's answer pasted
in earns nothing (tests/exercises/test_pasting_lessons.py). Its drawn cases keep each kind's table
size and change its values, lengths and max_distance, never next to a float32/float64 tie.
"""
from __future__ import annotations

import numpy as np

from ..bias import relative_bias
from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.structured import PlainCode
from . import Exercise, id_of_module
from .shown_code import ShownCode

__all__ = ["EXERCISE", "reference_bias_lists", "reference_step_biases"]


def reference_bias_lists(table, q_len, k_len, bidirectional=True, max_distance=128, query_offset=0):
    """relative_bias on a table given as nested lists: [heads, q_len, k_len]."""
    return relative_bias(np.asarray(table, dtype=np.float64), q_len, k_len, bidirectional=bidirectional,
                         max_distance=max_distance, query_offset=query_offset)


def _table(num_buckets, heads, seed):
    """A bias table [num_buckets, heads] of rounded normal values; `seed` an int or a Generator."""
    values = np.round(np.random.default_rng(seed).normal(size=(num_buckets, heads)), 2)
    return tuple(tuple(float(v) for v in row) for row in values)


def reference_step_biases(table, prompt_len, new_tokens, max_distance=128):
    """Question 5's answer: the decoder's bias at each call of generation with a cache, as nested lists.

    Call 0 reads the prompt's prompt_len tokens at once: [heads, prompt_len, prompt_len]. Call t
    (1..new_tokens) reads one new token, at position prompt_len + t - 1, against every token so far:
    [heads, 1, prompt_len + t], the last row of the full bias at that length.
    """
    table = np.asarray(table, dtype=np.float64)
    calls = [(prompt_len, prompt_len, 0)] + [(1, prompt_len + t, prompt_len + t - 1) for t in range(1, new_tokens + 1)]
    return [relative_bias(table, q_len, k_len, bidirectional=False, max_distance=max_distance,
                          query_offset=offset).tolist() for q_len, k_len, offset in calls]


# Question 5's kinds of case: (number of buckets, heads, prompt_len, new_tokens, max_distance, topic).
# Small causal tables, so that the logarithmic range and the clamp are reached within a few tokens.
_STEP_KINDS = (
    (32, 2, 4, 3, 128, "T5's decoder table, a prompt of 4 and 3 new tokens"),
    (8, 2, 1, 6, 6, "a one-token prompt, then 6 steps past the clamp"),
    (9, 2, 5, 4, 7, "an odd number of buckets"),
    (12, 3, 3, 5, 9, "three heads, the logarithmic range"),
    (6, 1, 7, 0, 5, "a prompt and no new token"),
    (32, 2, 1, 1, 128, "one step after a one-token prompt"),
    (10, 2, 2, 7, 6, "many steps after a short prompt"),
    (7, 1, 6, 3, 30, "a long prompt, a small odd table"),
)


def _tie_free(num_buckets: int, max_distance: int, length: int) -> bool:
    """No distance below `length` sits near a float32/float64 tie of the causal log formula."""
    from .ex03_relative_position_buckets import _near_tie

    return not any(_near_tie(n, False, num_buckets, max_distance) for n in range(length))


def _step_cases(rng=None) -> tuple[Case, ...]:
    """q5's cases: the public ones from `_STEP_KINDS` with tables from fixed seeds; the grading ones
    (`hidden`) with tables, lengths and max_distance drawn from `rng` around each kind's."""
    cases = []
    for k, (num_buckets, heads, prompt_len, new_tokens, max_distance, topic) in enumerate(_STEP_KINDS):
        if rng is not None and num_buckets != 32:
            for _ in range(100):
                max_distance_drawn = max(num_buckets // 2 + 1, max_distance + int(rng.integers(-1, 3)))
                prompt_drawn = max(1, prompt_len + int(rng.integers(-1, 2)))
                new_drawn = new_tokens if new_tokens == 0 else max(1, new_tokens + int(rng.integers(-1, 2)))
                if _tie_free(num_buckets, max_distance_drawn, prompt_drawn + new_drawn):
                    max_distance, prompt_len, new_tokens = max_distance_drawn, prompt_drawn, new_drawn
                    break
        table = _table(num_buckets, heads, k if rng is None else rng)
        kwargs = () if max_distance == 128 else (("max_distance", max_distance),)
        cases.append(Case((table, prompt_len, new_tokens), kwargs, topic))
    return tuple(cases)


def _square(rng) -> tuple:
    n = int(rng.integers(3, 9))
    return (n, n), ()


def _fewer_queries(rng) -> tuple:
    q_len = int(rng.integers(1, 5))
    return (q_len, q_len + int(rng.integers(2, 6))), ()


def _more_queries(rng) -> tuple:
    k_len = int(rng.integers(2, 5))  # with one key every query would see all of them
    return (k_len + int(rng.integers(2, 5)), k_len), ()


def _after_cache(new: int | None, cached: range):
    """`new` queries after a cache of a length drawn from `cached` (new=None: that too is drawn)."""
    def draw(rng) -> tuple:
        q_len = new or int(rng.integers(2, 6))
        past = int(rng.choice(cached))
        return (q_len, past + q_len), (("query_offset", past),)
    return draw


def _square_offset_zero(rng) -> tuple:
    n = int(rng.integers(3, 9))
    return (n, n), (("query_offset", 0),)


def _keys_beyond(rng) -> tuple:
    """New queries after a cache, and keys after the last query too."""
    q_len, past = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    return (q_len, past + q_len + int(rng.integers(1, 5))), (("query_offset", past),)


# Question 6's cases: (check()'s arguments, its keyword arguments, its topic, how a drawn case of that kind
# is made, and the drawn case's topic where check()'s names sizes that a drawn case changes). None: the case
# is all there is.
_MASK_KINDS = (
    ((4, 4), (), "a square mask", _square, ""),
    ((1, 1), (), "one query, one key", None, ""),
    ((1, 5), (("query_offset", 4),), "one new query, 4 cached", _after_cache(1, range(1, 13)),
     "one new query after the cache"),
    ((3, 7), (("query_offset", 4),), "three new queries, 4 cached", _after_cache(3, range(1, 6)),
     "three new queries after a short cache"),
    ((2, 6), (), "more keys than queries, no cache", _fewer_queries, ""),
    ((6, 3), (), "more queries than keys", _more_queries, ""),
    ((3, 10), (("query_offset", 7),), "three new queries, 7 cached", _after_cache(3, range(6, 13)),
     "three new queries after a longer cache"),
    ((2, 2), (), "two queries, two keys", None, ""),
    ((5, 5), (("query_offset", 0),), "a square mask, query_offset given as 0", _square_offset_zero, ""),
    ((2, 8), (("query_offset", 3),), "two new queries, 3 cached, keys beyond them", _keys_beyond,
     "new queries after the cache, keys beyond them"),
    ((4, 9), (("query_offset", 5),), "four new queries, 5 cached", _after_cache(None, range(2, 10)),
     "several new queries after the cache"),
)


def _mask_cases() -> tuple[Case, ...]:
    return tuple(Case(args, kwargs, topic) for args, kwargs, topic, _, _ in _MASK_KINDS)


def hidden_mask_cases(rng) -> tuple[Case, ...]:
    """Question 6's grading cases: a case of every kind of `_MASK_KINDS` drawn from `rng`, none of check()'s
    (save the two that are all there is: one query and one key, two and two)."""
    cases = []
    for args, kwargs, topic, draw, drawn_topic in _MASK_KINDS:
        drawn = (args, kwargs) if draw is None else draw(rng)
        while draw is not None and drawn == (args, kwargs):
            drawn = draw(rng)
        cases.append(Case(drawn[0], drawn[1], drawn_topic or topic))
    return tuple(cases)


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 4: bias heatmaps, masks and the cache",
    questions=(
        MultipleChoice(
            id="q1", points=1, objectives=(5, 7), name="answer_q1",
            options="ABCDE", key="e8f4509f9a3f69719c5d96c8",
            hints=(
                "compute the decoder's bucket of a positive offset.",
                "then ask what happens to that pair before the softmax.",
            ),
            feedback={
                "f47f19f86756e69f84a97c77": "every offset has a bucket, future ones included: compute it.",
                "adc2e3c7bd71d77f385a673e": "the table holds ordinary learned numbers; the huge negative number "
                                            "comes from somewhere else.",
                "9d37cfdb1070c1ee8d8d5981": "compute the decoder's bucket of a positive offset: it is not "
                                            "the last one.",
                "b9a54d35ab4575e962b02375": "the bucket is computed from j - i itself, not from its opposite.",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(5, 7), name="answer_q2",
            key="d3bb12fb4c24cdd9082239e9",
            hints=(
                "the new query does not sit at position 0: where does it sit when 20 tokens are cached?",
                "compute the offset key - query, then the decoder's bucket of it.",
            ),
            feedback={
                "c3fc1b33bd2e85a639c29884": "you placed the new query at position 0, so the key looked like a "
                                            "future key; with 20 tokens cached the query is further right.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(7,), name="answer_q3",
            key="55b808ae39fa9b68ac384c64",
            hints=(
                "a table has one number per bucket and per head.",
                "how many tables does T5 have: one per layer, one per stack, or one in all?",
            ),
            feedback={
                "6e36f126396a867e69dab354": "the decoder has a table of its own too.",
                "f04bf35839bc0c87476eb858": "one table per layer is UMT5; T5 shares one table across the "
                                            "layers of a stack.",
                "e53e6d8c0f7b42579ac53a40": "one table per layer of one stack is not how T5 shares its table.",
            },
        ),
        MultipleChoice(
            id="q4", points=2, objectives=(7,), name="answer_q4",
            options="ABCDE", multiple=True, key="5478106943c991f48d538806",
            hints=(
                "for each statement, ask which stack it is about, and which of its layers creates a table.",
                "look at has_relative_attention_bias in transformers' T5Stack, T5LayerCrossAttention "
                "and UMT5LayerSelfAttention (lesson 4, section 6).",
            ),
            feedback={
                "55180286efa0c9758727acfb": "not complete: which model differs from T5?",
                "c6189d0c73a68132be9a1aa5": "later decoder layers reuse the bias of decoder layer 0.",
                "51b4a8836ee8c9a7827f3b12": "cross-attention has no relative-position bias at all.",
            },
        ),
        ShownCode(
            id="q5", points=4, objectives=(5, 7), name="my_step_biases",
            reference="t5lesson.exercises.ex04_bias_heatmaps:reference_step_biases",
            cases=_step_cases(), hidden=f"{__name__}:_step_cases", case_timeout=2.0, tolerance=1e-9,
            blocked=("t5lesson.bias:relative_bias", "t5lesson.bias:_toeplitz_numpy", "t5lesson.bias:_toeplitz_torch",
                     "t5lesson.layer:RelativePositionBias.forward", "t5lesson.reference:reference_bias",
                     "t5lesson.exercises.ex04_bias_heatmaps:reference_bias_lists",
                     "t5lesson.exercises.ex04_bias_heatmaps:reference_step_biases",
                     "t5lesson.lessons.toy_heads:bias_from_table",
                     "t5lesson.lessons.position_figures:bias_by_offset", "transformers:",
                     "t5lesson.flex:offset_buckets", "t5lesson.flex:per_offset_bias", "t5lesson.flex:dense_bias",
                     "t5lesson.flex:FlexT5SelfAttention.per_offset_bias"),
            hints=(
                "at each call, which tokens are queries, and at which positions do they sit? Which keys can "
                "they see, the cached ones included?",
                "the first call is the prompt against itself, as in lesson 4 without a cache. Each later call "
                "has one query, the newest token, whose position is the number of tokens before it, and its "
                "keys are every token so far: the last row of the full bias at that length. The decoder's "
                "buckets are causal.",
                "table = np.asarray(table); compute the full causal bias once for all prompt_len + new_tokens "
                "positions, full = table[buckets].transpose(2, 0, 1) as in lesson 4; return "
                "[full[:, :prompt_len, :prompt_len]] + [full[:, k - 1:k, :k] for k in range(prompt_len + 1, "
                "prompt_len + new_tokens + 1)].",
            ),
        ),
        PlainCode(
            id="q6", points=2, objectives=(7,), name="my_causal_mask",
            reference="t5lesson.scores:causal_mask", cases=_mask_cases(), hidden=f"{__name__}:hidden_mask_cases",
            case_timeout=1.0,
            blocked=("t5lesson.scores:causal_mask",),
            hints=(
                "True where key j is not after query i.",
                "query i sits at position query_offset + i; key j at position j.",
            ),
        ),
        FreeText(
            id="q7", points=2, objectives=(7,), name="q7-answer",
            rubric=(
                ("the bias depends on the two positions only through j - i, so every diagonal holds one value "
                 "(a Toeplitz matrix)", 0.5),
                ("a q_len x k_len matrix has only q_len + k_len - 1 distinct offsets, so the bucket (and its "
                 "logarithm) is computed once per offset, not once per pair, with the count for an example size", 1),
                ("the values are laid out along the diagonals (a sliding window) and equal the per-pair "
                 "computation; q_len x k_len values per head are still written when the bias tensor is "
                 "materialised, as transformers does", 0.5),
            ),
            checklist=(
                "Does it say what the bias of a pair depends on, and what that makes of every diagonal of the "
                "matrix?",
                "Does it count how many different offsets a matrix of queries by keys holds, for an example "
                "size, and say which work that count saves?",
                "Does it say how the values end up in the matrix, whether they differ from computing each pair "
                "on its own, and what the cheaper way still costs?",
            ),
        ),
    ),
)
