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

import importlib
import pkgutil
from dataclasses import dataclass, replace

from ..questions import Question

__all__ = ["Exercise", "get", "exercise_ids", "id_of_module"]

PREFIX = "ex"


def id_of_module(module_name: str) -> str:
    """The exercise id a bank module defines: "...bank.ex01_unscaled_scores" -> "01_unscaled_scores"."""
    return module_name.rpartition(".")[2].removeprefix(PREFIX)


_MODULES = dict(sorted((id_of_module(m.name), m.name) for m in pkgutil.iter_modules(__path__)
                       if m.name.startswith(PREFIX) and m.name[len(PREFIX):][:2].isdigit()))


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook's questions, in the order they appear.

    `practice` marks an exercise that is not handed in (lesson 0's warm-up question): it has no
    solution notebook and does not count in the objective map.

    `salted` says the keys were computed with the exercise id in the salt (`answer_hash(qid,
    answer, exercise_id)`); every question is then given that salt, so one answer has a different
    key in every exercise. An exercise whose stored keys predate that keeps `salted=False`.
    """

    id: str
    title: str
    questions: tuple[Question, ...]
    practice: bool = False
    salted: bool = False

    def __post_init__(self):
        if self.salted:
            object.__setattr__(self, "questions", tuple(replace(q, salt=self.id) for q in self.questions))

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
