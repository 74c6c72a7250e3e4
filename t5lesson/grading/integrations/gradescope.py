"""Grade on Gradescope: build an autograder zip, and run inside Gradescope's container.

`t5grade autograder EXERCISE --out autograder.zip` writes `setup.sh` and `run_autograder` (the
files in gradescope_scripts/), the
package, the pinned requirements, the handed-out notebook (never the solutions) and
autograder.json (exercise, limits, visibility, seed). `run_autograder` grades the submission with
the class grader itself and writes results.json (`RESULTS_SCHEMA`). Every path starts at
$T5LESSON_AUTOGRADER_ROOT (default /autograder). See docs/grading.md, "Gradescope".
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import time
import traceback
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import jinja2
import nbformat

from ..course import PACKAGE_PARENT
from ..errors import SettingsError
from ..exercise import find
from ..protocol import Limits
from ..reports.store import question_titles
from ..run import intake
from ..sandbox.resources import remove_quietly
from ..verdict import Status, format_points

__all__ = ["AutograderConfig", "build", "run", "results", "RESULTS_SCHEMA", "VISIBILITY"]

ROOT_VARIABLE = "T5LESSON_AUTOGRADER_ROOT"
DEFAULT_ROOT = "/autograder"
CONFIG = "autograder.json"
VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")


@dataclass(frozen=True)
class AutograderConfig:
    """What autograder.json carries from `build` (the instructor's machine) to `run` (the container)."""
    exercise: str
    visibility: str = "visible"
    isolation: str = "auto"
    limits: Limits = field(default_factory=Limits)
    seed: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> AutograderConfig:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(exercise=data["exercise"], visibility=data.get("visibility", "visible"),
                   isolation=data.get("isolation", "auto"), limits=Limits.from_dict(data.get("limits", {})),
                   seed=data.get("seed"))

# What results.json may hold, as this module writes it: Gradescope's documented fields only.
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["score", "tests", "output", "visibility"],
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "visibility": {"enum": list(VISIBILITY)},
        "stdout_visibility": {"enum": list(VISIBILITY)},
        "extra_data": {"type": "object"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score", "output", "visibility"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "number": {"type": "string"},
                    "score": {"type": "number", "minimum": 0},
                    "max_score": {"type": "number", "minimum": 0},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "visibility": {"enum": list(VISIBILITY)},
                    "extra_data": {"type": "object"},
                },
            },
        },
    },
}

SCRIPTS = "gradescope_scripts"  # setup.sh and run_autograder, jinja2 templates beside this module (package data)

_EXECUTABLE = 0o100755 << 16
_PLAIN = 0o100644 << 16
_EPOCH = (1980, 1, 1, 0, 0, 0)


# --------------------------------------------------------------------------- building the zip


@functools.cache
def _scripts() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader(__name__.rpartition(".")[0], SCRIPTS),
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                              autoescape=False)  # shell, not HTML


def _script(name: str) -> bytes:
    """One of the two shell scripts, with the layout's root variable and default written in from here."""
    template = _scripts().get_template(f"{name}.j2")
    return template.render(root_variable=ROOT_VARIABLE, default_root=DEFAULT_ROOT).encode()


def _package_files() -> list[Path]:
    """The package's source files (no caches), relative to the repository root."""
    found = []
    for path in sorted((PACKAGE_PARENT / "t5lesson").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            found.append(path.relative_to(PACKAGE_PARENT))
    return found


def build(exercise_id: str, out: Path, *, catalogue, limits: Limits = Limits(), visibility: str = "visible",
          template: Path | None = None, isolation: str = "auto", seed: str | None = None) -> list[str]:
    """Write the autograder zip for one exercise; return the names in it. The zip is reproducible
    (sorted entries, fixed times) for a given `seed`: the secret every submission's hidden cases
    are drawn from (None: a new one). It sits in autograder.json, which students never see."""
    import nbformat

    from ..batch import (
        load_template,  # the handed-out notebook, as the class grader finds it
        new_seed,
    )

    exercise = find(catalogue, exercise_id)
    if visibility not in VISIBILITY:
        raise SettingsError(f"visibility must be one of {', '.join(VISIBILITY)}")
    if isolation not in ("auto", "full", "none"):
        raise SettingsError("isolation must be auto, full or none")
    config = AutograderConfig(exercise.id, visibility, isolation, limits, new_seed() if seed is None else seed)
    entries: dict[str, tuple[bytes, int]] = {
        "setup.sh": (_script("setup.sh"), _EXECUTABLE),
        "run_autograder": (_script("run_autograder"), _EXECUTABLE),
        CONFIG: (config.to_json().encode(), _PLAIN),
        f"exercises/{exercise.id}.ipynb": (nbformat.writes(load_template(exercise, template)).encode(), _PLAIN),
    }
    for name in ("pyproject.toml", "requirements.txt", "constraints.txt", "README.md"):
        entries[name] = ((PACKAGE_PARENT / name).read_bytes(), _PLAIN)
    for path in _package_files():
        entries[path.as_posix()] = ((PACKAGE_PARENT / path).read_bytes(), _PLAIN)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            data, mode = entries[name]
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = mode
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(partial, out)
    return sorted(entries)


# --------------------------------------------------------------------------- results.json


def _test(question, outcome, number: int, visibility: str, title: str = "") -> dict:
    name = f"{question.id}: {title}" if title else f"Question {number} ({question.id})"
    test = {"name": name, "number": str(number), "score": float(outcome.points), "max_score": float(question.points),
            "output": outcome.line(), "visibility": visibility}
    if question.auto_scored:
        test["status"] = "passed" if outcome.points >= question.points else "failed"
    else:
        test["output"] += (f"\nMarked by hand: your instructor reads this answer and gives its "
                           f"{format_points(question.points)} points; until then it shows 0.")
    return test


def results(exercise, graded: list, *, visibility: str = "visible", skipped=(), isolation: str = "",
            titles: dict[str, str] | None = None) -> dict:
    """results.json for one student's submission (several notebooks: the best one counts).
    `titles`: {question id: title}, from the handed-out notebook (`outputs.question_titles`)."""
    titles = titles or {}
    if not graded:
        found = ", ".join(s.relative for s in skipped) or "nothing"
        why = f"No notebook (.ipynb) was found in your submission (it holds: {found}). Submit your exercise notebook."
        tests = [_test(q, q.outcome("error", 0, "no notebook was submitted."), i, visibility, titles.get(q.id, ""))
                 for i, q in enumerate(exercise.questions, 1)]
        return {"score": 0.0, "output": why, "visibility": visibility, "stdout_visibility": "hidden",
                "extra_data": {"status": "no notebook", "exercise": exercise.id}, "tests": tests}
    ranked = sorted(graded, key=lambda g: (-g.total, g.status != Status.GRADED, g.student))
    best = ranked[0]
    by_id = {o.question: o for o in best.outcomes}
    tests = [_test(q, by_id[q.id], i, visibility, titles.get(q.id, "")) for i, q in enumerate(exercise.questions, 1)
             if q.id in by_id]
    lines = [f"{exercise.title}: {format_points(best.total)} / {format_points(exercise.auto_points)} automatically "
             f"graded points for {best.file}."]
    manual = [q for q in exercise.questions if not q.auto_scored]
    if manual:
        names = ", ".join(f"{q.id} ({format_points(q.points)} points)" for q in manual)
        lines.append(f"Free-text answers are marked by your instructor: {names}.")
    if best.status != Status.GRADED:
        lines.append(f"Status: {best.status}.")
    if best.notes:
        lines += ["", "About your notebook:"] + [f"- {note}" for note in best.notes]
    if len(ranked) > 1:
        others = ", ".join(f"{g.file} ({format_points(g.total)})" for g in ranked[1:])
        lines += ["", f"Your submission holds several notebooks; the best one counts. The others: {others}."]
    extra = {"status": str(best.status), "file": best.file, "exercise": exercise.id}
    if isolation:
        extra["isolation"] = isolation
    return {"score": float(best.total), "output": "\n".join(lines), "visibility": visibility,
            "stdout_visibility": "hidden", "extra_data": extra, "tests": tests}


# --------------------------------------------------------------------------- inside Gradescope


def submission_seed(root: Path, seed: str | None) -> str | None:
    """The seed of this submission's hidden cases: the class's secret and the submission's own id
    (Gradescope's submission_metadata.json), else a hash of the submitted notebooks. Every
    submission, a student's second one too, meets cases of its own, so cases learnt from one run's
    feedback answer nothing in the next; a regrade of the same submission meets the same ones."""
    if seed is None:
        return None
    try:
        own = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8")).get("id")
    except (OSError, ValueError, AttributeError):
        own = None
    if own is None:
        digest = hashlib.sha256()
        for entry in intake.survey(root / "submission")[0]:
            data = intake.read(entry, Limits().max_notebook_mb * 2 ** 20)
            digest.update(entry.relative.encode() + b"\0" + (data if isinstance(data, bytes) else b"?") + b"\0")
        own = f"files {digest.hexdigest()}"
    return f"{seed}|submission {own}"


def run(root: Path, catalogue) -> dict:
    """Grade root/submission, write root/results/results.json; return what was written."""
    from ..batch import grade_folder
    from ..sandbox.walls import IsolationUnavailable

    root = Path(root)
    source, submission, out = root / "source", root / "submission", root / "results"
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    config = AutograderConfig.read(source / CONFIG)
    exercise = catalogue.get(config.exercise)
    visibility = config.visibility
    work = None
    try:
        work = Path(tempfile.mkdtemp(prefix="t5gradescope-"))
        submission.mkdir(parents=True, exist_ok=True)
        found, skipped = intake.survey(submission)
        template = source / "exercises" / f"{exercise.id}.ipynb"
        wanted = config.isolation

        def grade(isolation: str):
            return grade_folder(submission, work / "report", catalogue=catalogue, exercise_id=exercise.id,
                                course=source,
                                template=template,
                                limits=config.limits, jobs=1,
                                isolation="none" if isolation == "none" else "auto", hide=(str(out),),
                                seed=submission_seed(root, config.seed), variants=1)

        graded, summary, isolation = [], "", ""
        if found:  # with no notebook, nothing runs: results.json says so
            try:
                graded = grade(wanted)
            except IsolationUnavailable as exc:  # the container allows no namespaces
                if wanted != "auto":
                    raise
                print(f"isolation is not possible in this container ({exc}); grading with the limits only")
                graded = grade("none")
            summary = (work / "report" / "summary.md").read_text(encoding="utf-8")
            isolation = graded.settings.isolation
        doc = results(exercise, graded, visibility=visibility, skipped=skipped, isolation=isolation,
                      titles=question_titles(exercise, nbformat.read(template, as_version=4)))
        print(summary)
    except Exception as exc:  # never leave Gradescope without a results.json
        traceback.print_exc()
        doc = {"score": 0.0, "visibility": visibility, "stdout_visibility": "hidden", "tests": [],
               "output": "The autograder failed on this submission; your instructor can see why. "
                         f"({type(exc).__name__})",
               "extra_data": {"status": str(Status.GRADER_ERROR), "exercise": exercise.id}}
    finally:  # the report folder, read above: nothing of the run is left in the temp folder
        if work is not None:
            remove_quietly(work)
    doc["execution_time"] = round(time.monotonic() - start, 1)
    partial = out / ".results.json.partial"
    partial.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, out / "results.json")
    print(f"results.json: {format_points(doc['score'])} points, status {doc['extra_data'].get('status')}")
    return doc
