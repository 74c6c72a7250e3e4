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

from ..buckets import bucket_ranges

__all__ = ["HEAD_NAMES", "WINDOW", "toy_bias_table", "bucket_representatives", "bias_from_table_cases",
           "BIAS_FROM_TABLE_HINTS"]

HEAD_NAMES = ("local window", "previous token", "look far left", "flat")
WINDOW = 3


def bucket_representatives(bidirectional=True, num_buckets=32, max_distance=128) -> dict[int, int]:
    """bucket -> the offset of that bucket nearest to 0 (the start of its range), used buckets only."""
    table = bucket_ranges(bidirectional, num_buckets, max_distance)
    # A bucket on the left has hi nearest to 0, on the right lo; bucket 0 always contains 0.
    return {r.bucket: (r.lo if r.lo is not None and r.lo >= 0 else r.hi) for r in table.ranges}


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


def bias_from_table_cases() -> list[dict]:
    """The settings lesson 4's your-turn cell checks `bias_from_table` on (keyword arguments).

    The toy tables with the lesson's lengths, then a table of mixed values (so a swapped head
    axis or a reversed offset cannot pass by symmetry) with more keys than queries, and two
    decoding steps with a cache: one new query after 9 cached tokens, three after 37.
    """
    mixed = np.round(np.random.default_rng(0).normal(size=(16, 3)), 2)
    return [
        dict(table=toy_bias_table(True), q_len=6, k_len=6),
        dict(table=toy_bias_table(False), q_len=10, k_len=10, bidirectional=False),
        dict(table=mixed, q_len=5, k_len=30, max_distance=20),
        dict(table=toy_bias_table(False), q_len=1, k_len=10, bidirectional=False, query_offset=9),
        dict(table=mixed, q_len=3, k_len=40, bidirectional=False, max_distance=20, query_offset=37),
    ]


BIAS_FROM_TABLE_HINTS = (
    "the query of row i sits at position query_offset + i, the key of column j at position j; "
    "np.arange gives both, and broadcasting (a column minus a row) gives the [q_len, k_len] offsets.",
    "the offset is key minus query. Bucket the whole matrix at once with t5.relative_position_bucket, "
    "passing bidirectional, the table's number of buckets (table.shape[0]) and max_distance.",
    "table[buckets] has shape [q_len, k_len, heads]; .transpose(2, 0, 1) puts the head axis first.",
)
