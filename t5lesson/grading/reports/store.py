"""Everything one grading run writes into REPORT_DIR, and grades.json, which `read` reads back.

`write_all` writes the gradebook files (`reports.gradebook`) and grades.json (the verdicts,
settings and entries without a row).
Each file is written atomically; no clock, no path of the machine, students sorted: the same
bytes every time. See docs/grading.md.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

from ..errors import GradingError, InputError
from ..exercise import Catalogue, Exercise
from ..records import BLOCKED_TARGET
from ..verdict import Graded, Outcome, RunSettings, Skipped, Status
from .files import atomic_write, safe_names
from .gradebook import feedback_text, free_text_sheet, gradebook_text, summary_text

FORMAT = "t5lesson-grades/1"
GRADES_FILE = "grades.json"


class ReportError(GradingError, RuntimeError):
    """Some report files could not be written (the gradebook itself always is, or this says so)."""

    def __init__(self, failed: list[str]):
        super().__init__("some reports could not be written: " + "; ".join(failed[:5]))
        self.failed = failed


class Run(NamedTuple):
    """What a report folder's grades.json holds (the entries without a row are for summary.md only)."""

    exercise: Exercise
    graded: list[Graded]
    settings: RunSettings


def _plain(g: Graded) -> dict[str, object]:
    """A verdict as grades.json keeps it: an outcome's `blocked` only where the answer called a blocked
    reference, `flags` only where the notebook reached into the grader's cells, no seconds (no clock)."""
    outcomes = [{"question": o.question, "status": o.status, "points": o.points, "max_points": o.max_points,
                 "message": o.message, **({"blocked": list(o.blocked)} if o.blocked else {})} for o in g.outcomes]
    return {"student": g.student, "file": g.file, "status": str(g.status), "outcomes": outcomes, "notes": g.notes,
            "free_text": g.free_text, "error": g.error, **({"flags": g.flags} if g.flags else {})}


def grades_text(exercise: Exercise, graded: list[Graded], settings: RunSettings,
                skipped: Sequence[Skipped] = ()) -> str:
    """grades.json's text: the verdicts sorted by student, the settings, the entries of the folder
    that have no row (`intake.Skipped`)."""
    doc = {"format": FORMAT, "exercise": exercise.id,
           "settings": settings.to_json(), "skipped": [{"relative": s.relative, "reason": s.reason} for s in skipped],
           "submissions": [_plain(g) for g in sorted(graded, key=lambda g: g.student)]}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_all(out: Path, exercise: Exercise, graded: list[Graded], settings: RunSettings,
              skipped: Sequence[Skipped] = ()) -> list[str]:
    """Write the whole report folder; return what could not be written, in words. One file that cannot
    be written does not stop the others; the gradebook comes first, summary.md (listing the failures) last."""
    failed: list[str] = []

    def put(relative: str, text_of: Callable[[], str]) -> None:
        try:
            atomic_write(out / relative, text_of())
        except Exception as exc:  # e.g. a full disk, or a bug in one report: never the gradebook's loss
            failed.append(f"{relative}: {type(exc).__name__}: {exc}")

    put("gradebook.csv", lambda: gradebook_text(exercise, graded))
    put("free_text.csv", lambda: free_text_sheet(exercise, graded))
    students = sorted(graded, key=lambda g: g.student)
    for name, g in zip(safe_names(g.student for g in students), students, strict=True):
        put(f"feedback/{name}.md", lambda g=g: feedback_text(exercise, g))
    put(GRADES_FILE, lambda: grades_text(exercise, graded, settings, skipped))
    put("summary.md", lambda: summary_text(exercise, graded, settings, skipped, list(failed)))
    return failed


def read(report_dir: Path, catalogue: Catalogue) -> Run:
    """What a report folder's grades.json holds (see `Run`)."""
    path = Path(report_dir) / GRADES_FILE
    if not path.is_file():
        raise InputError(f"{report_dir} has no {GRADES_FILE}: is it a report folder written by this grader?")
    try:
        doc: object = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path} is damaged: {exc}") from None
    if not isinstance(doc, dict) or cast("dict[str, Any]", doc).get("format") != FORMAT:
        raise InputError(f"{path} is not in the format {FORMAT}")
    try:  # a key missing, a value of the wrong kind, a word that is no status: a damaged file, not a bug
        return _run_of(cast("dict[str, Any]", doc), catalogue)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, GradingError):
            raise
        raise InputError(f"{path} is damaged: {type(exc).__name__}: {exc}") from None


def _blocked(o: dict[str, Any]) -> tuple[str, ...]:
    """The blocked targets of an outcome read back from grades.json (well-formed ones only)."""
    found: object = o.get("blocked")
    if not isinstance(found, list):
        return ()
    return tuple(t for t in cast("list[object]", found) if isinstance(t, str) and BLOCKED_TARGET.fullmatch(t))


def _run_of(doc: dict[str, Any], catalogue: Catalogue) -> Run:
    """The run of a grades.json document (JSON as read: a missing key or wrong kind raises; `read` says damaged)."""
    exercise = catalogue.get(doc["exercise"])
    settings = RunSettings.from_json(doc.get("settings"))
    if settings.seed:  # the cases the verdicts name: drawn again from the recorded seed
        exercise = exercise.drawn(settings.seed)
    graded: list[Graded] = []
    for s in doc["submissions"]:
        outcomes = [Outcome(o["question"], o["status"], float(o["points"]), float(o["max_points"]), o["message"],
                            _blocked(o)) for o in s["outcomes"]]
        graded.append(Graded(s["student"], s["file"], Status(s["status"]), outcomes, list(s["notes"]),
                             dict(s["free_text"]), 0.0, error=s.get("error", ""),
                             flags=dict(s.get("flags", {}))))
    return Run(exercise, graded, settings)
