"""The graded exercises: one module per exercise notebook, found by the notebook's id.

A module's name is its exercise's id: `ex01_unscaled_scores.py` holds exercise
"01_unscaled_scores", the questions of `solutions/01_unscaled_scores.ipynb`. Adding a module
here registers it; the ids come from the module names, in order. The questions themselves (ids,
points, kinds, hints, hashed keys, code cases) live here, in the package, so `check()` in the
notebook and the class grader share one definition and no answer sits in plain text next to
the question. The notebook must agree with this: `notebook_format.validate` checks its
exercise id, its title and every question's heading and points against the bank.
"""
from __future__ import annotations

import contextlib
import importlib
import pkgutil

from ..grading.exercise import Exercise

__all__ = ["Exercise", "get", "exercise_ids", "id_of_module", "one_torch_thread"]

PREFIX = "ex"


def id_of_module(module_name: str) -> str:
    """The exercise id a bank module defines: "...bank.ex01_unscaled_scores" -> "01_unscaled_scores"."""
    return module_name.rpartition(".")[2].removeprefix(PREFIX)


_MODULES = dict(sorted((id_of_module(m.name), m.name) for m in pkgutil.iter_modules(__path__)
                       if m.name.startswith(PREFIX) and m.name[len(PREFIX):][:2].isdigit()))


@contextlib.contextmanager
def one_torch_thread():
    """PyTorch on one thread while a bank computes references in the grader's process: the tensors
    are tiny, and on a machine whose cores are busy with kernels a thread pool makes each call tens of
    times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def exercise_ids() -> tuple[str, ...]:
    return tuple(_MODULES)


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; a KeyError that lists the known ids otherwise."""
    if exercise_id not in _MODULES:
        raise KeyError(f"no exercise {exercise_id!r}; known exercises: {', '.join(_MODULES)}")
    return importlib.import_module(f".{_MODULES[exercise_id]}", __name__).EXERCISE
