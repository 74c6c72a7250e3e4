"""The learner's composition root, short and stable: `from t5lesson.check import checker`.

Every handed-out exercise notebook starts with `check, hint = checker("NN_name")`: the engine's
check() and hint() (`t5lesson.grading.check`) for this course's exercise of that id.
"""
from __future__ import annotations

from . import exercises
from .grading import check  # the engine's check() and hint(); this module binds them to the course

__all__ = ["checker", "Checker"]


def Checker(exercise_id: str) -> check.Checker:  # noqa: N802 (built like the class it returns)
    """The engine's Checker for the course's exercise `exercise_id`."""
    return check.Checker(exercises.get(exercise_id))


def checker(exercise_id: str):
    """(check, hint) bound to the course's exercise `exercise_id`, for the notebook's setup cell."""
    return check.checker(exercises.get(exercise_id))
