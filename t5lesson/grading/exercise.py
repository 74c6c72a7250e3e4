"""What the engine is handed: an `Exercise` (its questions, in order) and a `Catalogue` of them.

The engine knows no course. The course's exercises live in `t5lesson.exercises`; the two
composition roots, `t5lesson.check` (for learners) and `t5lesson.grade` (for instructors), hand
the engine an exercise or the catalogue to look exercises up in.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .errors import SettingsError
from .questions.kinds import Code, Question

# How many sets of hidden cases the grader draws per question from one seed, for `Exercise.for_student`
# to mix: a table of one run's cases then answers about a quarter of another's.
VARIANTS = 4


def _digest(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:16], "big")


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook's questions, in the order they appear; each is given the exercise id as
    its salt (`answer_hash`). `practice` marks one that is not handed in (lesson 0's warm-up): no
    solution notebook, not in the objective map."""

    id: str
    title: str
    questions: tuple[Question, ...]
    practice: bool = False
    seed: str | None = None  # set by `drawn`: the instructor's seed the grading cases were drawn from
    # modules the notebook's provided cells load that read a blocked module as they load: the grader's
    # first cell imports them before it blocks anything, so those cells run in a graded kernel too
    load_first: tuple[str, ...] = ()
    pool: _Pool | None = field(default=None, compare=False, repr=False)  # set by `drawn`: every drawn set

    def __post_init__(self):
        object.__setattr__(self, "questions", tuple(replace(q, salt=self.id) for q in self.questions))

    def __getitem__(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        known = ", ".join(q.id for q in self.questions)
        raise KeyError(f"{question_id!r} is not a question of exercise {self.id} (its questions: {known})")

    def drawn(self, seed: str, variants: int = VARIANTS) -> Exercise:
        """The exercise as the grader runs it: every code question's hidden cases drawn from `seed`.

        Each question draws from its own generator, seeded by a hash of (seed, exercise id, question id),
        so one seed gives the same cases on every machine. The result's questions hold the first of
        `variants` sets; `for_student` mixes all of them."""
        if not isinstance(seed, str) or not seed:  # pyright: ignore[reportUnnecessaryIsInstance] (a caller's value)
            raise SettingsError("the seed of the hidden cases must be a non-empty text")
        pool = _Pool(self, seed, variants)
        questions = tuple(pool.variant(q, 0) if isinstance(q, Code) and q.hidden else q for q in self.questions)
        return replace(self, questions=questions, seed=seed, pool=pool)

    def for_student(self, key: str, expected: bool = False) -> Exercise:
        """The exercise as one submission meets it: case i of each hidden question taken from the
        set a hash of (seed, question, `key`, i) picks. `key` names the submission (its student
        and a hash of its bytes), so a regrade meets the same cases and anything else other ones.
        With `expected`, each case's expected result comes with it, from the set it was taken from
        (computed once per set, in this process)."""
        if self.pool is None:
            return self
        mixed = replace(self, questions=tuple(self.pool.mixed(q, key) for q in self.questions))
        for q in mixed.questions if expected else ():
            if isinstance(q, Code):
                picks = self.pool.picks(q, key) if q.hidden else [0] * len(q.cases)
                q.__dict__["expected"] = tuple(self.pool.expected(q, v)[i] for i, v in enumerate(picks))
        return mixed

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


def find(catalogue: Catalogue, exercise_id: str) -> Exercise:
    """The catalogue's exercise `exercise_id` (one the instructor named); a SettingsError listing the known ids."""
    known = catalogue.exercise_ids()
    if exercise_id not in known:
        raise SettingsError(f"there is no exercise {exercise_id!r}; the course has {', '.join(known)}")
    return catalogue.get(exercise_id)


class _Pool:
    """The hidden cases one seed gives: `count` drawn sets per question, each drawn when first
    asked for (once, whichever thread asks), and the picks that mix them per submission."""

    def __init__(self, exercise: Exercise, seed: str, count: int):
        if count < 1:
            raise ValueError("at least one set of hidden cases must be drawn")
        self.exercise_id, self.seed, self.count = exercise.id, seed, count
        self.originals = {q.id: q for q in exercise.questions if isinstance(q, Code)}
        self.sets: dict[tuple[str, int], Code] = {}
        # one lock for every draw and every expected result: the recipes and references seed torch's global
        # generator (seq2seq.random_model), which two threads must not use at once
        self.lock = threading.RLock()

    def variant(self, q: Code, v: int) -> Code:
        """Set `v` of question `q` (the first keeps the digest every earlier grade used)."""
        import numpy as np

        with self.lock:
            if (q.id, v) not in self.sets:
                parts = ("t5lesson/hidden", self.seed, self.exercise_id, q.id) + ((v,) if v else ())
                self.sets[q.id, v] = self.originals[q.id].drawn(np.random.default_rng(_digest(*parts)))
            return self.sets[q.id, v]

    def expected(self, q: Code, v: int) -> tuple[Any, ...]:
        """The expected results of set `v` of `q`, computed once, in this process."""
        with self.lock:
            return self.variant(q, v).expected

    def picks(self, q: Code, key: str) -> list[int]:
        """Which set each case of `q` comes from, for the submission `key`."""
        n = len(self.variant(q, 0).cases)
        return [_digest("t5lesson/pick", self.seed, self.exercise_id, q.id, key, i) % self.count for i in range(n)]

    def mixed(self, q: Question, key: str) -> Question:
        if not isinstance(q, Code) or not q.hidden:
            return q
        sets = [self.variant(q, v) for v in range(self.count)]
        if len({len(s.cases) for s in sets}) != 1:
            raise ValueError(f"{q.id}: the recipe drew sets of different sizes; it must draw one case per topic")
        return replace(q, cases=tuple(sets[v].cases[i] for i, v in enumerate(self.picks(q, key))))

    def warm(self) -> None:
        """Draw every set and compute its expected results (the grader does it while kernels run)."""
        for q in self.originals.values():
            for v in range(self.count if q.hidden else 1):
                self.expected(q, v)
