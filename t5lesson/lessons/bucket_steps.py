"""The bucket of one offset, step by step, for lesson 3.

`relative_position_bucket` gives the answer; `bucket_steps` also shows how it is reached:
which half, which n, which region (exact, logarithmic, clamped) and the value of the log
formula before truncation. The final bucket is always taken from `relative_position_bucket`,
so the trace can never disagree with the package (the tests check that the region and the
intermediate value lead to that same bucket).

Sign convention: offset = key - query (j - i); negative = the key is to the left of the query.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import ArgumentError, check_int
from ..buckets import bucket_config, bucket_ids, exact_ties, relative_position_bucket

__all__ = ["BucketSteps", "bucket_steps", "bucket_of", "BUCKET_OF_CASES", "BUCKET_OF_HINTS"]

LINE_WIDTH = 88  # characters: a printed line that fits a notebook without wrapping


@dataclass(frozen=True)
class BucketSteps:
    """Every intermediate value of one bucket computation (see `bucket_steps`)."""

    offset: int
    bidirectional: bool
    num_buckets: int
    max_distance: int
    per_direction: int  # buckets per side: num_buckets // 2 (encoder) or num_buckets (decoder)
    half_start: int  # 0, or per_direction for a key to the right in the encoder
    n: int  # the distance the formula sees: |offset| (encoder) or max(-offset, 0) (decoder)
    max_exact: int
    region: str  # "exact", "log" or "clamped"
    log_value: float | None  # log(n/max_exact) / log(max_distance/max_exact) * (per_direction - max_exact)
    bucket: int
    tie: bool = False  # the log formula is exactly an integer here (see `t5lesson.buckets`)

    def lines(self) -> list[str]:
        kind = "encoder (bidirectional)" if self.bidirectional else "decoder (causal)"
        out = [f"offset j - i = {self.offset}, {kind}, num_buckets={self.num_buckets}, "
               f"max_distance={self.max_distance}"]
        if self.bidirectional:
            side = "right: upper half" if self.offset > 0 else "left or same token: lower half"
            out.append(f"1. halve: {self.per_direction} buckets per side; key on the {side}, "
                       f"starting at bucket {self.half_start}; n = |offset| = {self.n}")
        else:
            out.append(f"1. causal: one side of {self.per_direction} buckets; n = max(-offset, 0) = {self.n}"
                       + ("  (a future key: bucket 0, removed by the causal mask)" if self.offset > 0 else ""))
        out.append(f"2. max_exact = {self.per_direction} // 2 = {self.max_exact}")
        log_value = self.log_value  # None in the exact region
        if self.region == "exact" or log_value is None:
            out.append(f"3. n = {self.n} < max_exact: exact region, bucket n = {self.n}")
        else:
            unclamped = self.max_exact + math.trunc(log_value)
            out.append(f"3. n = {self.n} >= max_exact: log region, "
                       f"log({self.n}/{self.max_exact}) / log({self.max_distance}/{self.max_exact}) "
                       f"* {self.per_direction - self.max_exact} = {log_value:.3f}"
                       f"{' exactly (a tie)' if self.tie else ''}, "
                       f"so {self.max_exact} + {math.trunc(log_value)} = {unclamped}")
            if self.region == "clamped":
                out.append(f"4. clamp: {unclamped} > {self.per_direction - 1}, "
                           f"so it becomes {self.per_direction - 1}")
        out.append(f"bucket = {self.half_start} + {self.bucket - self.half_start} = {self.bucket}")
        # One entry per step (lines()[3] is step 3); an entry longer than a notebook line
        # continues, indented, on the next printed line.
        return [_fit(line) for line in out]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _fit(line: str, indent: str = "   ") -> str:
    """The line, broken after its last ', ' or '; ' that keeps each piece within LINE_WIDTH."""
    pieces = []
    while len(line) > LINE_WIDTH:
        cut = max(line.rfind(sep, 0, LINE_WIDTH - 1) for sep in (", ", "; ", "  ("))
        if cut <= len(indent):
            break
        cut += 1 if line[cut:cut + 3] == "  (" else 2
        pieces.append(line[:cut].rstrip())
        line = indent + line[cut:].lstrip()
    return "\n".join(pieces + [line])


def _log_value(n: int, per_direction: int, max_exact: int, max_distance: int) -> tuple[float, bool]:
    """The log formula before truncation, in float32 as the reference computes it, and whether
    it is a tie; at a tie, the exact integer (see `t5lesson.buckets`), which the package returns."""
    tie_n, tie_k = exact_ties(np.array([n]), per_direction, max_exact, max_distance)
    if tie_n:
        return float(tie_k[0]), True
    ratio = np.float32(n) / np.float32(max_exact)
    log_ratio = np.float32(math.log(float(ratio)))
    scaled = log_ratio / np.float32(math.log(max_distance / max_exact))
    return float(np.float32(scaled) * np.float32(per_direction - max_exact)), False


def bucket_steps(offset, bidirectional=True, num_buckets=32, max_distance=128) -> BucketSteps:
    """Trace the bucket of `offset` (key - query) through halving, exact/log region and clamp.

    >>> print(bucket_steps(-100).bucket, bucket_steps(-100).region)
    15 clamped
    """
    if isinstance(offset, bool):
        raise ArgumentError(f"offset must be an integer (key - query), got the bool {offset!r}")
    offset = check_int("offset", offset)
    per_direction, max_exact = bucket_config(bidirectional, num_buckets, max_distance)
    bidirectional = bool(bidirectional)
    if bidirectional:
        half_start, n = (per_direction if offset > 0 else 0), abs(offset)
    else:
        half_start, n = 0, max(-offset, 0)
    bucket = bucket_ids(offset, bidirectional, num_buckets, max_distance)
    if n < max_exact:
        region, log_value, tie = "exact", None, False
    else:
        log_value, tie = _log_value(n, per_direction, max_exact, max_distance)
        region = "clamped" if max_exact + math.trunc(log_value) > per_direction - 1 else "log"
    return BucketSteps(offset, bidirectional, int(num_buckets), int(max_distance), per_direction,
                       half_start, n, max_exact, region, log_value, int(bucket), tie)


def bucket_of(offset, bidirectional=True, num_buckets=32, max_distance=128) -> int:
    """The bucket of one offset (key - query) as a Python int: the course's answer to lesson 3's
    your-turn cell, taken from `relative_position_bucket`."""
    if isinstance(offset, bool):
        raise ArgumentError(f"offset must be an integer (key - query), got the bool {offset!r}")
    return int(relative_position_bucket(check_int("offset", offset), bidirectional, num_buckets, max_distance))


# The offsets lesson 3's your-turn cell is checked on: every region of the encoder and the decoder,
# both sides, the clamp, and settings away from the defaults (an odd number of buckets on each
# side, a small and an odd max_distance), so a slip that only shows off the defaults is caught.
# None is a tie (an offset where the log formula is exactly a whole number, such as 16, 32 and 64
# for the default encoder), so a learner who computes the logarithm in float64 matches the
# reference, which computes it in float32.
BUCKET_OF_CASES = (
    (0,), (-1,), (1,), (-7,), (7,), (-8,), (8,), (-12,), (-20,), (20,), (-50,), (90,), (-91,), (-500,),
    (5000,),
    (5, False), (-15, False), (-20, False), (-112, False), (-113, False), (-1000, False),
    (-9, True, 16, 32), (-30, False, 16, 32), (40, True, 33, 128), (-17, False, 33, 128),
    (-23, False, 33, 128), (-70, False, 33, 128), (-5, True, 10, 20), (6, True, 10, 20), (-13, True, 10, 20),
    (-11, True, 18, 25), (-29, False, 9, 25), (-6, False, 9, 25), (-4, False, 9, 25),
)

BUCKET_OF_HINTS = (
    "which region is n in? Section 2.2 gives each small distance a bucket of its own. How many "
    "distances get one, for a side of per_side buckets, and what is the bucket of such a distance?",
    "past the exact region the bucket grows with the logarithm of the distance (section 2.3): "
    "log(n / max_exact) measured against log(max_distance / max_exact) says how far along the "
    "remaining per_side - max_exact buckets n sits, rounded down. Then no bucket may leave the side.",
    "max_exact = per_side // 2, and return n when n < max_exact; else bucket = max_exact + "
    "int(np.log(n / max_exact) / np.log(max_distance / max_exact) * (per_side - max_exact)), and "
    "return min(bucket, per_side - 1). The reference computes the logarithm in float32; the few "
    "offsets where the formula is exactly a whole number (16, 32 and 64 for the default encoder) "
    "can truncate differently in float64, so the checks avoid them.",
)


def _bucket_of_turn():
    from .your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return Turn(reference=bucket_of, cases=lambda: BUCKET_OF_CASES, hints=BUCKET_OF_HINTS,
                course_versions=(relative_position_bucket, bucket_steps))


TURNS = {"bucket_of": _bucket_of_turn()}
