"""Fixed classes whose report folders are recorded file by file (tests/grading/golden/NAME/).

A change to the engine that is meant to keep every grade and every sentence must leave these
report folders byte-identical; tests/grading/reports/test_golden.py grades them again and compares them byte
for byte. When the content changes on purpose (a question, a case, a feedback sentence), record
again and read `git diff tests/grading/golden`:

    .venv/bin/python tests/grading/golden_class.py --record

Each class: a folder of submissions, the exercise, and the isolation it is graded with. The
submissions are deterministic (no timeouts, no memory limits hit), so the folder depends on the
grader alone.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN = HERE / "golden"
sys.path.insert(0, str(HERE))

from conftest import SEED  # noqa: E402

import synthetic_class  # noqa: E402

# synthetic_class.build_class's students that end the same way on every machine and every load
STEADY = ("full", "partial", "blank", "reordered", "missing_variable", "raises", "exits", "tamper",
          "tamper_builtins", "shortcut", "widgets", "not_json", "not_a_notebook")
OTHER_EXERCISES = ("01_unscaled_scores", "02_where_sqrt_d_went", "04_bias_heatmaps")


def _sample(folder: Path) -> None:
    shutil.copytree(REPO / "tests" / "sample_class", folder)


def _synthetic(folder: Path) -> None:
    made = synthetic_class.build_class(folder / "all", folder / "unused", thief=False)
    folder.mkdir(parents=True, exist_ok=True)
    for student in STEADY:
        shutil.move(made[student], folder / made[student].name)
    shutil.rmtree(folder / "all")


def _solved_and_blank(exercise: str):
    def build(folder: Path) -> None:
        folder.mkdir(parents=True)
        for who, source in (("solved", "solutions"), ("blank", "exercises")):
            nb = nbformat.read(REPO / source / f"{exercise}.ipynb", as_version=4)
            (folder / f"{who}.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    return build


# name -> (how to build the folder, exercise id or None to read it from the notebooks, isolation)
CLASSES = {
    "sample_class": (_sample, None, "none"),
    "sample_class_isolated": (_sample, None, "full"),
    "synthetic_03": (_synthetic, "03_relative_position_buckets", "none"),
    **{f"exercise_{e[:2]}": (_solved_and_blank(e), e, "none") for e in OTHER_EXERCISES},
}


def list_files(report: Path) -> list[str]:
    return sorted(str(p.relative_to(report)) for p in report.rglob("*") if p.is_file())


def grade(name: str, tmp: Path) -> Path:
    """Build class `name` under `tmp` and grade it with the instructor's command; return the report folder."""
    build, exercise, isolation = CLASSES[name]
    submissions, report = tmp / name / "submissions", tmp / name / "report"
    build(submissions)
    command = [sys.executable, "-m", "t5lesson.grade", "grade", str(submissions), "--out", str(report), "--quiet",
               "--isolation", isolation, "--jobs", "2", "--seed", SEED]
    if exercise:
        command += ["--exercise", exercise]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"grading {name} failed:\n{result.stderr}")
    return report


def record(names) -> None:
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            report = grade(name, Path(tmp))
            shutil.rmtree(GOLDEN / name, ignore_errors=True)
            shutil.copytree(report, GOLDEN / name)
            print(f"recorded {name}: {len(list_files(report))} files")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", required=True)
    parser.add_argument("names", nargs="*", default=list(CLASSES))
    args = parser.parse_args()
    record(args.names)
