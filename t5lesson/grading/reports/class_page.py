"""The class at a glance: what an instructor acts on after a run, as class_report/*.csv and report.html.

Each `Table` (questions missed most, common wrong answers, code cases failed most, statuses,
objectives, the answers that called a blocked reference or reached into the grader's cells) is a
CSV file and a section of one plain page (templates/report.html.j2: tables only, no script, nothing
loaded). A pure function of the verdicts.
See docs/grading.md, "The class at a glance: report.html".
"""
from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import jinja2

from ..exercise import Exercise
from ..questions.kinds import Code, Question
from ..verdict import INCORRECT, NOT_ATTEMPTED, SUBMITTED, Graded, Outcome, Status, format_points
from .files import csv_text, inert
from .gradebook import FLAGGED, REFERENCE_HITS, flagged_readings, reference_hits

__all__ = ["Table", "class_tables", "class_report_files"]

TOP_ANSWERS = 5
TOP_CASES = 10
CATEGORIES = ("full", "partial", "zero", "not attempted", "submitted")
_T = TypeVar("_T", str, int)


@dataclass(frozen=True)
class Table:
    """One table of the report: class_report/<name>.csv, and a section of report.html."""

    name: str
    title: str
    note: str
    header: tuple[str, ...]
    rows: list[tuple[object, ...]]


def _category(o: Outcome) -> str:
    if o.status in (NOT_ATTEMPTED, SUBMITTED):
        return str(o.status)  # "not attempted", "submitted"
    if o.points >= o.max_points > 0:
        return "full"
    return "partial" if o.points > 0 else "zero"


def _num(value: float | None) -> str:
    """A share or a mean, to 4 decimals without trailing zeros; empty where there is none."""
    return "" if value is None else f"{value:.4f}".rstrip("0").rstrip(".") or "0"


def _ranked(counter: Counter[_T]) -> list[tuple[_T, int]]:
    """(item, count), most frequent first; ties in the item's order."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


Answers = dict[str, list[tuple[Outcome, dict[str, Any]]]]  # question -> its outcomes, each with its answer summary


def _mean(q: Question, answers: Answers) -> float | None:
    """The mean fraction of its points an automatically graded question earned."""
    n = len(answers[q.id])
    return sum(o.points for o, _ in answers[q.id]) / (n * q.points) if n and q.auto_scored and q.points else None


def _questions(exercise: Exercise, answers: Answers, titles: Mapping[str, str]) -> Table:
    """Automatically graded questions by mean score, lowest first (unanswered last), then free text."""
    rows: list[tuple[object, ...]] = []
    rank = {q.id: (not q.auto_scored, 2.0 if (m := _mean(q, answers)) is None else m, q.id) for q in exercise.questions}
    for q in sorted(exercise.questions, key=lambda q: rank[q.id]):
        n, counts = len(answers[q.id]), Counter(_category(o) for o, _ in answers[q.id])
        mean = _num(sum(o.points for o, _ in answers[q.id]) / n) if n and q.auto_scored else ""
        rows.append((q.id, q.kind, titles.get(q.id, ""), format_points(q.points), n, mean, _num(_mean(q, answers)),
                     *(counts[c] for c in CATEGORIES), " ".join(str(o) for o in q.objectives)))
    return Table("questions", "Questions, most missed first",
                 "Over the graded submissions: the mean points, and how many earned full, partial or zero "
                 "marks, left the question blank, or answered a free-text question (marked by hand).",
                 ("question", "kind", "title", "max_points", "graded_submissions", "mean_points", "mean_fraction",
                  *(c.replace(" ", "_") for c in CATEGORIES), "objectives"), rows)


def _wrong_answers(exercise: Exercise, answers: Answers) -> Table:
    rows: list[tuple[object, ...]] = []
    for q in exercise.questions:
        given = [(o, str(a["answer"])) for o, a in answers[q.id] if "answer" in a]
        wrong = [(o.message, answer) for o, answer in given if o.status == INCORRECT]
        for answer, count in _ranked(Counter(answer for _, answer in wrong))[:TOP_ANSWERS]:
            feedback = _ranked(Counter(message for message, a in wrong if a == answer))[0][0]
            rows.append((q.id, answer, count, len(given), _num(count / len(given)), feedback))
    return Table("wrong_answers", "Most common wrong answers",
                 "Multiple-choice and numeric questions, with the feedback most of an answer's givers got: a large "
                 "group behind one wrong answer is a misconception to address in class.",
                 ("question", "answer", "count", "answered", "share_of_answered", "feedback"), rows)


def _code_cases(exercise: Exercise, answers: Answers) -> Table:
    rows: list[tuple[object, ...]] = []
    code = [q for q in exercise.questions if isinstance(q, Code)]
    for q in code:
        ran: list[list[object]] = [a["failed"] for _, a in answers[q.id] if isinstance(a.get("failed"), list)]
        failed = Counter(i for cases in ran for i in cases if isinstance(i, int) and 0 <= i < len(q.cases))
        for i, n in _ranked(failed)[:TOP_CASES]:
            rows.append((q.id, i + 1, q.cases[i].call_text(q.name), q.cases[i].topic, n, len(ran), _num(n / len(ran))))
    note = "The cases each code question failed most often, over the submissions whose function ran."
    if any(q.drawn_cases for q in code):
        note += " Each submission met cases of its own, drawn for the same purposes: a call shown is one of them."
    return Table("code_cases", "Code questions: the cases that failed most", note,
                 ("question", "case", "call", "topic", "failed", "attempted", "share_failed"), rows)


def _statuses(graded: Sequence[Graded]) -> Table:
    """A row per status, the problems first (in the order of `Status`), "graded" last."""
    order = [s for s in Status if s != Status.GRADED] + [Status.GRADED]
    rows: list[tuple[object, ...]] = [(str(s), len(names), " ".join(names)) for s in order
                                      if (names := [g.student for g in graded if g.status == s])]
    return Table("statuses", "Statuses", "How each run ended. Anything but \"graded\" got 0 for what could not be "
                 "read; the student's feedback file says why.", ("status", "count", "students"), rows)


def _objectives(exercise: Exercise, answers: Answers) -> Table:
    """Per learning objective: its questions and the mean score on those graded automatically."""
    questions: dict[int, list[Question]] = {}
    for q in exercise.questions:
        for objective in q.objectives:
            questions.setdefault(objective, []).append(q)
    rows: list[tuple[object, ...]] = []
    for objective, qs in sorted(questions.items()):
        auto = [q for q in qs if q.auto_scored]
        possible = sum(q.points * len(answers[q.id]) for q in auto)
        earned = sum(o.points for q in auto for o, _ in answers[q.id])
        rows.append((objective, " ".join(q.id for q in qs), _num(earned / possible) if possible else ""))
    note = ("The mean score of each objective's automatically graded questions (points earned over points "
            "possible)." if rows else "No objectives recorded for this exercise's questions.")
    return Table("objectives", "Learning objectives", note, ("objective", "questions", "mean_fraction"), rows)


def class_tables(exercise: Exercise, graded: Sequence[Graded], titles: Mapping[str, str] | None = None) -> list[Table]:
    """Every table of the report; question statistics count the submissions whose status is "graded"."""
    graded = sorted(graded, key=lambda g: g.student)
    answers: Answers = {q.id: [] for q in exercise.questions}
    for g in graded:
        for o in g.outcomes if g.status == Status.GRADED else []:
            answers.setdefault(o.question, []).append((o, g.answers.get(o.question, {})))
    hits = Table("reference_hits", *REFERENCE_HITS, ("student", "question", "what"), list(reference_hits(graded)))
    flagged = Table("flagged", *FLAGGED, ("student", "questions", "what"), list(flagged_readings(graded)))
    return [_questions(exercise, answers, titles or {}), _wrong_answers(exercise, answers),
            _code_cases(exercise, answers), _statuses(graded), _objectives(exercise, answers), hits, flagged]


@functools.cache
def _template() -> jinja2.Template:
    # every value is made `inert` (`finalize`), then escaped (autoescape)
    loader = jinja2.PackageLoader(__name__.rpartition(".")[0], "templates")
    environment = jinja2.Environment(loader=loader, autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                     keep_trailing_newline=True, undefined=jinja2.StrictUndefined, finalize=inert)
    return environment.get_template("report.html.j2")


def class_report_files(exercise: Exercise, graded: Sequence[Graded],
                       titles: Mapping[str, str] | None = None) -> dict[str, str]:
    """{relative path: text}: report.html and class_report/<table>.csv."""
    tables = class_tables(exercise, graded, titles)
    ok = sum(1 for g in graded if g.status == Status.GRADED)
    page = _template().render(title=exercise.title, id=exercise.id, submissions=len(graded), graded=ok,
                              out_of=format_points(exercise.auto_points), tables=tables)
    return {"report.html": page, **{f"class_report/{t.name}.csv": csv_text(list(t.header), t.rows) for t in tables}}
