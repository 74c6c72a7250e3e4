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
           "pairs_behind_cases", "PAIRS_BEHIND_HINTS", "TURNS"]


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

    Small tables first, so that a wrong answer's message shows every entry: buckets shared by
    several training distances; distances past training with no parameter (-1); train_len equal
    to n (every distance trained); parameters shared by distances that are not neighbours and
    numbered out of order; -1 inside the training range, a parameter number that no distance uses
    and one that only distances past training use (0 pairs); a table of -1 only. Then the
    lesson's schemes, at odd and even training lengths, and two traps: T5 buckets with
    max_distance 4L (the last buckets serve only distances that training never shows, so they
    got 0 pairs) and ALiBi (no learned parameter). Every array is intp, as the browser's NumPy
    needs for np.bincount, and read-only: the learner's function runs first on the same arrays,
    and one that wrote into them (-1 set to 0, say) would hand the course's version its slip.
    """
    def read_only(array):
        array.flags.writeable = False  # both versions get the same array: one may not change it for the other
        return array

    def table(*entries):
        return read_only(np.array(entries, dtype=np.intp))

    def scheme(name, n, train_len=64):
        return read_only(SCHEMES[name].parameter_of_offset(n, train_len).astype(np.intp))

    return [
        dict(parameter=table(0, 1, 1, 2, 2, 2), train_len=4),
        dict(parameter=table(0, 1, 2, 3, -1, -1), train_len=4),
        dict(parameter=table(2, 0, 2, 1, 0), train_len=5),
        dict(parameter=table(0, -1, 1, -1, 1, 4, 4), train_len=5),
        dict(parameter=table(-1, -1, -1, -1, -1), train_len=3),
        dict(parameter=scheme("t5", 37, 37), train_len=37),
        dict(parameter=scheme("t5", 512), train_len=64),
        dict(parameter=scheme("per-offset-A", 512), train_len=64),
        dict(parameter=scheme("per-offset-0", 200, 37), train_len=37),
        dict(parameter=scheme("per-offset-32", 101, 45), train_len=45),
        dict(parameter=scheme("t5-far", 300), train_len=64),
        dict(parameter=scheme("alibi", 80), train_len=64),
    ]


PAIRS_BEHIND_HINTS = (
    "think of one parameter that several distances share: which training pairs send it gradient, and "
    "how many pairs does each of its distances bring in one sequence of train_len tokens? And what "
    "should a distance with no parameter at all get?",
    "three steps. First the pairs at each training distance: train_len - d of them, for d from 0 to "
    "train_len - 1 (section 2). Then add them up per parameter, over the first train_len entries of "
    "parameter only and leaving out the -1 entries; a parameter that no training distance reaches "
    "keeps 0. Then give every distance the total of its parameter, and 0 where its entry is -1. Two "
    "traps: a table of -1 only has no parameter at all, and in NumPy the index -1 means the last entry.",
    "pairs = train_len - np.arange(train_len); seen = parameter[:train_len]; keep = seen >= 0; "
    "totals = np.bincount(seen[keep], weights=pairs[keep], minlength=max(parameter.max() + 1, 1))"
    ".astype(int), where the minlength leaves room for parameters no training distance reaches, and is "
    "at least 1 so that a table of -1 only works too; then return np.where(parameter >= 0, "
    "totals[np.maximum(parameter, 0)], 0): np.maximum keeps -1 from picking the last parameter.",
)


def _pairs_behind_turn():
    from ..lessons.your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return Turn(reference=pairs_behind, cases=pairs_behind_cases, hints=PAIRS_BEHIND_HINTS,
                course_versions=(training_pairs_behind_offset, pairs_per_parameter, _pairs_per_index))


TURNS = {"pairs_behind": _pairs_behind_turn()}
