"""Reproducible training in the lessons: one CPU thread and a private torch random stream.

Every model a lesson trains (lesson 2's recall head, lesson 4's lag model, lesson 5's length
experiment) runs inside `one_thread_forked_rng`: torch uses one thread, so floating-point sums
happen in the same order on every run, and the global torch random state is forked, so seeding
the model changes nothing outside the call. Both are restored on the way out, even on error.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

__all__ = ["one_thread_forked_rng"]


@contextmanager
def one_thread_forked_rng(seed: int | None = None):
    """One thread and a forked torch RNG (seeded with `seed` when given) for the body; both restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(threads)
