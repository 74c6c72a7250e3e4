"""The Gradescope autograder: the zip, and run_autograder in a root laid out as Gradescope lays it out.

The zip is unpacked into ROOT/source, run_autograder copied to ROOT/run_autograder, and each
submission put into ROOT/submission, as Gradescope does; results.json is validated against
the schema of Gradescope's documented fields. setup.sh installs ~1.5 GB from the package
index, so by default it is only syntax-checked and run_autograder uses this interpreter
(T5LESSON_AUTOGRADER_PYTHON); T5LESSON_AUTOGRADER_SETUP=1 runs it for real into ROOT/venv.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from conftest import ROOT, SAMPLE_EXERCISE, SAMPLE_TOTALS, SAMPLES, SEED, grade_cli
from t5lesson.check import Checker
from t5lesson.grading.integrations.gradescope import VISIBILITY
from t5lesson.grading.questions.kinds import Code
from t5lesson.grading.verdict import format_points

EXERCISE = SAMPLE_EXERCISE.id  # the autograder grades the sample class's exercise; ada answers all of it right
SETUP = os.environ.get("T5LESSON_AUTOGRADER_SETUP") == "1"

# What results.json may hold: Gradescope's documented fields only.
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


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gradescope")
    bundle = tmp / "autograder.zip"
    built = subprocess.run(grade_cli("autograder", EXERCISE, "--out", str(bundle), "--seed", SEED), cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    root = tmp / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        names = archive.namelist()
    for name in ("setup.sh", "run_autograder"):  # zipfile does not restore modes
        (root / "source" / name).chmod(0o755)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")  # as Gradescope does
    env = dict(os.environ, T5LESSON_AUTOGRADER_ROOT=str(root))
    if SETUP:
        setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                               timeout=3600)
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    else:
        env["T5LESSON_AUTOGRADER_PYTHON"] = sys.executable
    return {"zip": bundle, "root": root, "names": names, "modes": modes, "env": env}


def _grade(autograder, files: dict[str, bytes]) -> dict:
    root = autograder["root"]
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    for name, data in files.items():
        (root / "submission" / name).write_bytes(data)
    temp = Path(tempfile.mkdtemp(prefix="t5gs-", dir="/tmp"))  # the run's own temp folder: what it leaves shows
    try:
        done = subprocess.run([str(root / "run_autograder")], cwd=root, env=dict(autograder["env"], TMPDIR=str(temp)),
                              capture_output=True, text=True, timeout=600)
        assert os.listdir(temp) == []  # its work folder, the batch's run folders: all gone
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(doc, RESULTS_SCHEMA)
    return doc


def test_the_zip_has_gradescope_layout_and_no_solutions(autograder):
    names, modes = autograder["names"], autograder["modes"]
    assert {"setup.sh", "run_autograder", "autograder.json", "requirements.txt", "constraints.txt",
            "pyproject.toml", f"exercises/{EXERCISE}.ipynb", "t5lesson/grading/batch.py"} <= set(names)
    assert stat.S_IMODE(modes["setup.sh"]) == 0o755 and stat.S_IMODE(modes["run_autograder"]) == 0o755
    assert not any(n.startswith(("solutions/", "tests/", ".git")) or "__pycache__" in n for n in names)
    with zipfile.ZipFile(autograder["zip"]) as archive:
        notebooks = [archive.read(n).decode() for n in names if n.endswith(".ipynb")]
    assert notebooks and not any("BEGIN SOLUTION" in nb for nb in notebooks)
    solution_lines = _solution_lines()
    assert solution_lines and not any(line in nb for nb in notebooks for line in solution_lines)
    config = json.loads((autograder["root"] / "source" / "autograder.json").read_text())
    assert config["exercise"] == EXERCISE and config["visibility"] == "visible"
    syntax = subprocess.run(["bash", "-n", str(autograder["root"] / "source" / "setup.sh")], capture_output=True)
    assert syntax.returncode == 0
    again = autograder["zip"].with_name("again.zip")
    subprocess.run(grade_cli("autograder", EXERCISE, "--out", str(again), "--seed", SEED), cwd=ROOT, check=True,
                   capture_output=True)
    assert again.read_bytes() == autograder["zip"].read_bytes()  # reproducible for one seed
    assert config["seed"] == SEED  # the class's seed; each submission adds its own id to it, in the container


def _solution_lines() -> list[str]:
    """The solution notebook's assignments of answer variables ("answer_q6 = ..."), comments dropped."""
    nb = nbformat.read(ROOT / "solutions" / f"{EXERCISE}.ipynb", as_version=4)
    names = tuple(f"{q.name} =" for q in SAMPLE_EXERCISE.questions)
    return [line.split("#")[0].strip() for cell in nb.cells for line in cell.source.splitlines()
            if line.startswith(names)]


def test_the_solution_gets_full_marks(autograder):
    doc = _grade(autograder, {"ada.ipynb": (SAMPLES / "ada.ipynb").read_bytes()})
    assert SAMPLE_TOTALS["ada"] == SAMPLE_EXERCISE.auto_points
    assert doc["score"] == SAMPLE_EXERCISE.auto_points and doc["extra_data"]["status"] == "graded"
    tests = dict(zip([q.id for q in SAMPLE_EXERCISE.questions], doc["tests"], strict=True))
    for q in SAMPLE_EXERCISE.questions:
        test = tests[q.id]
        assert test["name"].startswith(f"{q.id}: ") and test["max_score"] == q.points, test
        if not q.auto_scored:
            assert test["score"] == 0 and "Marked by hand" in test["output"] and "status" not in test, test
            continue
        assert test["score"] == q.points and test["status"] == "passed", test
        points = format_points(q.points)
        if isinstance(q, Code):  # "q7: Correct: all 91 cases right. [4/4]"
            assert test["output"].startswith(f"{q.id}: Correct: all "), test
            assert test["output"].endswith(f"[{points}/{points}]"), test
        else:
            assert test["output"] == f"{q.id}: Correct [{points}/{points}]", test
    assert sum(t["max_score"] for t in doc["tests"]) == sum(q.points for q in SAMPLE_EXERCISE.questions)


def test_the_blank_gets_zero_with_check_s_words(autograder):
    blank = (ROOT / "exercises" / f"{EXERCISE}.ipynb").read_bytes()
    doc = _grade(autograder, {"blank.ipynb": blank})
    assert doc["score"] == 0 and doc["extra_data"]["status"] == "graded"
    checker = Checker(EXERCISE)
    expected = [checker.outcome(q.id, namespace={}).line() for q in checker.exercise.questions if q.auto_scored]
    assert [t["output"] for t in doc["tests"] if t.get("status")] == expected  # what check() prints
    assert all("Not attempted" in line for line in expected)


def test_a_broken_file_and_an_empty_submission_get_their_status(autograder):
    doc = _grade(autograder, {"mine.ipynb": b'{"cells": [', "notes.txt": b"hello"})
    assert doc["score"] == 0 and doc["extra_data"]["status"] == "unreadable"
    assert "Status: unreadable" in doc["output"] and "could not be graded" in doc["output"]
    assert all(t["score"] == 0 for t in doc["tests"]) and len(doc["tests"]) == len(SAMPLE_EXERCISE.questions)
    doc = _grade(autograder, {"notes.txt": b"hello"})
    assert doc["extra_data"]["status"] == "no notebook" and "notes.txt" in doc["output"]


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft7Validator.check_schema(RESULTS_SCHEMA)


def test_the_autograder_config_round_trips_through_its_json(tmp_path):
    from t5lesson.grading.integrations.gradescope import AutograderConfig
    from t5lesson.grading.protocol import Limits

    config = AutograderConfig("03_relative_position_buckets", "hidden", "none", Limits(cell_timeout=7), "a seed")
    (tmp_path / "autograder.json").write_text(config.to_json())
    assert AutograderConfig.read(tmp_path / "autograder.json") == config
    (tmp_path / "autograder.json").write_text('{"exercise": "01_unscaled_scores"}')  # an older zip's file
    assert AutograderConfig.read(tmp_path / "autograder.json") == AutograderConfig("01_unscaled_scores")


def test_the_work_folder_is_removed_when_grading_fails(autograder, tmp_path, monkeypatch):
    """A run that fails inside the grader still writes results.json and leaves no work folder behind."""
    from t5lesson import exercises as bank
    from t5lesson.grading import batch
    from t5lesson.grading.integrations import gradescope

    root = tmp_path / "root"
    shutil.copytree(autograder["root"] / "source", root / "source")
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "ada.ipynb").write_bytes((SAMPLES / "ada.ipynb").read_bytes())

    def fails(*args, **kwargs):
        raise RuntimeError("the grader broke")

    monkeypatch.setattr(batch, "grade_folder", fails)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    doc = gradescope.run(root, bank)
    assert doc["extra_data"]["status"] == "grader error" and "RuntimeError" in doc["output"]
    assert os.listdir(tmp_path / "temp") == []


def test_each_submission_draws_its_own_hidden_cases(tmp_path):
    """The class's seed plus the submission's own id (else a hash of its notebooks): a student's second
    submission meets other cases than the first, and a regrade of one submission the same ones."""
    from t5lesson.grading.integrations.gradescope import submission_seed

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "mine.ipynb").write_text('{"cells": []}')
    by_files = submission_seed(root, "class seed")
    assert by_files.startswith("class seed|submission files ") and by_files == submission_seed(root, "class seed")
    (root / "submission" / "mine.ipynb").write_text('{"cells": [], "again": 1}')
    assert submission_seed(root, "class seed") != by_files  # another notebook, other cases
    (root / "submission_metadata.json").write_text('{"id": 123456, "created_at": "2026-12-04"}')
    assert submission_seed(root, "class seed") == "class seed|submission 123456"
    assert submission_seed(root, None) is None  # no seed: the grader draws one, as in class
    drawn = [SAMPLE_EXERCISE.drawn(seed, 1)["q7"].cases for seed in ("s|submission 1", "s|submission 2")]
    assert drawn[0] != drawn[1]
