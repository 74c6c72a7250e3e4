"""The start-here notebook's your-turn cell (`weight_of_b`): the course's version, its cases and hints.

Notebook 00 shows both ways the course answers a learner, a practice exercise question and this
your-turn cell; its one `hint` serves both (`t5lesson.check.checker`).
"""
from __future__ import annotations

import numpy as np

from ..scores import softmax

__all__ = ["weight_of_b", "WEIGHT_OF_B_CASES", "WEIGHT_OF_B_HINTS"]


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

