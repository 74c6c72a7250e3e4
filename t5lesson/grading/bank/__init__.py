"""The graded exercises: one module per exercise notebook, found by the notebook's id.

An exercise notebook (`solutions/01_unscaled_scores.ipynb`) names its id in its metadata; the
questions themselves (ids, points, kinds, hints, hashed keys, code cases) live here, in the
package, so `check()` in the notebook and the class grader share one definition and no answer
sits in plain text next to the question.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..questions import Question

__all__ = ["Exercise", "get", "exercise_ids"]

_MODULES = {
    "00_start_here": "ex00_start_here",
    "01_unscaled_scores": "ex01_unscaled_scores",
    "02_where_sqrt_d_went": "ex02_where_sqrt_d_went",
    "03_relative_position_buckets": "ex03_relative_position_buckets",
    "04_bias_heatmaps": "ex04_bias_heatmaps",
    "06_t5_layer": "ex06_t5_layer",
    "05_length_generalisation": "ex05_length_generalisation",
}


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook's questions, in the order they appear.

    `practice` marks an exercise that is not handed in (lesson 0's warm-up question): it has no
    solution notebook and does not count in the objective map.
    """

    id: str
    title: str
    questions: tuple[Question, ...]
    practice: bool = False

    def __getitem__(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        known = ", ".join(q.id for q in self.questions)
        raise KeyError(f"{question_id!r} is not a question of exercise {self.id} (its questions: {known})")

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)

    @property
    def auto_points(self) -> float:
        """The points the grader can award by itself (free-text answers are marked by hand)."""
        return float(sum(q.points for q in self.questions if q.auto_scored))


def exercise_ids() -> tuple[str, ...]:
    return tuple(_MODULES)


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; a KeyError that lists the known ids otherwise."""
    if exercise_id not in _MODULES:
        raise KeyError(f"no exercise {exercise_id!r}; known exercises: {', '.join(_MODULES)}")
    return importlib.import_module(f".{_MODULES[exercise_id]}", __name__).EXERCISE
