"""Two grading runs on one machine, started together, each finish with their own grades.

As root each kernel runs as a user id of its own, and a run's clean-up kills whatever that user
id still runs: two runs that shared ids would kill each other's kernels. Each run reserves a
block of ids (an exclusive lock on a file); here both runs are made to start looking at the same
block, the worst case, and must still get different ones. The two classes are the sample class
and the same three notebooks under swapped names (ada's answers as cy, cy's as ada), graded
one at a time (--jobs 1), so the kernels of the two runs run side by side in the same order.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from isolation_helpers import ISOLATION_ARGS

from conftest import SAMPLE_TOTALS, SAMPLES, SEED
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.sandbox import walls
from t5lesson.grading.verdict import format_points

# both runs start looking for a free block of user ids at the same one
SAME_FIRST_BLOCK = ("import sys; from t5lesson.grading.sandbox import walls; walls._first_block = lambda: 4242; "
                    "from t5lesson.grade import main; sys.exit(main(sys.argv[1:]))")


def test_two_runs_reserve_different_blocks_of_user_ids():
    if os.geteuid() != 0:
        pytest.skip("only root gives kernels user ids of their own")
    first, first_lock = walls.reserve(4242)
    second, second_lock = walls.reserve(4242)
    try:
        assert first != second
    finally:
        os.close(first_lock)
        os.close(second_lock)
    again, lock = walls.reserve(4242)  # released: free again
    os.close(lock)
    assert again == first


def _totals(report: Path) -> dict[str, str]:
    rows = csv.DictReader(io.StringIO((report / "gradebook.csv").read_text()))
    return {row["student"]: row["total"] for row in rows}


def test_two_grading_runs_started_together_each_get_their_own_grades(tmp_path):
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    shutil.copy(SAMPLES / "ada.ipynb", swapped / "cy.ipynb")
    shutil.copy(SAMPLES / "cy.ipynb", swapped / "ada.ipynb")
    shutil.copy(SAMPLES / "ben.ipynb", swapped / "ben.ipynb")
    path = [str(PACKAGE_PARENT), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    runs = {}
    for name, folder in (("sample", SAMPLES), ("swapped", swapped)):
        argv = [sys.executable, "-c", SAME_FIRST_BLOCK, "grade", str(folder), "--out", str(tmp_path / f"report-{name}"),
                "--seed", SEED, "--jobs", "1", "--quiet", *ISOLATION_ARGS]
        runs[name] = subprocess.Popen(argv, cwd=PACKAGE_PARENT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
    for name, run in runs.items():
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, f"{name}: {err}"
    expected = {student: format_points(points) for student, points in SAMPLE_TOTALS.items()}
    assert _totals(tmp_path / "report-sample") == expected
    swapped_expected = {"ada": expected["cy"], "ben": expected["ben"], "cy": expected["ada"]}
    assert _totals(tmp_path / "report-swapped") == swapped_expected
