"""The grader's outputs: gradebook CSV, one feedback file per student, the free-text sheet.

Everything here is a pure function of the verdicts (no clock, no paths of the machine), so
grading the same folder twice gives the same files. Files are written atomically (a
temporary file in the same folder, then a rename), and only by the grader's own process,
after every submission has run.
"""
from __future__ import annotations

import csv
import io
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..exercise import Exercise
from ..questions.kinds import FreeText
from ..verdict import Graded, RunSettings, Skipped, format_points
from .files import atomic_write, code_span, csv_cell, inert, md_text, safe_name

__all__ = ["write_reports", "gradebook_text", "feedback_text", "free_text_sheet", "summary_text", "reference_hits",
           "flagged_readings"]


def gradebook_text(exercise: Exercise, graded: list[Graded]) -> str:
    """One row per student, one column per question (points; empty for free text), total, status."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", *exercise.ids, "total", "status"])
    for g in sorted(graded, key=lambda g: g.student):
        points = {o.question: format_points(o.points) for o in g.outcomes if exercise[o.question].auto_scored}
        writer.writerow([csv_cell(inert(g.student)), *(points.get(q, "") for q in exercise.ids),
                         format_points(g.total), csv_cell(inert(g.status))])
    return buffer.getvalue()


def free_text_sheet(exercise: Exercise, graded: list[Graded]) -> str:
    """The free-text answers, one row per student and question, with an empty points column and the
    question's rubric (the elements of a good answer and their points) beside each answer."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "question", "max_points", "points", "answer", "rubric"])
    questions = [q for q in exercise.questions if not q.auto_scored]
    for g in sorted(graded, key=lambda g: g.student):
        for q in questions:
            answer = g.free_text.get(q.id, "")
            if answer.strip() == getattr(q, "placeholder", "").strip():
                answer = ""
            rubric = q.rubric_text() if isinstance(q, FreeText) else ""
            writer.writerow([csv_cell(inert(g.student)), q.id, format_points(q.points), "",
                             csv_cell(inert(answer, multiline=True).strip()), rubric])
    return buffer.getvalue()


def feedback_text(exercise: Exercise, g: Graded) -> str:
    """A student's feedback in Markdown: total, one line per question, then notes on the run.

    Everything that came from the submission or its kernel (the id, error texts, answers, notes)
    is written inert, one line each, with Markdown's own characters escaped (`files.md_text`), so
    it can neither forge a heading or a question's line nor make a link, an image or HTML."""
    manual = [q for q in exercise.questions if not q.auto_scored]
    lines = [f"# {exercise.title}", "", f"Feedback for **{md_text(g.student)}** ({code_span(g.file)}).", "",
             f"**Total: {format_points(g.total)} / {format_points(exercise.auto_points)}** "
             "automatically graded points."]
    if manual:
        names = ", ".join(f"{q.id} ({format_points(q.points)} points)" for q in manual)
        lines.append(f"Free-text answers are marked by your instructor: {names}.")
    lines += ["", "## Questions", ""]
    lines += [f"- {replace(o, question=md_text(o.question), message=md_text(o.message)).line()}" for o in g.outcomes]
    if g.notes:
        lines += ["", "## About your notebook", ""]
        lines += [f"- {md_text(note)}" for note in g.notes]
    return "\n".join(lines) + "\n"


def reference_hits(graded: list[Graded]) -> list[tuple[str, str, str]]:
    """(student, question, what) for every answer that called a blocked reference implementation.

    Read from the data each outcome carries (`Outcome.blocked`, validated where the record was
    cleaned and scored), never from a message: nothing a learner's code raised can add a line."""
    return [(g.student, o.question, ", ".join(sorted(set(o.blocked))))
            for g in sorted(graded, key=lambda g: g.student) for o in g.outcomes if getattr(o, "blocked", ())]


def flagged_readings(graded: list[Graded]) -> list[tuple[str, str, str]]:
    """(student, questions, what) for every answer whose reading the notebook reached into (hooks, a
    second record, the blocking undone) or whose check cell ran code of its own (`Graded.flags`); the
    questions one finding names share a line."""
    found: list[tuple[str, str, str]] = []
    for g in sorted(graded, key=lambda g: g.student):
        by_text: dict[str, list[str]] = {}  # the questions one finding names, together
        for question, flags in getattr(g, "flags", {}).items():
            by_text.setdefault("; ".join(flags), []).append(question)
        found += [(g.student, ", ".join(questions), text) for text, questions in by_text.items()]
    return found


def summary_text(exercise: Exercise, graded: list[Graded], settings: RunSettings, skipped: Sequence[Skipped] = (),
                 failed: Sequence[str] = ()) -> str:
    """Counts, files without a row, grader errors, and the settings; the first line warns when
    the kernels ran without isolation."""
    counts: dict[str, int] = {}
    for g in graded:
        counts[g.status] = counts.get(g.status, 0) + 1
    lines: list[str] = []
    if not settings.walled:
        lines += ["**Graded WITHOUT isolation** (`--isolation none`): every kernel could read what the grader's "
                  "user can read (other submissions, the solutions) and write where it can write. See "
                  "docs/grading.md.", ""]
    lines += [f"# Grading summary: {exercise.title}", "", f"- submissions: {len(graded)}"]
    lines += [f"- {status}: {n}" for status, n in sorted(counts.items())]
    if skipped:
        lines += ["", "## Files without a row", ""]
        lines += [f"- {code_span(s.relative)}: {md_text(s.reason)}" for s in skipped]
    errors = sorted((g for g in graded if g.error), key=lambda g: g.student)
    if errors:
        lines += ["", "## Grader errors", "", "Each of these got the status `grader error`; the rest of the "
                  "class was graded. Please report them with the notebook.", ""]
        lines += [f"- {code_span(g.student)}: {md_text(g.error)}" for g in errors]
    hits = reference_hits(graded)
    if hits:
        lines += ["", "## The blocked reference was called", "", "These answers called an implementation that is "
                  "switched off while answers are graded; the cases that called it earned nothing.", ""]
        lines += [f"- {code_span(student)}, {md_text(question)}: {md_text(what)}" for student, question, what in hits]
    flagged = flagged_readings(graded)
    if flagged:
        lines += ["", "## Notebooks that reached into the grader's cells", "", "Code of these notebooks ran around "
                  "the grader's reading of an answer, or from an edited check cell. A reading reached into earned at "
                  "most a third of its points; read these notebooks (docs/grading.md, \"What the grader guarantees\").",
                  ""]
        lines += [f"- {code_span(who)}, {md_text(question)}: {md_text(what)}" for who, question, what in flagged]
    if failed:
        lines += ["", "## Reports not written", ""] + [f"- {md_text(f)}" for f in failed]
    if settings.seed:
        seed = settings.seed
        lines += ["", "## Hidden cases", "", "The code questions were graded on cases drawn from the seed "
                  f"{code_span(seed)}. Grading again with {code_span('--seed ' + shlex.quote(seed))} draws the same "
                  "cases and gives the same grades. "
                  "Keep the seed from students: with it, and the recipe in the package, the cases can be drawn "
                  "again. Use a new one for each class."]
    lines += ["", "## Settings", ""] + [f"- {k}: {inert(v)}" for k, v in settings.to_json().items()]
    return "\n".join(lines) + "\n"


def write_reports(out: Path, exercise: Exercise, graded: list[Graded], settings: RunSettings,
                  skipped: Sequence[Skipped] = ()) -> list[str]:
    """Write gradebook.csv, free_text.csv, feedback/<student>.md and summary.md under `out`.

    One file that cannot be written does not stop the others; returns what failed, in words
    (the summary lists it too). The gradebook is written first.
    """
    failed: list[str] = []

    def put(path: Path, text_of: Callable[[], str]) -> None:
        try:
            atomic_write(path, text_of())
        except Exception as exc:
            failed.append(f"{path.relative_to(out)}: {type(exc).__name__}: {exc}")

    put(out / "gradebook.csv", lambda: gradebook_text(exercise, graded))
    put(out / "free_text.csv", lambda: free_text_sheet(exercise, graded))
    names: dict[str, int] = {}
    for g in sorted(graded, key=lambda g: g.student):
        name = safe_name(g.student)
        names[name] = names.get(name, 0) + 1
        if names[name] > 1:
            name = f"{name}-{names[name]}"
        put(out / "feedback" / f"{name}.md", lambda g=g: feedback_text(exercise, g))
    put(out / "summary.md", lambda: summary_text(exercise, graded, settings, skipped, list(failed)))
    return failed
