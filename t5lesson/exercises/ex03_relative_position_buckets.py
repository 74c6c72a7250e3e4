"""Exercise 03 (lesson 3): buckets by hand, the bucket function and `bucket_ranges` from scratch.

Notebook: solutions/03_relative_position_buckets.ipynb (source), exercises/03_... (generated).
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); recompute one with
`t5grade hash QUESTION ANSWER --exercise ID`. tests/exercises/test_exercises_03_04.py checks every
key against the package, so a key cannot silently drift from what lesson 3 computes.

Question 7 (`my_bucket`, the bucket function for many offsets at once) goes one step beyond
lesson 3's `bucket_of`: it takes one offset or an array of offsets of any shape, and the learner
writes step 1 (the halves) too. A third of its 24 cases are single offsets, so lesson 3's answer
pasted in earns at most a third (tests/exercises/test_pasting_lessons.py); the rest are rows of
every bucket boundary of the default tables, layers' offset matrices with and without a cache,
and batches, in five configurations. They avoid the few configurations where a float64 logarithm
and the reference's float32 one put a boundary offset in different buckets (for example
num_buckets=18, max_distance=128 at offsets 8, 16 and 64), so a learner who writes the formula
right gets full marks in float32 or float64. The grader draws its own configurations and offsets
(`hidden_cases`: per family one single offset and five arrays that each hold every region on both
sides, so a slip anywhere costs every array), none within `_TIE_MARGIN` of a whole number in the log
formula (`_near_tie`). `ShownCode` shows the first wrong entry beside the expected one.

Question 8 returns a table, not one int, so it uses `PlainCode`. Its cases are configurations
chosen to cover: the default encoder and decoder, an odd number of
buckets (two unused), skipped buckets (max_distance small for the number of buckets), offsets
far beyond max_distance, and the smallest legal tables. The grader draws a table of each kind
(`hidden_range_cases`; T5's own two are T5's), none with a near-tie at any distance and none
longer to scan than check()'s longest.
"""
from __future__ import annotations

import math

import numpy as np

from ..buckets import bucket_config, bucket_ranges, relative_position_bucket
from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.structured import PlainCode
from . import Exercise, id_of_module
from .shown_code import ShownCode

__all__ = ["EXERCISE", "reference_ranges", "reference_buckets"]


def reference_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Question 7's answer: the bucket of one offset (an int), or of every offset of a nested list
    (nested lists of the same shape)."""
    buckets = np.asarray(relative_position_bucket(np.asarray(relative_position), bidirectional, num_buckets,
                                                  max_distance))
    return int(buckets) if np.ndim(buckets) == 0 else buckets.tolist()


def reference_ranges(bidirectional=True, num_buckets=32, max_distance=128):
    """The boundary table as the question asks for it: per bucket None (unused) or (lo, hi)."""
    table = bucket_ranges(bidirectional, num_buckets, max_distance)
    return [None if (r := table[b]) is None else (r.lo, r.hi) for b in range(num_buckets)]


_DEFAULT = (True, 32, 128)


def _topic(rel: int, bidirectional: bool, num_buckets: int, max_distance: int) -> str:
    """What a case exercises, in words a learner can act on (it never states the answer)."""
    _, max_exact = bucket_config(bidirectional, num_buckets, max_distance)
    if not bidirectional and rel > 0:
        return "a future key in a causal table"
    n = abs(rel) if bidirectional else -rel
    side = "a key after the query" if rel > 0 else "a key before the query" if rel < 0 else "offset 0"
    if n < max_exact:
        region = "the exact range"
    elif n >= max_distance:
        region = "beyond max_distance"
    else:
        region = "the logarithmic range"
    return f"{side}, {region}"


def _offsets_of(q_len: int, k_len: int, query_offset: int = 0) -> tuple:
    """The [q_len, k_len] matrix of offsets key - query of a layer, as nested tuples (a case's argument)."""
    return tuple(tuple(j - (query_offset + i) for j in range(k_len)) for i in range(q_len))


_ENCODER = [0, 1, 2, 7, 8, 11, 12, 15, 16, 22, 23, 31, 32, 45, 46, 63, 64, 90, 91, 127, 128, 129, 500, 10_000]

# Question 7's cases: (offsets, configuration, topic). One offset (an int) is what lesson 3's bucket_of
# already does: those cases are a third of the points. The rest pass many offsets at once, as the
# layer needs them: a row of boundaries, a [q_len, k_len] matrix, a batch of matrices.
_Q7 = (
    (0, _DEFAULT, "one offset: offset 0"),
    (-20, _DEFAULT, "one offset: a key before the query, the logarithmic range"),
    (-500, _DEFAULT, "one offset: beyond max_distance"),
    (7, _DEFAULT, "one offset: a key after the query, the exact range"),
    (5, (False, 32, 128), "one offset: a future key in a causal table"),
    (-113, (False, 32, 128), "one offset: the decoder's last bucket"),
    (-9, (True, 8, 20), "one offset: a small encoder table"),
    (100, (True, 33, 128), "one offset: an odd number of buckets"),
    (tuple(-n for n in _ENCODER), _DEFAULT, "a row of the encoder's boundaries, keys before the query"),
    (tuple(_ENCODER), _DEFAULT, "a row of the encoder's boundaries, keys after the query"),
    (_offsets_of(6, 6), _DEFAULT, "the [6, 6] offsets of an encoder layer"),
    ((5, 1, 0, -1, -15, -16, -18, -19, -20, -21, -112, -113, -128, -1000), (False, 32, 128),
     "a row of the decoder's boundaries"),
    (_offsets_of(5, 5), (False, 32, 128), "the [5, 5] offsets of a decoder layer"),
    (_offsets_of(2, 14, 12), (False, 16, 32), "two new queries after 12 cached tokens, a decoder"),
    ((-1, -2, -3, -4, -5, -9, -10, -19, -20, -21, 2, 3, 4, 20, 21), (True, 8, 20), "a row, a small encoder table"),
    ((3, 0, -7, -8, -9, -31, -32, -33, -100), (False, 16, 32), "a row, a small decoder table"),
    ((-8, 8, -100, 100, -15, 15), (True, 33, 128), "a row, an odd number of buckets"),
    (((-1, 2), (-30, 30), (-200, 200)), (True, 8, 20), "a [3, 2] batch, a small encoder table"),
    ((-500,), _DEFAULT, "a row of one offset"),
    ((((0, -1), (-2, -3)), ((4, -40), (-60, 90))), _DEFAULT, "a [2, 2, 2] batch of offsets"),
    (_offsets_of(3, 9, 2), (True, 12, 24), "three queries after 2 cached tokens, keys on both sides"),
    (_offsets_of(4, 3), (False, 10, 12), "more queries than keys, a decoder"),
    (tuple(range(-40, 1)), (False, 9, 25), "every offset from -40 to 0, an odd decoder table"),
    (_offsets_of(1, 8, 7), (True, 32, 128), "one new query after 7 cached tokens"),
)


def _cases() -> tuple[Case, ...]:
    return tuple(Case((rel,), _kwargs(*config), topic) for rel, config, topic in _Q7)


def _kwargs(bidirectional: bool, num_buckets: int, max_distance: int) -> tuple:
    """A configuration as a case passes it: nothing for the default, only what differs from it."""
    if (bidirectional, num_buckets, max_distance) == _DEFAULT:
        return ()
    if num_buckets == 32 and max_distance == 128:
        return (("bidirectional", bidirectional),)
    return (("bidirectional", bidirectional), ("num_buckets", num_buckets), ("max_distance", max_distance))


def _float64_bucket(n: int, per_direction: int, max_exact: int, max_distance: int) -> int:
    """The bucket of n >= max_exact in float64, as a learner's math.log gives it."""
    spread = math.log(n / max_exact) / math.log(max_distance / max_exact) * (per_direction - max_exact)
    return min(max_exact + int(spread), per_direction - 1)


# The reference's float32 log and a learner's float32 or float64 one agree on the bucket of a distance
# unless the log formula's real value sits at (or within rounding of) a whole number: there the
# truncation may go either way. Drawn offsets and tables keep well away from such values.
_TIE_MARGIN = 1e-4  # far above float32's rounding of the formula (a few 1e-7 relative), far below a bucket


def _near_tie(n: int, bidirectional: bool, num_buckets: int, max_distance: int) -> bool:
    """Whether distance n's bucket could differ between float32 and float64 (exact ties included)."""
    per_direction, max_exact = bucket_config(bidirectional, num_buckets, max_distance)
    if not max_exact < n < max_distance:
        return False  # the exact range and the clamp involve no rounding
    width = per_direction - max_exact
    real = math.log(n / max_exact) / math.log(max_distance / max_exact) * width
    k = round(real)
    return 1 <= k <= width - 1 and abs(real - k) < _TIE_MARGIN  # at k >= width the clamp decides either way


def _safe(n: int, config) -> bool:
    """n's bucket is the same in float32 (the reference) and float64, with room to spare (`_near_tie`)."""
    bidirectional, num_buckets, max_distance = config
    per_direction, max_exact = bucket_config(*config)
    if n < max_exact or n >= max_distance:
        return True
    if _near_tie(n, *config):
        return False
    want = relative_position_bucket(-n, bidirectional, num_buckets, max_distance)  # a key before the query
    return int(want) == _float64_bucket(n, per_direction, max_exact, max_distance)


def _draw_offset(rng, config, side: int, region: str) -> int:
    """An offset on `side` (+1 after the query, -1 before) in `region`; in the logarithmic range at or
    just below a drawn bucket boundary, where off-by-one mistakes show."""
    bidirectional, num_buckets, max_distance = config
    _, max_exact = bucket_config(*config)
    for _ in range(200):
        if region == "exact":
            n = int(rng.integers(1, max_exact))
        elif region == "beyond":
            n = int(rng.choice([max_distance, int(rng.integers(max_distance + 1, 4 * max_distance)),
                                int(rng.integers(10 ** 3, 10 ** 6))]))
        elif region == "inside":  # anywhere in the logarithmic range (the public cases hold its boundaries)
            n = int(rng.integers(max_exact, max_distance))
        else:
            n_range = np.arange(max_exact, max_distance)
            buckets = relative_position_bucket(-n_range, bidirectional, num_buckets, max_distance)
            starts = n_range[1:][np.diff(buckets) != 0]  # the first distance of each bucket after the first
            n = int(rng.choice(starts)) - int(rng.integers(0, 2)) if starts.size else int(rng.choice(n_range))
        if _safe(n, config):
            return side * n
    raise RuntimeError(f"no safe offset in {region} for {config}")


# Each configuration family and what its cases probe: (side, region); side 0 is offset 0. Every family
# holds every region on both sides, so an array of all of them goes wrong wherever a slip does.
_HIDDEN_FAMILIES = (
    (lambda rng: _DEFAULT, [(0, "exact"), (1, "exact"), (-1, "exact")] + [(1, "inside"), (-1, "inside")] * 4
     + [(1, "beyond"), (-1, "beyond")]),
    (lambda rng: (False, int(rng.choice([24, 32, 40])), int(rng.integers(64, 161))),
     [(0, "exact")] + [(-1, "exact")] * 2 + [(-1, "log")] * 4 + [(-1, "beyond"), (1, "exact"), (1, "beyond")]),
    (lambda rng: (True, int(rng.choice([8, 10, 12])), int(rng.integers(14, 31))),
     [(0, "exact"), (1, "exact"), (-1, "exact"), (1, "log"), (1, "log"), (-1, "log"), (-1, "log"), (1, "beyond"),
      (-1, "beyond")]),
    # an odd decoder table: its one side has an odd number of buckets, where per_side // 2 and
    # per_side / 2 part (the public cases hold one too)
    (lambda rng: (False, int(rng.choice([13, 17, 21])), int(rng.integers(24, 49))),
     [(0, "exact"), (-1, "exact")] + [(-1, "log")] * 3 + [(-1, "beyond"), (1, "log")]),
    (lambda rng: (True, int(rng.choice([27, 33, 41])), int(rng.integers(100, 201))),
     [(0, "exact"), (1, "log"), (-1, "log"), (1, "exact"), (-1, "exact"), (1, "beyond"), (-1, "beyond")]),
)
_ARRAYS_PER_FAMILY = 5  # and one single offset: a sixth of the drawn cases is what lesson 3's function does


def _shaped(rng, offsets: list[int]):
    """The drawn offsets as a row, a matrix or a batch of matrices (nested tuples), the shape drawn."""
    rows = int(rng.choice([1, 2, 3])) if len(offsets) % 6 == 0 else 1
    if rows == 1:
        return tuple(offsets)
    width = len(offsets) // rows
    return tuple(tuple(offsets[r * width:(r + 1) * width]) for r in range(rows))


def hidden_cases(rng) -> tuple[Case, ...]:
    """q7's grading cases: for each configuration family of the public recipe (drawn sizes), one single
    offset in the logarithmic range before the query (what lesson 3's function already does) and five
    arrays that each hold an offset of every slot of the family (and two more in the exact range; every
    other one padded to a multiple of six with more, so that it can be a matrix or a batch), none a
    float32/float64 disagreement."""
    cases = []
    for draw_config, slots in _HIDDEN_FAMILIES:
        config = draw_config(rng)

        def offset(side, region, config=config):
            return 0 if side == 0 else _draw_offset(rng, config, side, region)

        side, region = next(slot for slot in slots if slot[0] == -1 and slot[1] in ("log", "inside"))
        rel = offset(side, region)  # a key before the query, in the logarithmic range: the topic stays fixed
        cases.append(Case((rel,), _kwargs(*config), "one offset: " + _topic(rel, *config)))
        for k in range(_ARRAYS_PER_FAMILY):
            drawn = [offset(side, region) for side, region in slots] + [offset(s, "exact") for s in (1, -1)]
            while k % 2 and len(drawn) % 6:
                drawn.append(offset(int(rng.choice([1, -1])), "exact"))
            rng.shuffle(drawn)
            cases.append(Case((_shaped(rng, drawn),), _kwargs(*config), f"{len(drawn)} offsets at once, every region"))
    return tuple(cases)


_SKIPPING = ("max_distance small for the number of buckets", "a decoder table that skips buckets")


def _skips_buckets(bidirectional: bool, num_buckets: int, max_distance: int) -> bool:
    """Whether some bucket is unused besides those no table of its kind uses: every encoder table leaves
    one unused (offset 0 on the side of later keys: offset 0 is in the other half), and one more when
    the number of buckets is odd."""
    always_unused = (1 + num_buckets % 2) if bidirectional else 0
    return len(bucket_ranges(bidirectional, num_buckets, max_distance).unused) > always_unused


def _hidden_config(rng, topic: str):
    """One drawn configuration of q8 that still has the property its topic names and, T5's own two
    tables aside, no near-tie at any distance (`_near_tie`): a learner's table is a scan of every offset."""
    draws = {
        "T5's default encoder table": lambda: (True, 32, 128),
        "T5's default decoder table": lambda: (False, 32, 128),
        "an odd number of buckets": lambda: (True, int(rng.choice([21, 27, 35, 41])), int(rng.integers(64, 200))),
        "max_distance small for the number of buckets": lambda: (True, int(rng.choice([40, 44, 48])),
                                                                  int(rng.integers(13, 24))),
        "a small decoder table": lambda: (False, int(rng.choice([12, 16, 20])), int(rng.integers(24, 48))),
        "a decoder table that skips buckets": lambda: (False, int(rng.choice([36, 40, 44])), int(rng.integers(24, 34))),
        "the smallest encoder table": lambda: (True, 4, int(rng.integers(3, 9))),
        "the smallest decoder table": lambda: (False, 2, int(rng.integers(2, 9))),
        # never longer than check()'s (1000): a right answer that scans every offset must finish as fast there
        "a long logarithmic range": lambda: (True, int(rng.choice([10, 12, 14])), int(rng.integers(400, 1001))),
    }
    for _ in range(100):
        config = draws[topic]()
        if topic in _SKIPPING and not _skips_buckets(*config):
            continue
        if "T5's default" in topic or not any(_near_tie(n, *config) for n in range(config[2])):
            return config  # T5's own two tables are what they are: check() grades them as they stand
    raise RuntimeError(f"no configuration for {topic!r}")


def hidden_range_cases(rng) -> tuple[Case, ...]:
    """q8's grading cases: each public configuration's purpose, with drawn sizes."""
    return tuple(Case((), _kwargs(*_hidden_config(rng, topic)), topic) for _, topic in _CONFIGS)


_CONFIGS = [
    ((), "T5's default encoder table"),
    ((("bidirectional", False),), "T5's default decoder table"),
    ((("num_buckets", 33),), "an odd number of buckets"),
    ((("num_buckets", 48), ("max_distance", 20)), "max_distance small for the number of buckets"),
    ((("bidirectional", False), ("num_buckets", 16), ("max_distance", 32)), "a small decoder table"),
    ((("bidirectional", False), ("num_buckets", 40), ("max_distance", 30)), "a decoder table that skips buckets"),
    ((("num_buckets", 4), ("max_distance", 3)), "the smallest encoder table"),
    ((("bidirectional", False), ("num_buckets", 2), ("max_distance", 2)), "the smallest decoder table"),
    ((("num_buckets", 12), ("max_distance", 1000)), "a long logarithmic range"),
]

EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 3: relative positions and their buckets",
    questions=(
        Numeric(
            id="q1", points=1, objectives=(5,), name="answer_q1",
            key="04cb080aa23c9e64768d5c93",
            hints=(
                "the offset is key position minus query position; a key before the query is negative.",
                "with 16 buckets per side, max_exact is 8; from there the bucket grows with log(n).",
                "compute log(n / 8) / log(128 / 8) * 8, truncate, add 8.",
            ),
            feedback={
                "b0b9c223e80f952726ef42a4": "that is the bucket of the opposite offset: the key comes before "
                                            "the query, so it uses the lower half.",
                "e1cd49c437a608897db102e6": "that is the decoder's bucket; the encoder splits its buckets "
                                            "in two halves.",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(5,), name="answer_q2",
            key="d397a7b6aacfe4e3498e9a7b",
            hints=(
                "a key after the query uses the upper half of the encoder's buckets.",
                "compute the bucket of the distance n as on the left side, then add the number of buckets per side.",
            ),
            feedback={
                "ac8751ba2ddf5c97d335d587": "right distance, wrong half: keys after the query use the upper half.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(5,), name="answer_q3",
            key="d3dc185fffaf3953c096ed72",
            hints=(
                "the decoder does not halve: all 32 buckets serve keys at or before the query.",
                "so max_exact is 16 and the logarithmic formula uses 32 - 16 buckets between 16 and 128.",
            ),
            feedback={
                "c56846240d76db31dd1841c1": "that is the encoder's bucket; the decoder uses all its buckets "
                                            "for one side.",
            },
        ),
        Numeric(
            id="q4", points=1, objectives=(5,), name="answer_q4",
            key="6ec0c6a771035ef47c2e9593",
            hints=(
                "bucket_ranges(bidirectional=False) lists the offsets of every bucket.",
                "the offset nearest to the query is the one with the smallest distance.",
            ),
            feedback={
                "b785c0d510e5613f308f8b1a": "mind the sign: a decoder key is before the query, so its "
                                            "offset is negative.",
                "da14a5b0fa9e65c63c9febe4": "that is the end of the bucket farthest from the query.",
            },
        ),
        Numeric(
            id="q5", points=1, objectives=(5,), name="answer_q5",
            key="f6c3ad29e7ce8ed9c5fe534d",
            hints=(
                "in a causal table all 40 buckets serve the past; max_exact is half of them.",
                "compute the buckets of the distances max_exact, max_exact + 1, max_exact + 2 with the log formula: "
                "does one more token of distance always mean one more bucket?",
            ),
            feedback={
                "af3b5193350d789954d2f608": "distance 20 is max_exact, the first distance of the logarithmic range, "
                                            "and it lands in bucket 20.",
                "966594bcc13cd49a044b406c": "that is how many buckets are unused; the question asks for the lowest "
                                            "bucket number that no offset reaches.",
                "c3f8dac92b46de791948b0cf": "bucket 30 is unused, but not the first one: start from distance 20.",
            },
        ),
        MultipleChoice(
            id="q6", points=1, objectives=(5,), name="answer_q6",
            options="ABCDE", key="99bebbf60d4b3f9f88b38630",
            hints=(
                "for each configuration, compute the buckets of +63, +64, +90 and +91.",
                "a bucket of their own means: 64 and 90 in the same bucket, 63 and 91 in others.",
            ),
            feedback={
                "100c425edf44d03e40d7c537": "in a decoder every key after the query falls in bucket 0, together "
                                            "with offset 0 and every other future key.",
                "68e7252a56fbd1eb3b7df0b4": "there the offsets 64..90 are split over more than one bucket.",
                "cac178a6947d424d3cf0e227": "they do share a bucket there, but it holds other offsets too.",
                "5a6abf665f0eb5ef79adf4fb": "there the offsets 64..90 are split over more than one bucket.",
            },
        ),
        ShownCode(
            id="q7", points=4, objectives=(5,), name="my_bucket",
            reference=f"{__name__}:reference_buckets", cases=_cases(), hidden=f"{__name__}:hidden_cases",
            case_timeout=2.0, tolerance=0,
            blocked=tuple(f"t5lesson.buckets:{name}" for name in (
                "relative_position_bucket", "bucket_ids", "bucket_ranges", "_bucket_numpy", "_bucket_torch",
                "_log_bucket_numpy",
            )) + ("t5lesson.bias:relative_bias", "t5lesson.lessons.bucket_steps:bucket_steps",
                  "t5lesson.lessons.bucket_steps:bucket_of", f"{__name__}:reference_buckets",
                  "t5lesson.reference:reference_bucket", "transformers:",
                  "transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket",
                  "t5lesson.flex:offset_buckets", "t5lesson.flex:_log_buckets"),
            # question 8 is answered with the package's bucketing (and question 4 with its ranges):
            # these stay usable until this answer is read
            open_until_read=tuple(f"t5lesson.buckets:{name}" for name in (
                "relative_position_bucket", "bucket_ids", "bucket_ranges", "_bucket_numpy", "_bucket_torch",
                "_log_bucket_numpy",
            )),
            hints=(
                "lesson 3's bucket_of takes one offset. What goes wrong if you hand it a whole matrix of "
                "offsets, at the first if and at the first min?",
                "with many offsets, every if becomes a choice made entry by entry: compute the half each "
                "offset starts in and its distance n for all of them, compute the logarithmic bucket for "
                "all of them (with n replaced by something harmless where n is 0, so the logarithm stays "
                "finite), clamp entry by entry, and keep n itself where n is below max_exact.",
                "r = np.asarray(relative_position); per_side = num_buckets // 2 if bidirectional else "
                "num_buckets; start = np.where(r > 0, per_side, 0) if bidirectional else 0; n = np.abs(r) if "
                "bidirectional else np.maximum(-r, 0); max_exact = per_side // 2; big = max_exact + "
                "(np.log(np.maximum(n, 1) / max_exact) / np.log(max_distance / max_exact) * (per_side - "
                "max_exact)).astype(int); b = start + np.where(n < max_exact, n, np.minimum(big, per_side - 1)); "
                "return int(b) if b.ndim == 0 else b",
            ),
        ),
        PlainCode(
            id="q8", points=4, objectives=(5,), name="my_bucket_ranges",
            reference="t5lesson.exercises.ex03_relative_position_buckets:reference_ranges",
            cases=tuple(Case((), kwargs, topic) for kwargs, topic in _CONFIGS), hidden=f"{__name__}:hidden_range_cases",
            case_timeout=2.0,
            blocked=("t5lesson.buckets:bucket_ranges", "t5lesson.lessons.toy_heads:bucket_representatives",
                     "t5lesson.exercises.ex03_relative_position_buckets:reference_ranges",
                     "t5lesson.lessons.pair_counts:bucket_offset_counts"),
            open_until_read=("t5lesson.buckets:bucket_ranges",),  # question 4 is answered with it
            hints=(
                "each bucket covers one contiguous range of offsets on one side, so scan the offsets "
                "in order and note where the bucket changes.",
                "every offset beyond max_distance is in the same bucket as max_distance itself: scanning "
                "-max_distance..max_distance finds every used bucket.",
                "a range that reaches -max_distance or +max_distance is open-ended: use None for that end.",
            ),
        ),
        FreeText(
            id="q9", points=2, objectives=(5, 6), name="q9-answer",
            rubric=(
                ("near offsets get a bucket each because small differences in distance change the meaning "
                 "(the previous token or two back)", 0.5),
                ("far away a logarithmic rule keeps the relative resolution: each bucket starts a fixed factor "
                 "farther out, so distances of about the same size share one", 0.5),
                ("far offsets are rare (offset d occurs L - |d| times), so wide buckets pool their few pairs into "
                 "a parameter that is trained often enough", 0.5),
                ("every distance is covered with a fixed number of parameters: from the last boundary on, "
                 "everything shares the last bucket", 0.5),
            ),
            checklist=(
                "Does it say why the nearest offsets each get a bucket of their own?",
                "Does it say what stays the same from one far bucket to the next under a logarithmic rule, "
                "with numbers from lesson 3's boundary table?",
                "Does it say how often a far offset occurs in a training sequence, with a pair count, and "
                "what a wide bucket does with the pairs of its offsets?",
                "Does it say what happens to offsets beyond the last boundary, and how many parameters that "
                "costs?",
            ),
        ),
    ),
)
