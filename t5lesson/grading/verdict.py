"""What the grader concludes: on one question (`Outcome`), on one submission (`Status`, `Graded`),
and on an entry of the folder that gets no row (`Skipped`).

The words are Kaggle learntools' (Correct, Incorrect, Not attempted, Error), with Partly correct
for code and Submitted for free text; `check()` in the notebook and the class grader print the
same ones. See docs/grading.md, "In the notebook: check() and hint()".
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, cast

from .protocol import Limits, RunEnd, Words


class Verdict(Words):
    """The word of one question's outcome (`Outcome.status`)."""

    CORRECT = "correct"
    PARTIAL = "partly correct"
    INCORRECT = "incorrect"
    NOT_ATTEMPTED = "not attempted"
    ERROR = "error"
    SUBMITTED = "submitted"


CORRECT, PARTIAL, INCORRECT = Verdict.CORRECT, Verdict.PARTIAL, Verdict.INCORRECT
NOT_ATTEMPTED, ERROR, SUBMITTED = Verdict.NOT_ATTEMPTED, Verdict.ERROR, Verdict.SUBMITTED


def format_points(points: float) -> str:
    """2, 1.5, 3.47: at most two decimals and no trailing zeros, so gradebooks stay readable."""
    text = f"{points:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


@dataclass(frozen=True)
class Outcome:
    """The verdict on one question: what `check()` prints and what the gradebook records."""

    question: str
    status: Verdict  # a word given as text (read back from grades.json) becomes the member: see __post_init__
    points: float
    max_points: float
    message: str = ""
    # the blocked references the answer called ("module:function"), as the harvested records carry
    # them: the only source of summary.md's list, never parsed from `message`
    blocked: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Verdict(self.status))  # a ValueError for a word that is none of them

    def line(self) -> str:
        """One line for the learner, e.g. `q4: Incorrect: count the offset as key - query. [0/1]`."""
        head = f"{self.question}: {self.status.capitalize()}"
        text = f"{head}: {self.message}" if self.message else head
        if self.status == SUBMITTED:
            return text
        return f"{text} [{format_points(self.points)}/{format_points(self.max_points)}]"


class Status(Words):
    """A submission's status in the gradebook."""

    GRADED = "graded"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too large"
    TIME_LIMIT = "time limit"
    STUCK = "stuck"
    KERNEL_DIED = "kernel died"
    KERNEL_BROKEN = "kernel broken"
    GRADER_ERROR = "grader error"


def status_of(ended: object) -> Status:
    """The gradebook status for a run that ended so: graded when it completed, the run's own word (a Status
    too) when it was stopped; a failed start, or anything unknown, is the grader's error."""
    if ended == RunEnd.COMPLETED:
        return Status.GRADED
    stopped = (RunEnd.TIME_LIMIT, RunEnd.STUCK, RunEnd.KERNEL_DIED, RunEnd.KERNEL_BROKEN)
    return Status(ended) if ended in stopped else Status.GRADER_ERROR


@dataclass
class Graded:
    """The verdict on one submission."""

    student: str
    file: str
    status: Status
    outcomes: list[Outcome]
    notes: list[str] = field(default_factory=list[str])
    free_text: dict[str, str] = field(default_factory=dict[str, str])
    seconds: float = 0.0
    error: str = ""  # a grader error's exception, for the summary (never shown to the student)
    # question id -> what reached into the grader's reading of it, or ran from its edited check cell
    flags: dict[str, list[str]] = field(default_factory=dict[str, list[str]])

    @property
    def total(self) -> float:
        return round(sum(o.points for o in self.outcomes), 2)


@dataclass(frozen=True)
class Skipped:
    """An entry of the submissions folder that has no row, and why."""

    relative: str
    reason: str


@dataclass(frozen=True)
class RunSettings:
    """The settings of one graded run that its reports name (summary.md, grades.json's "settings")."""

    limits: Limits = Limits()
    exercise: str = ""
    isolation: str = ""  # how the kernels were walled; "none (--isolation none)" when they were not
    memory: str = ""  # how a submission's memory was bounded
    seed: str | None = None  # the seed the hidden cases were drawn from

    @property
    def walled(self) -> bool:
        return not self.isolation.startswith("none")

    def to_json(self) -> dict[str, Any]:
        """The flat object grades.json keeps: every field of `Limits` beside the others, keys sorted."""
        doc = asdict(self)
        return dict(sorted({**doc.pop("limits"), **doc}.items()))

    @classmethod
    def from_json(cls, doc: object) -> RunSettings:
        """The settings read back from grades.json; what is missing keeps its default, what is unknown is left out."""
        found = cast("dict[str, Any]", doc) if isinstance(doc, dict) else {}
        limits = Limits(**{f.name: found[f.name] for f in fields(Limits) if f.name in found})
        text = {name: str(found[name]) for name in ("exercise", "isolation", "memory") if name in found}
        seed = None if found.get("seed") is None else str(found["seed"])
        return cls(limits, **text, seed=seed)
