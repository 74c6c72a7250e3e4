"""The texts of the grader's outputs: gradebook CSV, the free-text sheet, one feedback file per
student, and the summary.

Each is a pure function of the verdicts (no clock, no paths of the machine), so grading the same
folder twice gives the same files; `store.write_all` writes them.
"""
from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..exercise import Exercise
from ..questions.kinds import FreeText
from ..verdict import Graded, RunSettings, Skipped, format_points
from .files import code_span, csv_text, inert, md_text


def gradebook_text(exercise: Exercise, graded: Sequence[Graded]) -> str:
    """One row per student, one column per question (points; empty for free text), total, status."""
    rows: list[list[str]] = []
    for g in sorted(graded, key=lambda g: g.student):
        points = {o.question: format_points(o.points) for o in g.outcomes if exercise[o.question].auto_scored}
        rows.append([inert(g.student), *(points.get(q, "") for q in exercise.ids), format_points(g.total),
                     inert(g.status)])
    return csv_text(["student", *exercise.ids, "total", "status"], rows)


def free_text_sheet(exercise: Exercise, graded: Sequence[Graded]) -> str:
    """The free-text answers, one row per student and question, with an empty points column and the
    question's rubric (the elements of a good answer and their points) beside each answer."""
    rows: list[list[str]] = []
    questions = [q for q in exercise.questions if isinstance(q, FreeText)]
    for g in sorted(graded, key=lambda g: g.student):
        for q in questions:
            answer = g.free_text.get(q.id, "")
            answer = "" if answer.strip() == q.placeholder.strip() else inert(answer, multiline=True).strip()
            rows.append([inert(g.student), q.id, format_points(q.points), "", answer, q.rubric_text()])
    return csv_text(["student", "question", "max_points", "points", "answer", "rubric"], rows)


def feedback_text(exercise: Exercise, g: Graded) -> str:
    """A student's feedback in Markdown: total, one line per question, then notes on the run.

    All that came from the submission or its kernel is `md_text` (inert, one line each, Markdown's own
    characters escaped): it can neither forge a heading or a question's line nor make a link, image or HTML."""
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


# The two lists an instructor must read, each with the sentence that introduces it (summary.md).
REFERENCE_HITS = ("The blocked reference was called", "These answers called an implementation that is switched off "
                  "while answers are graded; the cases that called it earned nothing.")
FLAGGED = ("Notebooks that reached into the grader's cells", "Code of these notebooks ran around the grader's reading "
           "of an answer, or from an edited check cell. A reading reached into earned at most a third of its points; "
           "read these notebooks (docs/grading.md, \"What the grader guarantees\").")


def reference_hits(graded: Sequence[Graded]) -> list[tuple[str, str, str]]:
    """(student, question, what) for every answer that called a blocked reference implementation: read
    from `Outcome.blocked` (validated data), never from a message a learner's code could have written."""
    return [(g.student, o.question, ", ".join(sorted(set(o.blocked))))
            for g in sorted(graded, key=lambda g: g.student) for o in g.outcomes if o.blocked]


def flagged_readings(graded: Sequence[Graded]) -> list[tuple[str, str, str]]:
    """(student, questions, what) for every answer whose reading the notebook reached into (hooks, a
    second record, the blocking undone) or whose check cell ran code of its own (`Graded.flags`); the
    questions one finding names share a line."""
    found: list[tuple[str, str, str]] = []
    for g in sorted(graded, key=lambda g: g.student):
        by_text: dict[str, list[str]] = {}  # the questions one finding names, together
        for question, flags in g.flags.items():
            by_text.setdefault("; ".join(flags), []).append(question)
        found += [(g.student, ", ".join(questions), text) for text, questions in by_text.items()]
    return found


def summary_text(exercise: Exercise, graded: list[Graded], settings: RunSettings, skipped: Sequence[Skipped] = (),
                 failed: Sequence[str] = ()) -> str:
    """Counts, files without a row, grader errors, and the settings; the first line warns when
    the kernels ran without isolation."""
    counts = Counter(str(g.status) for g in graded)
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
    for (title, note), found in ((REFERENCE_HITS, reference_hits(graded)), (FLAGGED, flagged_readings(graded))):
        if found:
            lines += ["", f"## {title}", "", note, ""]
            lines += [f"- {code_span(who)}, {md_text(question)}: {md_text(what)}" for who, question, what in found]
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
