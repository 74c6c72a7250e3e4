"""What each student answered, in a form a class report can count.

`summarise` turns the cleaned records the grader scored into small JSON-able summaries, one per
question, kept with each verdict (`Graded.answers`) and in grades.json: the chosen letters or the
number (to 4 significant digits), or the indices of the failed code cases; nothing for an answer
that is missing or unreadable. It calls no method of anything from the student's kernel. See
docs/grading.md, "The class at a glance: report.html".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..records import Plain, as_dict, describe, missing, value_of
from .kinds import Code, MultipleChoice, Numeric, Question

if TYPE_CHECKING:
    from ..exercise import Exercise

__all__ = ["summarise", "summary", "answer_text"]


def answer_text(question: MultipleChoice | Numeric, value: Plain) -> str:
    """How a multiple-choice or numeric answer reads in a report ('B', 'A, C', '12', '1.35')."""
    if isinstance(question, MultipleChoice):
        letters = question.letters(value)
        if isinstance(letters, list):
            return ", ".join(sorted(set(letters)))
    else:
        number = question.number(value)
        if not isinstance(number, str):
            return str(int(number)) if float(number).is_integer() and abs(number) < 1e15 else f"{number:.4g}"
    if value.get("t") == "str":
        return repr(str(value["v"])[:40])
    return describe(value)


def summary(question: Question, record: object) -> dict[str, Any] | None:
    """The summary of one answer (see module doc), or None."""
    if missing(record):
        return None
    if isinstance(question, Code):  # the indices of the cases that were not right, once the function ran for real
        results = question.ran(record)
        if not results or all((as_dict(r) or {}).get("not_implemented") for r in results):
            return None
        return {"failed": [i for i, (want, got) in enumerate(zip(question.expected, results, strict=True))
                           if not question.right(want, got)]}
    if isinstance(question, (MultipleChoice, Numeric)):
        value = value_of(record)
        return None if value.get("t") == "none" else {"answer": answer_text(question, value)}
    return None


def summarise(exercise: Exercise, records: Mapping[str, object]) -> dict[str, dict[str, Any]]:
    """{question id: summary} for every auto-scored question with something to count."""
    out: dict[str, dict[str, Any]] = {}
    for question in exercise.questions:
        if question.auto_scored and records.get(question.id) is not None:
            try:
                found = summary(question, records[question.id])
            except Exception:  # a question kind this does not know: no summary, never a lost grade
                found = None
            if found is not None:
                out[question.id] = found
    return out
