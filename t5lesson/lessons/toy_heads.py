"""Hand-made bias tables whose heads mean something, for lesson 4 (no pretrained weights offline).

Each head is a rule "bias as a function of the offset" (offset = key - query, j - i). A table
entry u[bucket, head] takes the rule's value at the offset of that bucket nearest to the query
(the start of its range), so the table is exactly what a T5 layer would store: one number
per (bucket, head). The four heads:

- "local window":   0 for |offset| <= WINDOW, far below (-8) outside: attend to neighbours only;
- "previous token": +6 at offset -1, 0 elsewhere: mostly the token just before;
- "look far left":  6 * log(1 + distance) / log(1 + max_distance) to the left (it would reach
                    +6 at offset -max_distance), -4 to the right: prefers the most distant
                    keys before the query;
- "flat":           all zero: position plays no part, only the content q.k decides.

Values are in logit units: a bias difference of 6 multiplies the attention weight by e^6 ~ 400.
Buckets that no offset reaches (bucket 16 of the default encoder) get 0.
"""
from __future__ import annotations

import math

import numpy as np

from ..bias import _toeplitz_numpy, relative_bias
from ..buckets import bucket_ranges

__all__ = ["HEAD_NAMES", "WINDOW", "toy_bias_table", "bucket_representatives", "bias_from_table",
           "bias_from_table_cases", "BIAS_FROM_TABLE_HINTS"]

HEAD_NAMES = ("local window", "previous token", "look far left", "flat")
WINDOW = 3


def bucket_representatives(bidirectional=True, num_buckets=32, max_distance=128) -> dict[int, int]:
    """bucket -> the offset of that bucket nearest to 0 (the start of its range), used buckets only."""
    table = bucket_ranges(bidirectional, num_buckets, max_distance)
    # A bucket on the left has hi nearest to 0, on the right lo; bucket 0 always contains 0.
    starts = {}
    for r in table.ranges:
        start = r.lo if r.lo is not None and r.lo >= 0 else r.hi
        assert start is not None  # a range unbounded on one side is bounded on the side nearer 0
        starts[r.bucket] = start
    return starts


def _head_values(offset: int, max_distance: int) -> tuple[float, float, float, float]:
    local = 0.0 if abs(offset) <= WINDOW else -8.0
    previous = 6.0 if offset == -1 else 0.0
    if offset > 0:
        far_left = -4.0
    else:  # log-shaped growth, like the buckets themselves
        far_left = 6.0 * math.log1p(-offset) / math.log1p(max_distance)
    return local, previous, far_left, 0.0


def toy_bias_table(bidirectional=True, num_buckets=32, max_distance=128) -> np.ndarray:
    """float32 [num_buckets, 4]: the four hand-made heads of HEAD_NAMES, one column each."""
    representatives = bucket_representatives(bidirectional, num_buckets, max_distance)
    table = np.zeros((num_buckets, len(HEAD_NAMES)), dtype=np.float32)
    for bucket, offset in representatives.items():
        table[bucket] = _head_values(offset, max_distance)
    return table


def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128, query_offset=0):
    """The course's answer to lesson 4's your-turn cell: `relative_bias` (keyword arguments after k_len)."""
    return relative_bias(table, q_len, k_len, bidirectional=bidirectional, max_distance=max_distance,
                         query_offset=query_offset)


def _mixed(num_buckets: int, heads: int, seed: int) -> np.ndarray:
    """A table of mixed values, so a swapped head axis or a reversed offset cannot pass by symmetry."""
    return np.round(np.random.default_rng(seed).normal(size=(num_buckets, heads)), 2)


def bias_from_table_cases() -> list[dict]:
    """The settings lesson 4's your-turn cell checks `bias_from_table` on (keyword arguments).

    The toy tables at the lesson's lengths first, then tables of mixed values (so a swapped head axis
    or a reversed offset cannot pass by symmetry) in every setting a slip could hide from: more keys
    than queries and more queries than keys, odd lengths, an odd number of buckets and other numbers
    of buckets (so the bucket count must come from the table), a small max_distance (log region and
    clamp reached on both sides), the decoder, and decoding steps with a cache (query_offset) in the
    decoder and in the encoder, where keys after the query reach the table's upper half.
    """
    return [
        dict(table=toy_bias_table(True), q_len=6, k_len=6),
        dict(table=toy_bias_table(False), q_len=10, k_len=10, bidirectional=False),
        dict(table=_mixed(16, 3, 0), q_len=5, k_len=30, max_distance=20),
        dict(table=_mixed(9, 2, 1), q_len=7, k_len=4, max_distance=6),
        dict(table=_mixed(33, 1, 2), q_len=3, k_len=9, bidirectional=False, max_distance=40),
        dict(table=toy_bias_table(False), q_len=1, k_len=10, bidirectional=False, query_offset=9),
        dict(table=_mixed(16, 3, 0), q_len=3, k_len=40, bidirectional=False, max_distance=20, query_offset=37),
        dict(table=_mixed(12, 2, 3), q_len=3, k_len=11, max_distance=9, query_offset=4),
        dict(table=_mixed(7, 2, 4), q_len=5, k_len=5, bidirectional=False, max_distance=5, query_offset=2),
    ]


BIAS_FROM_TABLE_HINTS = (
    "where does the query of row i sit when query_offset tokens came before it, and where does the key of "
    "column j sit? The bias of a pair depends only on the offset between those two positions: key minus "
    "query, as in lesson 3.",
    "write down two position vectors, one for the queries and one for the keys; subtracting a column of "
    "query positions from a row of key positions gives the whole matrix of offsets at once "
    "(broadcasting). Bucket that matrix with the package's version of lesson 3's function, which takes "
    "a whole array, told how many buckets the table has (its first axis), whether it is the encoder, "
    "and max_distance. Looking the buckets up in the table "
    "puts the head axis last; the result wants it first.",
    "queries = query_offset + np.arange(q_len); keys = np.arange(k_len); offsets = keys[None, :] - "
    "queries[:, None]; buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0], "
    "max_distance); return table[buckets].transpose(2, 0, 1)",
)


def _bias_from_table_turn():
    from .your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return Turn(reference=bias_from_table, cases=bias_from_table_cases, hints=BIAS_FROM_TABLE_HINTS,
                course_versions=(relative_bias, _toeplitz_numpy))


TURNS = {"bias_from_table": _bias_from_table_turn()}
