"""What each student answered, in a form a class report can count.

The gradebook keeps points; to say *which* wrong answers a class gave, and which code cases
failed most, the class report needs a little more. `summarise` turns the plain records the
grader scored (see `t5lesson.grading.questions.kinds`) into small JSON-able summaries, one per
question, kept with each verdict (`Graded.answers`) and in grades.json:

- multiple choice: `{"answer": "A, C"}` (the chosen letters), or how the answer reads when it
  is not letters (`'twelve'`, `a list`);
- numeric: `{"answer": "12"}` (floats to 4 significant digits, so near-equal answers group);
- code: `{"failed": [3, 17]}`, the indices of the cases that were not right (a learner who
  never wrote the function, the stub, gets no entry);
- anything unanswered or unreadable: no entry.

This runs in the grader's process on records that `clean_record` already checked; it calls
no method of anything from the student's kernel.
"""
from __future__ import annotations

from .kinds import Code, MultipleChoice, Numeric, _describe, _missing, _value

__all__ = ["summarise", "summary", "answer_text", "failed_cases"]


def answer_text(question, value: dict) -> str:
    """How a multiple-choice or numeric answer reads in a report ('B', 'A, C', '12', '1.35')."""
    if isinstance(question, MultipleChoice):
        letters = question._letters(value)
        if isinstance(letters, list):
            return ", ".join(sorted(set(letters)))
    else:
        number = question._number(value)
        if not isinstance(number, str):
            if float(number).is_integer() and abs(number) < 1e15:
                return str(int(number))
            return f"{number:.4g}"
    if value.get("t") == "str":
        return repr(value["v"][:40])
    return _describe(value)


def _case_right(question: Code, want, got) -> bool:
    """The grader's own per-case rule (`Code._problem`, which every code kind defines)."""
    return isinstance(got, dict) and "ok" in got and question._problem(want, got) is None


def failed_cases(question: Code, record) -> list[int] | None:
    """Indices of the cases that were not right, or None when the function never ran for real."""
    results = record.get("cases") if isinstance(record, dict) else None
    cases = getattr(question, "cases", None)
    if record.get("status") != "ran" or not isinstance(results, list) or not cases or len(results) != len(cases):
        return None
    if all(isinstance(r, dict) and r.get("not_implemented") for r in results):
        return None
    return [i for i, (want, got) in enumerate(zip(question.expected, results, strict=True))
            if not _case_right(question, want, got)]


def summary(question, record) -> dict | None:
    """The summary of one answer (see module doc), or None."""
    if _missing(record):
        return None
    if isinstance(question, Code):
        failed = failed_cases(question, record)
        return None if failed is None else {"failed": failed}
    if isinstance(question, (MultipleChoice, Numeric)):
        value = _value(record)
        if value.get("t") == "none":
            return None
        return {"answer": answer_text(question, value)}
    return None


def summarise(exercise, records: dict) -> dict[str, dict]:
    """{question id: summary} for every auto-scored question with something to count."""
    out = {}
    for question in exercise.questions:
        if question.auto_scored and records.get(question.id) is not None:
            try:
                found = summary(question, records[question.id])
            except Exception:  # a question kind this does not know: no summary, never a lost grade
                found = None
            if found is not None:
                out[question.id] = found
    return out
