"""The class at a glance: class_report/*.csv, and the same tables as one plain page, report.html.

What an instructor acts on after a run: the questions missed most, the common wrong answers (a
misconception to address in class), the code cases failed most, how each run ended (with names),
the mean score per learning objective, and the answers that called a blocked reference or reached
into the grader's cells. Each is one `Table`, written as a CSV file and as a section of the page
(the jinja2 template templates/report.html.j2: tables only, no script, no figure, no request to any
network). A pure function of the verdicts, so a merged report is identical to a single run's. See
docs/grading.md, "The class at a glance: report.html".
"""
from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import jinja2

from ..exercise import Exercise
from ..questions.kinds import Code
from ..verdict import INCORRECT, NOT_ATTEMPTED, SUBMITTED, Graded, Outcome, Status, format_points
from .files import csv_text, inert
from .gradebook import flagged_readings, reference_hits

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
    if o.status == NOT_ATTEMPTED:
        return "not attempted"
    if o.status == SUBMITTED:
        return "submitted"
    if o.points >= o.max_points > 0:
        return "full"
    return "partial" if o.points > 0 else "zero"


def _num(value: float | None) -> str:
    """A share or a mean, to 4 decimals without trailing zeros; empty where there is none."""
    if value is None:
        return ""
    return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"


def _ranked(counter: Counter[_T]) -> list[tuple[_T, int]]:
    """(item, count), most frequent first; ties in the item's order."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


@dataclass
class _Tally:
    """What the graded submissions earned and answered, counted per question."""

    counts: dict[str, Counter[str]] = field(default_factory=dict[str, Counter[str]])  # question -> category -> n
    points: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # question -> points earned
    answered: Counter[str] = field(default_factory=Counter[str])  # question -> answers the grader could read
    wrong: dict[str, Counter[str]] = field(default_factory=dict[str, Counter[str]])  # question -> answer -> n
    feedback: dict[tuple[str, str], Counter[str]] = field(default_factory=dict[tuple[str, str], Counter[str]])
    failed: dict[str, Counter[int]] = field(default_factory=dict[str, Counter[int]])  # question -> case -> n
    ran: Counter[str] = field(default_factory=Counter[str])  # code question -> submissions whose function ran

    def count(self, g: Graded) -> None:
        for o in g.outcomes:
            q, summary = o.question, g.answers.get(o.question, {})
            self.counts.setdefault(q, Counter())[_category(o)] += 1
            self.points[q] += o.points
            if "answer" in summary:
                self.answered[q] += 1
                if o.status == INCORRECT:
                    answer = str(summary["answer"])
                    self.wrong.setdefault(q, Counter())[answer] += 1
                    self.feedback.setdefault((q, answer), Counter())[o.message] += 1
            failed: object = summary.get("failed")
            if isinstance(failed, list):
                self.ran[q] += 1
                self.failed.setdefault(q, Counter()).update(i for i in cast("list[object]", failed) if isinstance(i, int))

    def n(self, question: str) -> int:
        return sum(self.counts.get(question, Counter()).values())

    def mean(self, exercise: Exercise, question: str) -> float | None:
        """The mean fraction of the points earned on an automatically graded question."""
        q, n = exercise[question], self.n(question)
        return self.points[question] / (n * q.points) if n and q.auto_scored and q.points else None


def _questions(exercise: Exercise, tally: _Tally, titles: Mapping[str, str]) -> Table:
    """Automatically graded questions by mean score, lowest first (unanswered last), then free text."""
    def key(q: str) -> tuple[bool, float, str]:
        mean = tally.mean(exercise, q)
        return (not exercise[q].auto_scored, 2.0 if mean is None else mean, q)

    rows: list[tuple[object, ...]] = []
    for q in sorted(exercise.ids, key=key):
        question, n, counts = exercise[q], tally.n(q), tally.counts.get(q, Counter[str]())
        mean = _num(tally.points[q] / n) if n and question.auto_scored else ""
        rows.append((q, question.kind, titles.get(q, ""), format_points(question.points), n, mean,
                     _num(tally.mean(exercise, q)), *(counts[c] for c in CATEGORIES),
                     " ".join(str(o) for o in question.objectives)))
    return Table("questions", "Questions, most missed first",
                 "Over the graded submissions: the mean points, and how many earned full, partial or zero "
                 "marks, left the question blank, or answered a free-text question (marked by hand).",
                 ("question", "kind", "title", "max_points", "graded_submissions", "mean_points", "mean_fraction",
                  *(c.replace(" ", "_") for c in CATEGORIES), "objectives"), rows)


def _wrong_answers(exercise: Exercise, tally: _Tally) -> Table:
    rows: list[tuple[object, ...]] = []
    for q in exercise.ids:
        answered = tally.answered[q]
        for answer, count in _ranked(tally.wrong.get(q, Counter[str]()))[:TOP_ANSWERS]:
            feedback = _ranked(tally.feedback[(q, answer)])[0][0]  # what most of its givers were told
            rows.append((q, answer, count, answered, _num(count / answered), feedback))
    return Table("wrong_answers", "Most common wrong answers",
                 "Multiple-choice and numeric questions: a large group behind one wrong answer is a misconception "
                 "to address in class.", ("question", "answer", "count", "answered", "share_of_answered", "feedback"),
                 rows)


def _code_cases(exercise: Exercise, tally: _Tally) -> Table:
    rows: list[tuple[object, ...]] = []
    for q in exercise.questions:
        if not isinstance(q, Code):
            continue
        ran = tally.ran[q.id]
        for i, failed in _ranked(tally.failed.get(q.id, Counter[int]()))[:TOP_CASES]:
            if 0 <= i < len(q.cases):
                case = q.cases[i]
                rows.append((q.id, i + 1, case.call_text(q.name), case.topic, failed, ran, _num(failed / ran)))
    drawn = any(isinstance(q, Code) and q.drawn_cases for q in exercise.questions)
    note = "The cases each code question failed most often, over the submissions whose function ran."
    if drawn:
        note += " Each submission met cases of its own, drawn for the same purposes: a call shown is one of them."
    return Table("code_cases", "Code questions: the cases that failed most", note,
                 ("question", "case", "call", "topic", "failed", "attempted", "share_failed"), rows)


def _statuses(graded: Sequence[Graded]) -> Table:
    """A row per status, the problems first (in the order of `Status`), "graded" last."""
    names: dict[str, list[str]] = {}
    for g in graded:
        names.setdefault(str(g.status), []).append(g.student)
    order = [str(s) for s in Status if s != Status.GRADED] + [str(Status.GRADED)]
    rows: list[tuple[object, ...]] = [(s, len(names[s]), " ".join(names[s])) for s in order if s in names]
    return Table("statuses", "Statuses", "How each run ended. Anything but \"graded\" got 0 for what could not be "
                 "read; the student's feedback file says why.", ("status", "count", "students"), rows)


def _objectives(exercise: Exercise, tally: _Tally) -> Table:
    """Per learning objective: its questions and the mean score on those graded automatically."""
    questions: dict[int, list[str]] = {}
    for q in exercise.questions:
        for objective in q.objectives:
            questions.setdefault(objective, []).append(q.id)
    rows: list[tuple[object, ...]] = []
    for objective, ids in sorted(questions.items()):
        auto = [exercise[q] for q in ids if exercise[q].auto_scored]
        possible = sum(q.points * tally.n(q.id) for q in auto)
        earned = sum(tally.points[q.id] for q in auto)
        rows.append((objective, " ".join(ids), _num(earned / possible) if possible else ""))
    note = ("The mean score of each objective's automatically graded questions (points earned over points "
            "possible)." if rows else "No objectives recorded for this exercise's questions.")
    return Table("objectives", "Learning objectives", note, ("objective", "questions", "mean_fraction"), rows)


def class_tables(exercise: Exercise, graded: Sequence[Graded], titles: Mapping[str, str] | None = None) -> list[Table]:
    """Every table of the report; question statistics count the submissions whose status is "graded"."""
    graded = sorted(graded, key=lambda g: g.student)
    tally = _Tally()
    for g in graded:
        if g.status == Status.GRADED:
            tally.count(g)
    hits = Table("reference_hits", "The blocked reference was called", "These answers called an implementation "
                 "that is switched off while answers are graded; the cases that called it earned nothing.",
                 ("student", "question", "what"), list(reference_hits(graded)))
    flagged = Table("flagged", "Notebooks that reached into the grader's cells", "Code of these notebooks ran around "
                    "the grader's reading of an answer, or from an edited check cell; such a reading earned at most "
                    "a third of its points.", ("student", "questions", "what"), list(flagged_readings(graded)))
    return [_questions(exercise, tally, titles or {}), _wrong_answers(exercise, tally), _code_cases(exercise, tally),
            _statuses(graded), _objectives(exercise, tally), hits, flagged]


@functools.cache
def _template() -> jinja2.Template:
    # autoescape escapes every value; `finalize` first makes it `inert` (no escape sequences or
    # invisible characters), as every other report does.
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
