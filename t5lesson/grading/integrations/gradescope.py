"""Grade on Gradescope: build an autograder zip, and run inside Gradescope's container.

`t5grade autograder EXERCISE --out autograder.zip` writes `setup.sh` and `run_autograder` (the
files in gradescope_scripts/), the package, the pinned requirements, the handed-out notebook
(never the solutions) and autograder.json (exercise, limits, visibility, seed). `run_autograder`
grades the submission with the class grader itself and writes results.json, with Gradescope's
documented fields only. Every path starts at $T5LESSON_AUTOGRADER_ROOT (default /autograder).
See docs/grading.md, "Gradescope".
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import traceback
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..course import PACKAGE_PARENT
from ..errors import SettingsError
from ..exercise import Catalogue, Exercise, find
from ..protocol import Limits
from ..questions.kinds import Question
from ..run import intake
from ..verdict import ERROR, Graded, Outcome, Skipped, Status, format_points

__all__ = ["AutograderConfig", "build", "run", "results", "submission_seed", "VISIBILITY"]

ROOT_VARIABLE = "T5LESSON_AUTOGRADER_ROOT"  # read by the scripts too
DEFAULT_ROOT = "/autograder"
CONFIG = "autograder.json"
VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
SCRIPTS = Path(__file__).with_name("gradescope_scripts")  # setup.sh and run_autograder (package data)
_EXECUTABLE, _PLAIN = 0o100755 << 16, 0o100644 << 16
_EPOCH = (1980, 1, 1, 0, 0, 0)


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
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["exercise"], data.get("visibility", "visible"), data.get("isolation", "auto"),
                   Limits.from_dict(data.get("limits", {})), data.get("seed"))


def build(exercise_id: str, out: Path, *, catalogue: Catalogue, limits: Limits = Limits(),
          visibility: str = "visible", isolation: str = "auto", seed: str | None = None) -> list[str]:
    """Write the autograder zip for one exercise; return the names in it. The zip is reproducible
    (sorted entries, fixed times) for a given `seed`, the class's secret (None: a new one), which
    sits in autograder.json, a file students never see."""
    from ..authoring.notebook_format import writes
    from ..batch import load_template, new_seed

    exercise = find(catalogue, exercise_id)
    if visibility not in VISIBILITY or isolation not in ("auto", "full", "none"):
        raise SettingsError(f"visibility must be one of {', '.join(VISIBILITY)}; isolation auto, full or none")
    config = AutograderConfig(exercise.id, visibility, isolation, limits, new_seed() if seed is None else seed)
    entries = {name: ((SCRIPTS / name).read_bytes(), _EXECUTABLE) for name in ("setup.sh", "run_autograder")}
    entries[CONFIG] = (config.to_json().encode(), _PLAIN)
    entries[f"exercises/{exercise.id}.ipynb"] = (writes(load_template(exercise)).encode(), _PLAIN)
    tops = [PACKAGE_PARENT / name for name in ("pyproject.toml", "requirements.txt", "constraints.txt", "README.md")]
    package = [p for p in (PACKAGE_PARENT / "t5lesson").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")]
    for path in tops + package:
        entries[path.relative_to(PACKAGE_PARENT).as_posix()] = (path.read_bytes(), _PLAIN)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = entries[name][1]
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name][0])
    os.replace(partial, out)
    return sorted(entries)


def _test(question: Question, outcome: Outcome, number: int, visibility: str, title: str) -> dict[str, object]:
    test: dict[str, object] = {"name": f"{question.id}: {title}" if title else f"Question {number} ({question.id})",
                               "number": str(number), "score": float(outcome.points),
                               "max_score": float(question.points), "output": outcome.line(),
                               "visibility": visibility}
    if question.auto_scored:
        test["status"] = "passed" if outcome.points >= question.points else "failed"
    else:
        test["output"] = (f"{outcome.line()}\nMarked by hand: your instructor reads this answer and gives its "
                          f"{format_points(question.points)} points; until then it shows 0.")
    return test


def results(exercise: Exercise, graded: Sequence[Graded], *, visibility: str = "visible",
            skipped: Sequence[Skipped] = (), isolation: str = "", titles: dict[str, str] | None = None
            ) -> dict[str, object]:
    """results.json for one student's submission (several notebooks: the best one counts).
    `titles`: {question id: title}, from the handed-out notebook's headings."""
    titles = titles or {}
    if not graded:
        found = ", ".join(s.relative for s in skipped) or "nothing"
        tests = [_test(q, q.outcome(ERROR, 0, "no notebook was submitted."), i, visibility, titles.get(q.id, ""))
                 for i, q in enumerate(exercise.questions, 1)]
        return {"score": 0.0, "visibility": visibility, "stdout_visibility": "hidden", "tests": tests,
                "output": f"No notebook (.ipynb) was found in your submission (it holds: {found}). Submit your "
                          "exercise notebook.", "extra_data": {"status": "no notebook", "exercise": exercise.id}}
    ranked = sorted(graded, key=lambda g: (-g.total, g.status != Status.GRADED, g.student))
    best = ranked[0]
    by_id = {o.question: o for o in best.outcomes}
    tests = [_test(q, by_id[q.id], i, visibility, titles.get(q.id, "")) for i, q in enumerate(exercise.questions, 1)
             if q.id in by_id]
    lines = [f"{exercise.title}: {format_points(best.total)} / {format_points(exercise.auto_points)} automatically "
             f"graded points for {best.file}."]
    manual = [f"{q.id} ({format_points(q.points)} points)" for q in exercise.questions if not q.auto_scored]
    if manual:
        lines.append(f"Free-text answers are marked by your instructor: {', '.join(manual)}.")
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


def submission_seed(root: Path, seed: str | None) -> str | None:
    """The seed of this submission's hidden cases: the class's secret and the submission's own id
    (Gradescope's submission_metadata.json), else a hash of the submitted notebooks. Every
    submission, a student's second one too, meets cases of its own, so cases learnt from one run's
    feedback answer nothing in the next; a regrade of the same submission meets the same ones."""
    if seed is None:
        return None
    try:
        own: object = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8")).get("id")
    except (OSError, ValueError, AttributeError):
        own = None
    if own is None:
        digest = hashlib.sha256()
        for entry in intake.survey(root / "submission")[0]:
            data = intake.read(entry, Limits().max_notebook_mb * 2 ** 20)
            digest.update(entry.relative.encode() + b"\0" + (data if isinstance(data, bytes) else b"?") + b"\0")
        own = f"files {digest.hexdigest()}"
    return f"{seed}|submission {own}"


def _grade(root: Path, catalogue: Catalogue, config: AutograderConfig, work: Path) -> dict[str, object]:
    """results.json for root/submission, graded into the report folder `work`."""
    from ..authoring.notebook_format import read
    from ..batch import Verdicts, grade_folder
    from ..reports.store import question_titles
    from ..sandbox.walls import IsolationUnavailable

    exercise = catalogue.get(config.exercise)
    template = root / "source" / "exercises" / f"{exercise.id}.ipynb"
    found, skipped = intake.survey(root / "submission")

    def grade(isolation: str) -> Verdicts:
        return grade_folder(root / "submission", work, catalogue=catalogue, exercise_id=exercise.id,
                            course=root / "source", template=template, limits=config.limits, jobs=1,
                            isolation=isolation, hide=(str(root / "results"),),
                            seed=submission_seed(root, config.seed), variants=1)

    graded: list[Graded] = []
    isolation = ""
    if found:  # with no notebook, nothing runs: results.json says so
        try:
            verdicts = grade("none" if config.isolation == "none" else "auto")
        except IsolationUnavailable as exc:  # the container allows no namespaces
            if config.isolation != "auto":
                raise
            print(f"isolation is not possible in this container ({exc}); grading with the limits only")
            verdicts = grade("none")
        graded, isolation = verdicts, verdicts.settings.isolation
        print((work / "summary.md").read_text(encoding="utf-8"))
    return results(exercise, graded, visibility=config.visibility, skipped=skipped, isolation=isolation,
                   titles=question_titles(exercise, read(template)))


def run(root: Path, catalogue: Catalogue) -> dict[str, object]:
    """Grade root/submission, write root/results/results.json; return what was written."""
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    (root / "submission").mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    config = AutograderConfig.read(root / "source" / CONFIG)
    doc: dict[str, object]
    try:
        with tempfile.TemporaryDirectory(prefix="t5gradescope-") as work:
            doc = _grade(root, catalogue, config, Path(work) / "report")
    except Exception as exc:  # never leave Gradescope without a results.json
        traceback.print_exc()
        doc = {"score": 0.0, "visibility": config.visibility, "stdout_visibility": "hidden", "tests": [],
               "output": f"The autograder failed on this submission; your instructor can see why. "
                         f"({type(exc).__name__})",
               "extra_data": {"status": str(Status.GRADER_ERROR), "exercise": config.exercise}}
    doc["execution_time"] = round(time.monotonic() - start, 1)
    partial = out / ".results.json.partial"
    partial.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, out / "results.json")
    print(f"results.json: {doc['score']} points")
    return doc
