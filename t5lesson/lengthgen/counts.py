"""How much training signal each bias parameter gets: counting (query, key) pairs.

In a causal sequence of length L, query i sees keys j <= i. Lesson 5 counts how far back the
key is, d = i - j >= 0 (the course's offset j - i, negated). The pairs with d are (d, 0),
(d + 1, 1), ..., (L - 1, L - 1 - d): there are L - d of them. So d = 0 occurs L times per
sequence and d = L - 1 once. A parameter that serves a single large d is trained by a handful
of pairs; a bucket pools the pairs of all its offsets. The pairs themselves are counted once,
by `t5lesson.lessons.pair_counts.offset_pair_counts`. `pairs_behind` is the course's version of
lesson 5's your-turn cell; this module and `schemes` import NumPy only, so it runs live.
"""
from __future__ import annotations

import numpy as np

from .._validate import ArgumentError, check_int
from ..lessons.pair_counts import offset_pair_counts
from .schemes import SCHEMES, get_scheme

__all__ = ["offset_counts", "pairs_per_parameter", "pairs_behind", "training_pairs_behind_offset",
           "pairs_behind_cases", "PAIRS_BEHIND_HINTS"]


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
    size = {"t5": scheme.num_buckets}.get(scheme.kind, int(index.max()) + 1 if (index >= 0).any() else 0)
    return _pairs_per_index(index, train_len, size)


def _pairs_per_index(index, train_len, size) -> np.ndarray:
    """[size] pairs per training sequence behind each parameter, given index[:train_len], the
    parameter of each training offset (-1: none); parameters no training offset reaches get 0."""
    seen = index[:train_len]
    trained = seen >= 0
    return np.bincount(seen[trained], weights=offset_counts(train_len)[trained], minlength=size).astype(np.int64)


def pairs_behind(parameter, train_len) -> np.ndarray:
    """[n] int: for each offset d, the pairs per training sequence that trained parameter[d].

    parameter: [n] ints, n >= train_len, as `Scheme.parameter_of_offset` gives them: the index of
    the learned parameter whose value is the bias at d, or -1 where none is (0 pairs there). Only
    the first train_len offsets occur in training; a parameter that serves none of them gets 0.
    """
    train_len = check_int("train_len", train_len, minimum=2)
    parameter = np.asarray(parameter)
    if parameter.ndim != 1 or parameter.size < train_len or not np.issubdtype(parameter.dtype, np.integer):
        raise ArgumentError(f"parameter must be a 1-d integer array of at least train_len = {train_len} "
                            f"entries, got shape {parameter.shape}, dtype {parameter.dtype}")
    parameter = parameter.astype(np.intp)  # np.bincount takes no int64 where intp is 32 bits (the browser)
    totals = _pairs_per_index(parameter, train_len, max(int(parameter.max()) + 1, 1))
    return np.where(parameter >= 0, totals[np.maximum(parameter, 0)], 0)


def training_pairs_behind_offset(scheme, n, train_len) -> np.ndarray:
    """[n] for each offset d = 0..n-1 (n may exceed train_len): the number of pairs per training
    sequence that trained the parameter whose value is used at d (0 where none was trained)."""
    scheme = get_scheme(scheme)
    n = check_int("n", n, minimum=1)
    train_len = check_int("train_len", train_len, minimum=2)
    return pairs_behind(scheme.parameter_of_offset(max(n, train_len), train_len), train_len)[:n]


def pairs_behind_cases() -> list[dict]:
    """The settings lesson 5's your-turn cell checks `pairs_behind` on (keyword arguments).

    Two small tables first, so that a wrong answer's message shows every entry: buckets shared by
    several training offsets, then offsets past training with no parameter (-1). Then the lesson's
    schemes at its lengths, and two traps: T5 buckets with max_distance 4L (the last buckets serve
    only offsets that training never shows, so they got 0 pairs) and ALiBi (no learned parameter).
    """
    def scheme(name, n):
        return SCHEMES[name].parameter_of_offset(n, 64)

    return [
        dict(parameter=np.array([0, 1, 1, 2, 2, 2]), train_len=4),
        dict(parameter=np.array([0, 1, 2, 3, -1, -1]), train_len=4),
        dict(parameter=scheme("t5", 512), train_len=64),
        dict(parameter=scheme("per-offset-A", 512), train_len=64),
        dict(parameter=scheme("per-offset-0", 512), train_len=64),
        dict(parameter=scheme("per-offset-32", 100), train_len=64),
        dict(parameter=scheme("t5-far", 300), train_len=64),
        dict(parameter=scheme("alibi", 80), train_len=64),
    ]


PAIRS_BEHIND_HINTS = (
    "section 2's count: a training sequence has train_len - d pairs at distance d, for d = 0 .. "
    "train_len - 1, and train_len - np.arange(train_len) gives them all at once.",
    "only parameter[:train_len] occurs in training. Add those pairs up per parameter, leaving out the -1 "
    "entries: np.bincount(indices, weights=pairs, minlength=parameter.max() + 1) does it, and minlength "
    "leaves room for parameters that no training distance reaches.",
    "totals[parameter] looks every distance up at once. Index with np.maximum(parameter, 0), so that -1 "
    "does not wrap around to the last parameter, then np.where(parameter >= 0, ..., 0).",
)
