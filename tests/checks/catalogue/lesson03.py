"""Lesson 3's your-turn cell (bucket_of): slips in the regions of the bucket formula; exercise 3's code
questions: q7 (my_bucket, one offset or an array of offsets) and q8 (my_bucket_ranges)."""
from __future__ import annotations

import math

import numpy as np
from harness import QuestionCheck, TurnCheck, solution_answer, your_turn_answer

import t5lesson as t5
from t5lesson.exercises.ex03_relative_position_buckets import _near_tie, reference_buckets, reference_ranges
from t5lesson.lessons.bucket_steps import bucket_of as course_bucket_of
from t5lesson.lessons.bucket_steps import bucket_steps

ANSWER = your_turn_answer("03_relative_position_buckets", "bucket_of")
GIVEN = ANSWER[:ANSWER.index("def bucket_in_side")]  # step 1, given in the cell


def differs(function, seed):
    """Offsets over every region of many settings, ties left out (float32 and float64 may part there)."""
    rng = np.random.default_rng(seed)
    for _ in range(400):
        bidirectional = bool(rng.integers(2))
        num_buckets = int(rng.integers(4, 40))
        max_distance = int(rng.integers(num_buckets // 2 + 2, 300))
        offset = int(rng.integers(-3 * max_distance, 3 * max_distance))
        if bucket_steps(offset, bidirectional, num_buckets, max_distance).tie:
            continue
        got = function(offset, bidirectional, num_buckets, max_distance)
        want = course_bucket_of(offset, bidirectional, num_buckets, max_distance)
        if got != want:
            return f"bucket_of({offset}, {bidirectional}, {num_buckets}, {max_distance}) = {got}, expected {want}"
    return None


LOG = "np.log(n / max_exact) / np.log(max_distance / max_exact)"  # the log region's fraction


def side(body: str) -> str:
    """A cell whose bucket_in_side has `body` (indented four spaces), step 1 as given."""
    return GIVEN + "def bucket_in_side(n, per_side, max_distance):\n" + body


WRONG = {
    "the clamp at per_side, one bucket too far": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        f"    bucket = max_exact + int({LOG} * (per_side - max_exact))\n"
        "    return min(bucket, per_side)\n"),
    "no clamp": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        f"    return max_exact + int({LOG} * (per_side - max_exact))\n"),
    "round instead of truncate": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        f"    bucket = max_exact + round({LOG} * (per_side - max_exact))\n"
        "    return min(bucket, per_side - 1)\n"),
    "max_exact as per_side / 2 (a float for an odd side)": side(
        "    max_exact = per_side / 2\n    if n < max_exact:\n        return int(n)\n"
        f"    bucket = max_exact + int({LOG} * (per_side - max_exact))\n"
        "    return int(min(bucket, per_side - 1))\n"),
    "log of n and of max_distance, not of their ratios to max_exact": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        "    bucket = max_exact + int(np.log(n) / np.log(max_distance) * (per_side - max_exact))\n"
        "    return min(bucket, per_side - 1)\n"),
    "scaled by per_side, not by the buckets left": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        f"    bucket = max_exact + int({LOG} * per_side)\n"
        "    return min(bucket, per_side - 1)\n"),
    "the default 16 buckets per side written in": side(
        "    max_exact = 8\n    if n < max_exact:\n        return n\n"
        f"    bucket = max_exact + int({LOG} * (per_side - max_exact))\n"
        "    return min(bucket, per_side - 1)\n"),
    "the default max_distance 128 written in": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        "    bucket = max_exact + int(np.log(n / max_exact) / np.log(128 / max_exact) * (per_side - max_exact))\n"
        "    return min(bucket, per_side - 1)\n"),
    "exact region one too wide (n <= max_exact, then the log)": side(
        "    max_exact = per_side // 2\n    if n <= max_exact + 1:\n        return min(n, per_side - 1)\n"
        f"    bucket = max_exact + int({LOG} * (per_side - max_exact))\n"
        "    return min(bucket, per_side - 1)\n"),
    "ceil instead of floor": side(
        "    max_exact = per_side // 2\n    if n < max_exact:\n        return n\n"
        f"    bucket = max_exact + int(np.ceil({LOG} * (per_side - max_exact)))\n"
        "    return min(bucket, per_side - 1)\n"),
}

RIGHT = {
    "the transformers way: vectorised with torch, float computations, then a clamp": GIVEN + '''
import math


def bucket_in_side(n, per_side, max_distance):
    max_exact = per_side // 2
    is_small = n < max_exact
    if_large = max_exact + int(math.log(max(n, 1) / max_exact) / math.log(max_distance / max_exact)
                               * (per_side - max_exact))
    if_large = min(if_large, per_side - 1)
    return n if is_small else if_large
''',
    "a loop that counts boundaries (no logarithm of a ratio written out)": GIVEN + '''
def bucket_in_side(n, per_side, max_distance):
    max_exact = per_side // 2
    if n < max_exact:
        return n
    steps = per_side - max_exact
    bucket = max_exact + int(np.log2(n / max_exact) / np.log2(max_distance / max_exact) * steps)
    return per_side - 1 if bucket >= per_side else bucket
''',
}

CHECKS = [TurnCheck(id="your turn bucket_of", answer=ANSWER, wrong=WRONG, right=RIGHT, differs=differs,
                    namespace=lambda: {"np": np}, entry="bucket_of", mutate=("bucket_in_side",))]


# --- exercise 3: q7 (my_bucket, one offset or an array of them) and q8 (my_bucket_ranges) ------------

STEM = "03_relative_position_buckets"
Q7_ANSWER = solution_answer(STEM, "my_bucket")
Q8_ANSWER = solution_answer(STEM, "my_bucket_ranges")


def _config(rng):
    bidirectional = bool(rng.integers(2))
    num_buckets = int(rng.integers(4, 48)) if bidirectional else int(rng.integers(2, 48))
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    return bidirectional, num_buckets, int(rng.integers(max_exact + 1, 300))


def _offsets(rng, max_distance):
    """One offset (an int) or nested lists of offsets of a drawn shape, over every region and both sides."""
    shape = [(), (int(rng.integers(1, 8)),), (int(rng.integers(1, 5)), int(rng.integers(1, 6))),
             (2, int(rng.integers(1, 4)), int(rng.integers(1, 4)))][int(rng.integers(4))]
    scale = int(rng.choice([8, max_distance, 4 * max_distance]))
    values = rng.integers(-scale, scale + 1, size=shape)
    return int(values) if values.ndim == 0 else values.tolist()


def differs_q7(function, seed):
    """Many configurations and offsets of every shape (ties of the float32 and float64 log left out)."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        config = _config(rng)
        offsets = _offsets(rng, config[2])
        if any(_near_tie(abs(int(o)), *config) for o in np.ravel(offsets)):
            continue
        got, want = function(offsets, *config), reference_buckets(offsets, *config)
        if np.shape(got) != np.shape(want) or not np.array_equal(np.asarray(got), np.asarray(want)):
            return f"my_bucket({offsets}, {', '.join(map(str, config))}) = {got}, expected {want}"
    return None


def q7_body(*lines: str) -> str:
    """The solution's my_bucket with the lines between `offsets = ...` and the return replaced."""
    return ("def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):\n"
            "    offsets = np.asarray(relative_position)\n" + "".join(f"    {line}\n" for line in lines)
            + "    return int(buckets) if buckets.ndim == 0 else buckets\n")


HALVES = ("if bidirectional:", "    per_side = num_buckets // 2", "    start = np.where(offsets > 0, per_side, 0)",
          "    n = np.abs(offsets)", "else:", "    per_side, start, n = num_buckets, 0, np.maximum(-offsets, 0)")
SPREAD = "spread = np.log(np.maximum(n, 1) / max_exact) / np.log(max_distance / max_exact)"
FAR = "far = np.minimum(max_exact + (spread * (per_side - max_exact)).astype(int), per_side - 1)"
JOIN = "buckets = start + np.where(n < max_exact, n, far)"


def q7_slip(old: str, new: str) -> str:
    source = q7_body(*HALVES, "max_exact = per_side // 2", SPREAD, FAR, JOIN)
    assert old in source, old
    return source.replace(old, new)


Q7_WRONG = {
    "no clamp": q7_slip(FAR, "far = max_exact + (spread * (per_side - max_exact)).astype(int)"),
    "clamped at per_side, one bucket too far": q7_slip("per_side - 1)", "per_side)"),
    "rounded, not truncated": q7_slip("(spread * (per_side - max_exact)).astype(int)",
                                      "np.round(spread * (per_side - max_exact)).astype(int)"),
    "log of n and of max_distance, not of their ratios": q7_slip(
        SPREAD, "spread = np.log(np.maximum(n, 1)) / np.log(max_distance)"),
    "scaled by per_side, not by the buckets left": q7_slip("(spread * (per_side - max_exact))", "(spread * per_side)"),
    "ceil instead of truncating": q7_slip("(spread * (per_side - max_exact)).astype(int)",
                                          "np.ceil(spread * (per_side - max_exact)).astype(int)"),
}
# Slips that break one kind of table only (the encoder's halves, or the decoder's single side) or one
# region: they still get most cases right, and are held because a wrong answer earns at most a third
# (kinds.WRONG_AT_MOST), whatever share of the cases it gets right.
Q7_WRONG |= {
    # not one kind, but right on every drawn table whose max_distance is 128 or near it (2 of 5 families)
    "the default max_distance 128 written in": q7_slip("np.log(max_distance / max_exact)", "np.log(128 / max_exact)"),
    "halves swapped (keys before the query in the upper half)": q7_slip("offsets > 0", "offsets < 0"),
    "max_exact from num_buckets before halving": q7_slip("max_exact = per_side // 2", "max_exact = num_buckets // 2"),
    "a decoder's future keys by their distance": q7_slip("np.maximum(-offsets, 0)", "np.abs(offsets)"),
    "the default 16 buckets per side written in": q7_slip("max_exact = per_side // 2", "max_exact = 8"),
    "exact region two too wide (n <= max_exact + 1)": q7_slip("np.where(n < max_exact", "np.where(n <= max_exact + 1"),
    "the causal side halved too": q7_slip("per_side, start, n = num_buckets, 0,",
                                          "per_side, start, n = num_buckets // 2, 0,"),
}

Q7_RIGHT = {
    "transformers' _relative_position_bucket: torch tensors, float32 log, a clamp": '''
import torch


def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = torch.as_tensor(relative_position)
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets.tolist()
''',
    "Mesh TensorFlow's _relative_position_bucket in NumPy: n = -offset, float32": '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    n = -np.asarray(relative_position)
    if bidirectional:
        num_buckets //= 2
        ret += (n < 0).astype(np.int32) * num_buckets
        n = np.abs(n)
    else:
        n = np.maximum(n, 0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        np.log(np.maximum(n, 1).astype(np.float32) / max_exact)
        / np.log(max_distance / max_exact) * (num_buckets - max_exact)).astype(np.int32)
    val_if_large = np.minimum(val_if_large, num_buckets - 1)
    ret = ret + np.where(is_small, n, val_if_large)
    return ret.tolist()
''',
    "lesson 3's one-offset function, applied entry by entry down nested lists (math.log)": '''
def one(r, bidirectional, num_buckets, max_distance):
    start = 0
    if bidirectional:
        num_buckets //= 2
        start = num_buckets if r > 0 else 0
        n = abs(r)
    else:
        n = max(-r, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return start + n
    spread = math.log(n / max_exact) / math.log(max_distance / max_exact)
    far = max_exact + int(spread * (num_buckets - max_exact))
    return start + min(far, num_buckets - 1)


def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    if isinstance(relative_position, (list, tuple, np.ndarray)):
        return [my_bucket(r, bidirectional, num_buckets, max_distance) for r in relative_position]
    return one(int(relative_position), bidirectional, num_buckets, max_distance)
''',
}


def differs_q8(function, seed):
    """Many tables: both kinds, odd and even bucket counts, skipped buckets, short and long ranges, none with a
    near-tie of the float32 and float64 log at any distance."""
    rng = np.random.default_rng(seed)
    tried = 0
    while tried < 60:
        config = _config(rng)
        if any(_near_tie(n, *config) for n in range(config[2])):
            continue
        tried += 1
        got = [None if r is None else tuple(r) for r in function(*config)]
        want = reference_ranges(*config)
        if got != want:
            return f"my_bucket_ranges{config}: {got}, expected {want}"
    return None


RANGES_HEAD = "def my_bucket_ranges(bidirectional=True, num_buckets=32, max_distance=128):\n"


def q8_slip(old: str, new: str) -> str:
    assert old in Q8_ANSWER, old
    return Q8_ANSWER.replace(old, new)


Q8_WRONG = {
    "numbers at the open ends": q8_slip("(None if lo == -max_distance else lo, None if hi == max_distance else hi)",
                                        "(lo, hi)"),
    "unused buckets left out": q8_slip("    return ranges", "    return [r for r in ranges if r is not None]"),
    "scanned up to max_distance - 1 (range's end left out)": q8_slip(
        "np.arange(-max_distance, max_distance + 1)", "np.arange(-max_distance, max_distance)"),
    "open at the low end only": q8_slip("None if hi == max_distance else hi", "hi"),
    "each range as (nearest, farthest), not (lo, hi)": q8_slip(
        "lo, hi = int(covered.min()), int(covered.max())",
        "lo, hi = sorted((int(covered.min()), int(covered.max())), key=abs)"),
    "T5's max_distance 128 written in the scan": q8_slip(
        "offsets = np.arange(-max_distance, max_distance + 1)", "offsets = np.arange(-128, 129)"),
    "a scan one short on both sides, the ends taken as open from one step in": q8_slip(
        "np.arange(-max_distance, max_distance + 1)", "np.arange(-max_distance + 1, max_distance)"),
}

Q8_RIGHT = {
    "transformers' bucket (torch, float32) on every offset, ranges grown as the scan goes":
        RANGES_HEAD + '''    import torch

    relative_position = torch.arange(-max_distance, max_distance + 1)
    n_side = num_buckets // 2 if bidirectional else num_buckets
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        buckets += (relative_position > 0).long() * n_side
        n = relative_position.abs()
    else:
        n = -torch.clamp(relative_position, max=0)
    max_exact = n_side // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (n_side - max_exact)).long()
    buckets += torch.where(n < max_exact, n, torch.clamp(large, max=n_side - 1))
    ranges = [None] * num_buckets
    for offset, bucket in zip(relative_position.tolist(), buckets.tolist()):
        lo = offset if ranges[bucket] is None else ranges[bucket][0]
        ranges[bucket] = (lo, offset)
    return [None if r is None else (None if r[0] == -max_distance else r[0],
                                    None if r[1] == max_distance else r[1]) for r in ranges]
''',
    "one offset at a time with the package's bucket, a dictionary of first and last offsets":
        RANGES_HEAD + '''    first, last = {}, {}
    for offset in range(-max_distance, max_distance + 1):
        bucket = int(t5.relative_position_bucket(offset, bidirectional, num_buckets, max_distance))
        first.setdefault(bucket, offset)
        last[bucket] = offset
    table = []
    for bucket in range(num_buckets):
        if bucket not in first:
            table.append(None)
            continue
        lo, hi = first[bucket], last[bucket]
        table.append((lo if lo > -max_distance else None, hi if hi < max_distance else None))
    return table
''',
}

CHECKS += [
    QuestionCheck(id="exercise 03 q7", answer=Q7_ANSWER, wrong=Q7_WRONG, right=Q7_RIGHT, differs=differs_q7,
                  namespace=lambda: {"np": np, "math": math, "t5": t5}, entry="my_bucket", exercise=STEM,
                  question="q7", max_mutants=30),
    QuestionCheck(id="exercise 03 q8", answer=Q8_ANSWER, wrong=Q8_WRONG, right=Q8_RIGHT, differs=differs_q8,
                  namespace=lambda: {"np": np, "math": math, "t5": t5}, entry="my_bucket_ranges", exercise=STEM,
                  question="q8", max_mutants=25),
]
