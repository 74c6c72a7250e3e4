"""Lesson 3's your-turn cell (bucket_of): slips in the regions of the bucket formula."""
from __future__ import annotations

import numpy as np
from harness import TurnCheck, your_turn_answer

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
