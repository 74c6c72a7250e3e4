"""Hand grades to the LMS: `t5grade lms REPORT_DIR --ids IDS.csv --out LMS_DIR`.

Reads a report folder (gradebook.csv's numbers as written there, grades.json's feedback,
free_text.csv's marks, which count once every answer is marked) and a map from submission names to
LMS ids; writes canvas.csv, moodle.csv, feedback/<lms id>.md and unmatched.csv. See docs/grading.md,
"Grades into the LMS: Canvas and Moodle".
"""
from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from ..errors import InputError, SettingsError
from ..exercise import Catalogue, Exercise
from ..questions.kinds import Question
from ..reports import store
from ..reports.files import atomic_write, csv_cell, csv_text, inert, safe_names, uncell
from ..reports.gradebook import feedback_text
from ..verdict import Graded, format_points

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # how Canvas' own export labels that row

Row = dict[str, str]


class Exported(TypedDict):
    """What `export` did, for the command's message."""

    exported: int
    no_id: list[str]  # graded submissions without an LMS id
    no_submission: list[str]  # mapped submissions that were not graded
    free_text: str


def _read_csv(path: Path) -> list[Row]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return [{k: v or "" for k, v in row.items() if k is not None} for row in csv.DictReader(f)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path} is not a CSV file in UTF-8: {exc}") from None


def read_ids(path: Path) -> dict[str, Row]:
    """{submission: row} from the mapping file; every row needs `submission` and `lms_id`."""
    rows = _read_csv(path)
    if rows and not {"submission", "lms_id"} <= set(rows[0]):
        raise InputError(f"{path} needs the columns submission and lms_id (it has: {', '.join(rows[0])})")
    ids: dict[str, Row] = {}
    for number, row in enumerate(rows, 2):
        submission, lms_id = row.get("submission", "").strip(), row.get("lms_id", "").strip()
        if not submission or not lms_id:
            raise InputError(f"{path}, line {number}: submission and lms_id must both be given")
        if submission in ids:
            raise InputError(f"{path}, line {number}: submission {submission!r} is mapped twice")
        ids[submission] = {**row, "lms_id": lms_id}
    twice = sorted(x for x, n in Counter(row["lms_id"] for row in ids.values()).items() if n > 1)
    if twice:
        raise InputError(f"{path}: these LMS ids are given to more than one submission: {', '.join(twice)}")
    return ids


def _free_text_marks(report: Path, exercise: Exercise, allow_unmarked: bool,
                     by_cell: Mapping[str, str]) -> dict[str, dict[str, float]] | None:
    """{student: {question: points}} when free text is marked, None when nothing is marked yet;
    `by_cell` maps the student column's cells to ids (`_students_by_cell`)."""
    manual = {q.id: q.points for q in exercise.questions if not q.auto_scored}
    sheet = report / "free_text.csv"
    if not manual or not sheet.exists():
        return None
    marks: dict[str, dict[str, float]] = {}
    blank: list[str] = []
    for row in _read_csv(sheet):
        student, question, text = by_cell.get(row["student"], uncell(row["student"])), row["question"], row["points"]
        if question not in manual:
            continue
        if not text.strip():
            blank.append(f"{student} {question}")
            continue
        try:
            points = float(text)
        except ValueError:
            raise InputError(f"free_text.csv: {student} {question}: {text!r} is not a number of points") from None
        if not 0 <= points <= manual[question]:
            raise InputError(f"free_text.csv: {student} {question}: {text} is outside 0..{manual[question]:g}")
        marks.setdefault(student, {})[question] = points
    if not marks:
        return None
    if blank and not allow_unmarked:
        raise InputError(f"free_text.csv is marked only in part ({len(blank)} answers have no points, e.g. "
                         f"{blank[0]}): mark them all, or pass --allow-unmarked to count them as 0")
    return marks


def _students_by_cell(graded: Sequence[Graded]) -> dict[str, str]:
    """{the student column's cell as the grader wrote it (`csv_cell`): student id (as grades.json has it)}:
    cells are compared, never read back into ids, so `-x` and `'-x` are two students, and stay two."""
    cells: dict[str, str] = {}
    for g in graded:
        cell = csv_cell(inert(g.student))
        if cell in cells:
            raise InputError(f"grades.json has two students written as the same cell {cell!r}")
        cells[cell] = g.student
    return cells


def _gradebook_rows(report: Path, by_cell: Mapping[str, str]) -> dict[str, Row]:
    """{student: gradebook.csv row}, which must list the students grades.json does."""
    rows = {r["student"]: r for r in _read_csv(report / "gradebook.csv")}
    if set(rows) != set(by_cell):
        raise InputError("gradebook.csv and grades.json list different students: was one of them edited by hand?")
    return {by_cell[cell]: row for cell, row in rows.items()}


def _feedback(exercise: Exercise, g: Graded, marks: dict[str, float] | None, manual: Sequence[Question],
              possible: float) -> str:
    """The student's feedback as in REPORT_DIR/feedback/, plus the free-text marks once given."""
    text = feedback_text(exercise, g)
    if marks is None:
        return text
    lines = ["", "## Marked by your instructor", "",
             *(f"- {q.id}: {format_points(marks.get(q.id, 0.0))}/{format_points(q.points)}" for q in manual), "",
             f"**Total with the marked answers: {format_points(g.total + sum(marks.values()))} / "
             f"{format_points(possible)}**"]
    return text + "\n".join(lines) + "\n"


def _total(gradebook: Row, marks: dict[str, float] | None) -> str:
    """A student's grade: the gradebook's total, plus the free-text marks once given."""
    return gradebook["total"] if marks is None else format_points(float(gradebook["total"]) + sum(marks.values()))


def export(report: Path, ids_path: Path, out: Path, *, catalogue: Catalogue,
           assignment: str | None = None, canvas_id_column: str = "SIS User ID", moodle_id_column: str = "ID number",
           allow_unmarked: bool = False) -> Exported:
    """Write canvas.csv, moodle.csv, feedback/ and unmatched.csv under `out` (see module doc)."""
    report, out = Path(report), Path(out)
    if canvas_id_column not in CANVAS_IDENTITY[1:4]:
        raise SettingsError(f"--canvas-id-column must be one of {', '.join(CANVAS_IDENTITY[1:4])}")
    run = store.read(report, catalogue)
    exercise, by_cell = run.exercise, _students_by_cell(run.graded)
    rows = _gradebook_rows(report, by_cell)
    by_student = {g.student: g for g in run.graded}
    ids = read_ids(ids_path)
    marks = _free_text_marks(report, exercise, allow_unmarked, by_cell)
    manual = [q for q in exercise.questions if not q.auto_scored] if marks is not None else []  # once marked
    title, possible = assignment or exercise.title, exercise.auto_points + sum(q.points for q in manual)
    canvas_rows: list[list[str]] = [[POINTS_POSSIBLE, "", "", "", "", format_points(possible)]]
    moodle_rows: list[list[str]] = []
    matched = [s for s in sorted(rows) if s in ids]
    for student, stem in zip(matched, safe_names(ids[s]["lms_id"] for s in matched), strict=True):
        row = ids[student]
        lms_id, name = row["lms_id"], row.get("name", "").strip() or student
        identity = {"Student": name, "ID": "", "SIS User ID": "", "SIS Login ID": "",
                    "Section": row.get("section", "").strip(), canvas_id_column: lms_id}
        total = _total(rows[student], None if marks is None else marks.get(student, {}))
        canvas_rows.append([identity[c] for c in CANVAS_IDENTITY] + [total])
        text = _feedback(exercise, by_student[student], (marks or {}).get(student), manual, possible)
        moodle_rows.append([lms_id, name, total, text])
        atomic_write(out / "feedback" / f"{stem}.md", text)
    atomic_write(out / "canvas.csv", csv_text([*CANVAS_IDENTITY, title], canvas_rows))
    moodle_header = [moodle_id_column, "Full name", f"{title} (out of {format_points(possible)})", "Feedback"]
    atomic_write(out / "moodle.csv", csv_text(moodle_header, moodle_rows))
    no_id = [s for s in sorted(rows) if s not in ids]
    no_submission = [s for s in sorted(ids) if s not in rows]
    atomic_write(out / "unmatched.csv", csv_text(["what", "submission", "lms_id"], [
        *[("submission without an LMS id", s, "") for s in no_id],
        *[("LMS id without a submission", s, ids[s]["lms_id"]) for s in no_submission]]))
    return {"exported": len(matched), "no_id": no_id, "no_submission": no_submission,
            "free_text": "included" if marks is not None else "not marked yet: automatic points only"}
