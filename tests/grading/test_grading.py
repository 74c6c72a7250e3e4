"""The class grader on a synthetic class: exact gradebook, untouched files, no unearned marks.

One module-scoped run grades every kind of submission (tests/grading/synthetic_class.py) with small
limits, so the whole module takes about a minute on 2 cores. Each test then reads what it
needs from that one run.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import time
from pathlib import Path

import pytest

from t5lesson.grading import sandbox
from t5lesson.grading.grade import Limits, _uids, grade_folder

from synthetic_class import build_class

LIMITS = Limits(cell_timeout=4, notebook_timeout=20, harvest_timeout=10, stuck_grace=3, startup_timeout=30)
FULL_ISOLATION = sandbox.probe(_uids(1)[0]) is None
SLEEP_MARKER = "987"

# Rows of the gradebook, in the order it is written (sorted by student).
EXPECTED = """\
student,q1,q2,q3,q4,q5,q6,q7,total,status
blank,0,0,,0,0,0,0,0,graded
exits,0,0,,0,0,0,0,0,kernel died
full,1,2,,1,1,1,4,10,graded
infinite_loop,1,2,,1,1,1,4,10,graded
memory,1,2,,1,1,1,4,10,graded
missing_variable,1,2,,0,1,1,4,9,graded
not_a_notebook,0,0,,0,0,0,0,0,unreadable
not_json,0,0,,0,0,0,0,0,unreadable
output_flood,1,2,,1,1,1,4,10,graded
partial,0,2,,1,0,1,3.25,7.25,graded
raises,1,2,,1,1,0,4,9,graded
reordered,1,2,,1,0,1,4,9,graded
shortcut,1,2,,1,1,1,0,6,graded
tamper,0,0,,0,0,1,0,1,graded
tamper_builtins,0,0,,0,0,0,0,0,stuck
thief,0,0,,0,0,0,0,0,graded
uninterruptible,0,0,,0,0,0,0,0,stuck
widgets,1,2,,1,1,1,4,10,graded
"""


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _sleepers() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", SLEEP_MARKER.encode()]:
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    submissions, report = root / "submissions", root / "report"
    report.mkdir()  # exists during the run, so the thief knows where the gradebook will be
    paths = build_class(submissions, report, loop_marker=SLEEP_MARKER, thief=FULL_ISOLATION)
    before = _hashes(submissions)
    start = time.monotonic()
    graded = grade_folder(submissions, report, limits=LIMITS, jobs=2)
    wall = time.monotonic() - start
    yield {"graded": {g.student: g for g in graded}, "report": report, "submissions": submissions,
           "before": before, "paths": paths, "wall": wall}
    for pid in _sleepers():  # only ever left behind when kernels are not isolated
        os.kill(pid, 9)


def test_the_batch_finishes_with_every_submission(graded_class):
    assert set(graded_class["graded"]) == set(graded_class["paths"])
    assert graded_class["wall"] < 300, f"grading the class took {graded_class['wall']:.0f} s"


def test_exact_gradebook(graded_class):
    if not FULL_ISOLATION:
        pytest.skip("without root the thief can read other submissions (documented in t5lesson.grading.sandbox)")
    assert (graded_class["report"] / "gradebook.csv").read_text() == EXPECTED


def test_no_submission_file_changed(graded_class):
    assert _hashes(graded_class["submissions"]) == graded_class["before"]


def test_tampering_earns_only_what_was_answered(graded_class):
    tamper = graded_class["graded"]["tamper"]
    points = {o.question: o.points for o in tamper.outcomes}
    assert points == {"q1": 0, "q2": 0, "q3": 0, "q4": 0, "q5": 0, "q6": 1, "q7": 0}
    shortcut = {o.question: o for o in graded_class["graded"]["shortcut"].outcomes}
    assert shortcut["q7"].points == 0 and "reference implementation is not available" in shortcut["q7"].message
    broken = graded_class["graded"]["tamper_builtins"]
    assert broken.total == 0 and broken.status == "stuck"


@pytest.mark.skipif(not FULL_ISOLATION, reason="needs root: mount namespaces and a user id per kernel")
def test_thief_can_neither_read_others_nor_write_the_report(graded_class):
    thief = graded_class["graded"]["thief"]
    assert thief.total == 0
    assert any("PermissionError" in note for note in thief.notes)
    rows = list(csv.DictReader(io.StringIO((graded_class["report"] / "gradebook.csv").read_text())))
    assert len(rows) == len(graded_class["paths"])


def test_hanging_runs_are_cut_off_within_their_limits(graded_class):
    graded = graded_class["graded"]
    slack = 15  # kernel start-up and the rest of the notebook, on a busy 2-core machine
    assert graded["infinite_loop"].seconds < LIMITS.cell_timeout + slack
    assert graded["uninterruptible"].seconds < LIMITS.cell_timeout + LIMITS.stuck_grace + slack
    assert graded["widgets"].seconds < 2 * LIMITS.cell_timeout + slack
    assert any("interrupted" in note for note in graded["infinite_loop"].notes)


@pytest.mark.skipif(not FULL_ISOLATION, reason="needs root: a user id per kernel, to find everything it started")
def test_processes_started_by_kernels_are_gone(graded_class):
    assert _sleepers() == []


def test_verdicts_say_what_happened(graded_class):
    graded = graded_class["graded"]

    def lines(student):
        return [o.line() for o in graded[student].outcomes] + graded[student].notes

    assert all("Not attempted" in o.line() for o in graded["blank"].outcomes)
    assert any("not valid JSON" in line for line in lines("not_json"))
    assert any("not a notebook" in line for line in lines("not_a_notebook"))
    assert any("kernel died" in line for line in lines("exits"))
    assert any("MemoryError" in line for line in lines("memory"))
    assert any("characters; output beyond" in line for line in lines("output_flood"))
    assert any("ZeroDivisionError" in line and "answer cell of q6" in line for line in lines("raises"))
    assert any("ValueError: a scratch cell that fails" in line for line in lines("raises"))
    assert any("moved" in line for line in lines("reordered"))
    assert any("'setup' was missing" in line for line in lines("reordered"))
    assert any(line.startswith("q7: Partly correct: 74 of 91") for line in lines("partial"))


def test_reports_are_written(graded_class):
    report = graded_class["report"]
    feedback = sorted(p.stem for p in (report / "feedback").iterdir())
    assert feedback == sorted(graded_class["paths"])
    sheet = list(csv.DictReader(io.StringIO((report / "free_text.csv").read_text())))
    answers = {row["student"]: row["answer"] for row in sheet}
    assert answers["full"].startswith("Dropping the")
    assert answers["blank"] == ""
    assert (report / "summary.md").exists()


def test_a_run_past_the_hard_limit_is_killed(tmp_path):
    """The outermost limit: the grader kills the worker, the kernel and its children."""

    class Tight(Limits):
        def hard_limit(self, questions):
            return 8.0

    from synthetic_class import add_after, full, write

    submissions = tmp_path / "submissions"
    submissions.mkdir()
    nb = full()
    add_after(nb, "setup", f'import subprocess\nsubprocess.run(["sleep", "{SLEEP_MARKER}"])')
    write(nb, submissions / "slow.ipynb")
    start = time.monotonic()
    graded = grade_folder(submissions, tmp_path / "report",
                          limits=Tight(cell_timeout=60, notebook_timeout=60, startup_timeout=30), jobs=1)
    assert time.monotonic() - start < 8.0 + 10
    assert graded[0].status == "time limit" and graded[0].total == 0
    assert all(o.status == "error" for o in graded[0].outcomes if o.question != "q3")
    assert _sleepers() == []
