"""The start-here notebook's two helpers: its your-turn cell (`weight_of_b`) and one `hint` for everything.

Notebook 00 shows both ways the course answers a learner: a practice exercise question (`check("q1")`,
`hint("q1")`) and a your-turn cell (`weight_of_b`). Both ask for hints by name, so `checker` here hands
the notebook a `hint` that knows both: a your-turn cell's name gets that cell's hints, a question's id
gets the question's.
"""
from __future__ import annotations

import numpy as np

from ..scores import softmax
from . import your_turn as turns

__all__ = ["checker", "weight_of_b", "WEIGHT_OF_B_CASES", "WEIGHT_OF_B_HINTS"]


def weight_of_b(gap):
    """Key B's softmax weight when the two scores are [0, gap]: the course's answer to 00's your-turn cell."""
    return float(softmax(np.array([0.0, float(gap)]))[1])


# Gaps on both sides of 0, whole and fractional, small and large enough that key B takes nearly all
# the weight (the slider goes to 8; 12.5 is past it), so a formula that is right only at 0 or only
# for positive gaps is caught.
WEIGHT_OF_B_CASES = ((0.0,), (3.0,), (6.0,), (-2.0,), (0.5,), (-7.25,), (1.75,), (12.5,))

WEIGHT_OF_B_HINTS = (
    "how does a softmax turn a row of scores into weights? Each key gets its score exponentiated, "
    "divided by the total over all keys. What is the exponential of key A's score, 0?",
    "key A contributes e to the power 0, which is 1; key B contributes e to the power gap. Key B's "
    "weight is its own share of the total of those two, a number between 0 and 1 that grows with gap.",
    "return np.exp(gap) / (1 + np.exp(gap)), which is the same as 1 / (1 + np.exp(-gap)).",
)


def _weight_of_b_turn():
    from .your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return Turn(reference=weight_of_b, cases=lambda: WEIGHT_OF_B_CASES, hints=WEIGHT_OF_B_HINTS)


TURNS = {"weight_of_b": _weight_of_b_turn()}


def checker(exercise_id: str = "00_start_here"):
    """(check, hint) for notebook 00: the exercise's check, and a hint that also knows the your-turn cells.

    hint("q1") gives the practice question's hints, hint("weight_of_b") the your-turn cell's, each
    one level more every time it is run.
    """
    from .. import exercises  # here: the live (browser) copy of notebook 00 imports this module without the grader
    from ..check import checker as exercise_checker

    check, question_hint = exercise_checker(exercise_id)
    questions = exercises.get(exercise_id).ids

    def hint(name: str) -> None:
        """Print the next hint for a question (such as "q1") or a your-turn cell (such as "weight_of_b")."""
        if name in turns.TURNS:
            turns.hint(name)
        elif name in questions:
            question_hint(name)
        else:
            print(f"{name!r} is neither a question here ({', '.join(questions)}) nor a your-turn cell "
                  f"(such as weight_of_b): hint() takes the name a question or a your-turn cell gives.")

    return check, hint
