"""Argument checks shared by the public functions.

Every public function of the package validates what it is given and raises an error that says
which argument was wrong, what it was, and what is allowed. These helpers keep that wording
consistent.
"""
from __future__ import annotations

import numbers
import sys

import numpy as np


class ArgumentError(ValueError, TypeError):
    """A public function got an argument it cannot use.

    It is both a ValueError and a TypeError, so callers may catch whichever reads more naturally
    for the mistake (a wrong value, or a value of the wrong kind).
    """


def is_torch(x) -> bool:
    """True for a torch tensor. Never imports torch: if torch is not loaded, x cannot be a tensor."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def loaded_torch():
    """torch, already imported by whoever handed us a tensor (so NumPy users never load it)."""
    return sys.modules["torch"]


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return `value` as a Python int, or raise if it is not an integer in [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ArgumentError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r} of type {type(value).__name__}")
    return bool(value)


def check_array(name: str, x, *, ndim: int | tuple[int, ...] | None = None, min_ndim: int | None = None):
    """Check that `x` is a NumPy array or torch tensor of floating type with the allowed rank."""
    if not (isinstance(x, np.ndarray) or is_torch(x)):
        raise ArgumentError(f"{name} must be a NumPy array or a torch tensor, got {type(x).__name__}")
    floating = x.dtype.is_floating_point if is_torch(x) else np.issubdtype(x.dtype, np.floating)
    if not floating:
        raise ArgumentError(f"{name} must hold floating-point numbers, got dtype {x.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if x.ndim not in allowed:
            dims = " or ".join(map(str, allowed))
            raise ArgumentError(f"{name} must have {dims} dimensions, got shape {tuple(x.shape)}")
    if min_ndim is not None and x.ndim < min_ndim:
        raise ArgumentError(f"{name} must have at least {min_ndim} dimensions, got shape {tuple(x.shape)}")
    return x
