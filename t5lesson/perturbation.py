"""Reproducible training for the lessons, and a way to test that stored outputs are robust.

Each lesson that trains a model stores what it printed, and nbval compares those outputs on the
reader's machine. Training amplifies rounding: another CPU sums in another order (its BLAS
kernels differ), and after a few hundred optimiser steps a chaotic run can print other digits.
A stored output must therefore be robust to a tiny change, and `T5LESSON_PERTURB` lets anyone
check that on one machine: set it to a relative size (say 1e-6) and every model a lesson trains
gets each initial weight multiplied by (1 + size * z), z standard normal from a generator seeded
by `T5LESSON_PERTURB_SEED` (default 0). The lessons must still pass nbval with it set.
"""
from __future__ import annotations

import math
import os

from ._validate import ArgumentError

__all__ = ["PERTURB_ENV", "PERTURB_SEED_ENV", "perturbation", "perturb_"]

PERTURB_ENV = "T5LESSON_PERTURB"
PERTURB_SEED_ENV = "T5LESSON_PERTURB_SEED"


def perturbation() -> tuple[float, int]:
    """(relative size, seed) read from the environment; size 0.0 when the variable is unset."""
    raw = os.environ.get(PERTURB_ENV, "").strip()
    raw_seed = os.environ.get(PERTURB_SEED_ENV, "0").strip() or "0"
    if not raw:
        return 0.0, 0
    try:
        size = float(raw)
    except ValueError:
        raise ArgumentError(f"{PERTURB_ENV} must be a number such as 1e-6, got {raw!r}") from None
    if not (0.0 <= size < 1.0) or math.isnan(size):
        raise ArgumentError(f"{PERTURB_ENV} must be a relative size in [0, 1), such as 1e-6, got {raw!r}")
    try:
        seed = int(raw_seed)
    except ValueError:
        raise ArgumentError(f"{PERTURB_SEED_ENV} must be a whole number, got {raw_seed!r}") from None
    return size, seed


def perturb_(model):
    """Nudge `model`'s parameters in place if `T5LESSON_PERTURB` is set; return the model.

    Uses its own generator, so the global torch random state (and with it the training data of
    a lesson) is untouched. A parameter that starts at exactly zero stays zero: the others
    already make every later step differ.
    """
    size, seed = perturbation()
    if size == 0.0:
        return model
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            parameter.mul_((1.0 + size * noise).to(parameter.dtype))
    return model
