"""The learner's composition root, short and stable: `from t5lesson.check import checker`.

Every handed-out exercise notebook starts with `check, hint = checker("NN_name")`: the engine's
check() and hint() (`t5lesson.grading.check`) for this course's exercise of that id.
"""
from __future__ import annotations

from . import exercises
from .grading import check  # the engine's check() and hint(); this module binds them to the course
from .lessons.your_turn import TURNS as YOUR_TURNS
from .lessons.your_turn import hint as your_turn_hint

__all__ = ["checker", "Checker"]


def Checker(exercise_id: str) -> check.Checker:  # noqa: N802 (built like the class it returns)
    """The engine's Checker for the course's exercise `exercise_id`."""
    return check.Checker(exercises.get(exercise_id))


def checker(exercise_id: str):
    """(check, hint) bound to the course's exercise `exercise_id`, for the notebook's setup cell.

    hint() takes a question's id ("q1") or a your-turn cell's name ("weight_of_b": notebook 00 has
    both), one level more each time it is run.
    """
    exercise = exercises.get(exercise_id)
    engine = check.Checker(exercise)

    def hint(name: str) -> None:
        """Print the next hint for a question (such as "q1") or a your-turn cell (such as "weight_of_b")."""
        if name in YOUR_TURNS:
            your_turn_hint(name)
        elif name in exercise.ids:
            engine.hint(name)
        else:
            check.say(f"{name!r} is neither a question here ({', '.join(exercise.ids)}) nor a your-turn cell: "
                      "hint() takes a question's id or the name in a your-turn cell's first line.")

    return engine.check, hint
