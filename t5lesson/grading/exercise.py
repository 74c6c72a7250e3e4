"""What the engine is handed: an `Exercise` (its questions, in order) and a `Catalogue` of them.

The engine knows no course. The course's exercises live in `t5lesson.exercises`; the two
composition roots, `t5lesson.check` (for learners) and `t5lesson.grade` (for instructors), hand
the engine an exercise or the catalogue to look exercises up in.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Protocol

from .questions.kinds import Question

__all__ = ["Exercise", "Catalogue"]


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
    seed: str | None = None  # set by `drawn`: the instructor's seed the grading cases were drawn from

    def __post_init__(self):
        if self.salted:
            object.__setattr__(self, "questions", tuple(replace(q, salt=self.id) for q in self.questions))

    def __getitem__(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        known = ", ".join(q.id for q in self.questions)
        raise KeyError(f"{question_id!r} is not a question of exercise {self.id} (its questions: {known})")

    def drawn(self, seed: str) -> Exercise:
        """The exercise as the grader runs it: every code question's hidden cases drawn from `seed`.

        Each question draws from its own generator, seeded by a hash of (seed, exercise id,
        question id), so one seed gives the same cases on every machine and in every shard, and
        a change to one question's recipe leaves the others' cases as they were. The cases the
        learner's `check()` runs ship with the package; these do not exist until grading.
        """
        import numpy as np

        if not isinstance(seed, str) or not seed:
            raise ValueError("the seed of the hidden cases must be a non-empty text")
        questions = []
        for q in self.questions:
            if getattr(q, "hidden", ""):
                digest = hashlib.sha256(f"t5lesson/hidden|{seed}|{self.id}|{q.id}".encode()).digest()
                q = q.drawn(np.random.default_rng(int.from_bytes(digest[:16], "big")))
            questions.append(q)
        return replace(self, questions=tuple(questions), seed=seed)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)

    @property
    def auto_points(self) -> float:
        """The points the grader can award by itself (free-text answers are marked by hand)."""
        return float(sum(q.points for q in self.questions if q.auto_scored))


class Catalogue(Protocol):
    """Where the engine looks an exercise up by its id (a module such as `t5lesson.exercises`)."""

    def get(self, exercise_id: str) -> Exercise: ...

    def exercise_ids(self) -> tuple[str, ...]: ...
