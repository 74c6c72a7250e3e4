"""Synthetic tasks for the length-generalisation experiment.

Each task makes batches of token sequences with one target per position; positions whose
target is not defined yet get IGNORE and count neither in the loss nor in the accuracy.

copy-k       target at position i = the token at position i - k (vocabulary 16, k = 3 by
             default). A pure relative lookup: the answer is always exactly k steps back, so
             only position information can find it (the tokens are uniformly random).
last-marker  a few token values are "markers" (0 .. n_markers-1); target at position i = the
             type of the most recent marker at or before i. Finding it needs content (is this
             key a marker?) plus recency (which marker is nearest?).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import ArgumentError, check_int

__all__ = ["IGNORE", "Task", "TASKS", "get_task", "make_batch"]

IGNORE = -100  # PyTorch's default ignore_index for cross_entropy


@dataclass(frozen=True)
class Task:
    """A synthetic task: its name, vocabulary size, and a one-line description."""

    name: str
    vocab_size: int
    description: str


TASKS = {
    "copy-k": Task("copy-k", 16, "predict the token 3 positions back (a pure relative lookup)"),
    "last-marker": Task("last-marker", 16, "predict the type of the most recent marker (content plus recency)"),
}

COPY_K = 3  # how far back copy-k looks
N_MARKERS = 2  # tokens 0 and 1 are markers in last-marker
# Probability that a position holds a marker (about 8 tokens apart on average). At 0.08 one
# seed in eight failed to learn the task with T5 buckets even at the training length.
MARKER_RATE = 0.12


def get_task(name) -> Task:
    """The Task called `name` (one of TASKS)."""
    if name not in TASKS:
        raise ArgumentError(f"task must be one of {sorted(TASKS)}, got {name!r}")
    return TASKS[name]


def make_batch(task, batch, length, rng):
    """(tokens, targets), two int64 arrays [batch, length]; targets hold IGNORE where undefined.

    rng: a numpy.random.Generator, so the caller controls every random draw.
    """
    task = get_task(task).name
    batch = check_int("batch", batch, minimum=1)
    length = check_int("length", length, minimum=COPY_K + 1)
    if not isinstance(rng, np.random.Generator):
        raise ArgumentError("rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                            f"got {type(rng).__name__}")
    vocab = TASKS[task].vocab_size
    if task == "copy-k":
        tokens = rng.integers(0, vocab, size=(batch, length))
        targets = np.full_like(tokens, IGNORE)
        targets[:, COPY_K:] = tokens[:, :-COPY_K]
        return tokens, targets
    return _last_marker(batch, length, vocab, rng)


def _last_marker(batch, length, vocab, rng):
    fillers = rng.integers(N_MARKERS, vocab, size=(batch, length))
    marker_types = rng.integers(0, N_MARKERS, size=(batch, length))
    is_marker = rng.random((batch, length)) < MARKER_RATE
    tokens = np.where(is_marker, marker_types, fillers)
    # Index of the most recent marker at or before each position (-1 before the first one).
    where = np.where(is_marker, np.arange(length), -1)
    latest = np.maximum.accumulate(where, axis=1)
    targets = np.take_along_axis(tokens, np.maximum(latest, 0), axis=1)
    targets = np.where(latest >= 0, targets, IGNORE)
    return tokens.astype(np.int64), targets.astype(np.int64)
