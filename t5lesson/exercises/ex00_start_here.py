"""Exercise 00: one practice question, so a learner meets check() and hint() before the lessons.

Asked in notebooks/00_start_here.ipynb (not graded: there is no solutions/ notebook for it).
"""
from __future__ import annotations

from ..grading.questions.kinds import Numeric
from . import Exercise, id_of_module

EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Practice: read a number off the slider",
    questions=(
        Numeric(
            id="q1", points=1, name="answer_q1", tolerance=0.005, key="7ffbdaa56baa9ec3ec3ee14e",
            hints=(
                "move the slider to 3 and read the readout line under the figure.",
                "key B is the orange bar; give the weight as a number between 0 and 1.",
            ),
            feedback={"d9666eb890e236b5d317f9c3": "that is key A's weight; the question asks for key B."},
            objectives=(3,),
        ),
    ),
    practice=True,
)
