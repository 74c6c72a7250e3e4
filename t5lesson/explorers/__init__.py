"""Slider explorers: a few controls plus one matplotlib figure, updated in place.

Every interactive figure in the lessons is an `Explorer` subclass (see `base.py`). The lessons
register theirs in `REGISTRY` so the benchmark and the browser test find all of them.
"""
import importlib
import pkgutil

from .base import REGISTRY, Explorer, Param, register

__all__ = ["Explorer", "Param", "REGISTRY", "register", "load_all"]


def load_all() -> dict:
    """Import every explorer module in this package and return the registry (name -> class)."""
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    return dict(REGISTRY)
