"""How much training signal each bias parameter gets: counting (query, key) pairs.

In a causal sequence of length L, query i sees keys j <= i. Lesson 5 counts how far back the
key is, d = i - j >= 0 (the course's offset j - i, negated). The pairs with d are (d, 0),
(d + 1, 1), ..., (L - 1, L - 1 - d): there are L - d of them. So d = 0 occurs L times per
sequence and d = L - 1 once. A parameter that serves a single large d is trained by a handful
of pairs; a bucket pools the pairs of all its offsets. The pairs themselves are counted once,
by `t5lesson.lessons.pair_counts.offset_pair_counts`.
"""
from __future__ import annotations

import numpy as np

from .._validate import check_int
from ..lessons.pair_counts import offset_pair_counts
from .schemes import get_scheme

__all__ = ["offset_counts", "pairs_per_parameter", "training_pairs_behind_offset"]


def offset_counts(length) -> np.ndarray:
    """[length] number of causal (query, key) pairs with d = i - j steps back, for d = 0..length-1: L - d."""
    length = check_int("length", length, minimum=1)
    offsets, counts = offset_pair_counts(length, causal=True)  # offsets j - i = -(L-1)..0
    by_steps_back = np.empty_like(counts)
    by_steps_back[-offsets] = counts
    return by_steps_back


def pairs_per_parameter(scheme, train_len) -> np.ndarray:
    """For each learned parameter of `scheme`, how many pairs per training sequence use it."""
    scheme = get_scheme(scheme)
    train_len = check_int("train_len", train_len, minimum=2)
    index = scheme.parameter_of_offset(train_len, train_len)
    used = index >= 0
    size = {"t5": scheme.num_buckets}.get(scheme.kind, int(index.max()) + 1 if used.any() else 0)
    return np.bincount(index[used], weights=offset_counts(train_len)[used], minlength=size).astype(np.int64)


def training_pairs_behind_offset(scheme, n, train_len) -> np.ndarray:
    """[n] for each offset d = 0..n-1 (n may exceed train_len): the number of pairs per training
    sequence that trained the parameter whose value is used at d (0 where none was trained)."""
    scheme = get_scheme(scheme)
    n = check_int("n", n, minimum=1)
    train_len = check_int("train_len", train_len, minimum=2)
    index = scheme.parameter_of_offset(n, train_len)
    per_parameter = pairs_per_parameter(scheme, train_len)
    if per_parameter.size == 0:
        return np.zeros(n, dtype=np.int64)
    return np.where(index >= 0, per_parameter[np.maximum(index, 0)], 0)
