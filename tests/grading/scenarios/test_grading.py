"""The class grader on a synthetic class: exact gradebook, untouched files, no unearned marks.

One module-scoped run grades every kind of submission to exercise 03 (tests/grading/synthetic_class.py)
with small limits, so the whole module takes about a minute on 2 cores. Each test then reads what it
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
from isolation_helpers import processes_running

from t5lesson.grade import Limits, grade_folder
from t5lesson.grading.sandbox.namespaces import probe
from t5lesson.grading.sandbox.walls import uids

from synthetic_class import FULL_POINTS, build_class

LIMITS = Limits(cell_timeout=4, notebook_timeout=25, harvest_timeout=10, stuck_grace=3, startup_timeout=30)
WHY_NOT = probe(uids(1)[0])
FULL_ISOLATION = WHY_NOT is None
ISOLATION = "auto" if FULL_ISOLATION else "none"
SLEEP_MARKER = "987"

# Rows of the gradebook, in the order it is written (sorted by student).
EXPECTED = """\
student,q1,q2,q3,q4,q5,q6,q7,q8,q9,total,status
blank,0,0,0,0,0,0,0,0,,0,graded
exits,0,0,0,0,0,0,0,0,,0,kernel died
full,1,1,1,1,1,1,4,4,,14,graded
infinite_loop,1,1,1,1,1,1,4,4,,14,graded
memory,1,1,1,1,1,1,4,4,,14,graded
missing_variable,1,1,1,0,1,1,4,4,,13,graded
not_a_notebook,0,0,0,0,0,0,0,0,,0,unreadable
not_json,0,0,0,0,0,0,0,0,,0,unreadable
output_flood,1,1,1,1,1,1,4,4,,14,graded
partial,0,1,1,1,1,0,0.22,4,,8.22,graded
raises,1,1,1,1,1,0,4,4,,13,graded
reordered,1,1,1,1,0,1,4,4,,13,graded
shortcut,1,1,1,1,1,1,0,4,,10,graded
tamper,0,0,1,0,0,0,0,0,,1,graded
tamper_builtins,0,0,0,0,0,0,0,0,,0,stuck
thief,0,0,0,0,0,0,0,0,,0,graded
uninterruptible,0,0,0,0,0,0,0,0,,0,stuck
widgets,1,1,1,1,1,1,4,4,,14,graded
"""


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _sleepers() -> list[int]:
    return processes_running("sleep", SLEEP_MARKER)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    submissions, report = root / "submissions", root / "report"
    report.mkdir()  # exists during the run, so the thief knows where the gradebook will be
    paths = build_class(submissions, report, loop_marker=SLEEP_MARKER, thief=FULL_ISOLATION)
    before = _hashes(submissions)
    start = time.monotonic()
    graded = grade_folder(submissions, report, limits=LIMITS, jobs=2, isolation=ISOLATION)
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
        pytest.skip(f"kernels cannot be isolated here ({WHY_NOT}), so the thief could read other submissions")
    assert (graded_class["report"] / "gradebook.csv").read_text() == EXPECTED


def test_no_submission_file_changed(graded_class):
    assert _hashes(graded_class["submissions"]) == graded_class["before"]


def test_tampering_earns_only_what_was_answered(graded_class):
    tamper = graded_class["graded"]["tamper"]
    points = {o.question: o.points for o in tamper.outcomes}
    assert points == {"q1": 0, "q2": 0, "q3": 1, "q4": 0, "q5": 0, "q6": 0, "q7": 0, "q8": 0, "q9": 0}
    shortcut = {o.question: o for o in graded_class["graded"]["shortcut"].outcomes}
    assert shortcut["q7"].points == 0 and "reference implementation is not available" in shortcut["q7"].message
    broken = graded_class["graded"]["tamper_builtins"]
    assert broken.total == 0 and broken.status == "stuck"


@pytest.mark.skipif(not FULL_ISOLATION, reason="needs kernel isolation (root, or unprivileged user namespaces)")
def test_thief_can_neither_read_others_nor_write_the_report(graded_class):
    thief = graded_class["graded"]["thief"]
    assert thief.total == 0
    refused = ("PermissionError", "Read-only file system", "FileNotFoundError")  # hidden, or not there at all
    assert any(word in note for note in thief.notes for word in refused), thief.notes
    rows = list(csv.DictReader(io.StringIO((graded_class["report"] / "gradebook.csv").read_text())))
    assert len(rows) == len(graded_class["paths"])


def test_hanging_runs_are_cut_off_within_their_limits(graded_class):
    """Said by the verdicts, not by a stopwatch (wall times depend on the machine's load): a loop is
    interrupted at the per-cell limit and the cells after it still run (full marks, no cell left
    unrun for want of notebook time); a loop that ignores the interrupt ends the run as stuck."""
    graded = graded_class["graded"]
    loop = graded["infinite_loop"]
    assert any(f"ran past the limit of {LIMITS.cell_timeout:g} s per cell and was interrupted" in note
               for note in loop.notes), loop.notes
    assert loop.status == "graded" and loop.total == FULL_POINTS
    assert not any("were not run" in note for note in loop.notes), loop.notes
    stuck = graded["uninterruptible"]
    assert stuck.status == "stuck" and any("did not stop when interrupted" in note for note in stuck.notes)
    assert graded["widgets"].status == "graded" and graded["widgets"].total == FULL_POINTS


@pytest.mark.skipif(not FULL_ISOLATION, reason="needs kernel isolation: a PID namespace per kernel")
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
    assert any(line.startswith("q7: Partly correct: 5 of 30") for line in lines("partial"))  # drawn cases


def test_reports_are_written(graded_class):
    report = graded_class["report"]
    feedback = sorted(p.stem for p in (report / "feedback").iterdir())
    assert feedback == sorted(graded_class["paths"])
    sheet = list(csv.DictReader(io.StringIO((report / "free_text.csv").read_text())))
    answers = {row["student"]: row["answer"] for row in sheet}
    assert answers["full"].startswith("Nearby tokens matter most")
    assert answers["blank"] == ""
    assert (report / "summary.md").exists()


def test_a_run_past_the_hard_limit_is_killed(tmp_path):
    """The outermost limit: the grader kills the worker, the kernel and its children."""

    class Tight(Limits):
        def hard_limit(self):
            return 8.0

    from synthetic_class import add_after, full, write

    submissions = tmp_path / "submissions"
    submissions.mkdir()
    nb = full()
    add_after(nb, "setup", f'import subprocess\nsubprocess.run(["sleep", "{SLEEP_MARKER}"])')
    write(nb, submissions / "slow.ipynb")
    start = time.monotonic()
    graded = grade_folder(submissions, tmp_path / "report",
                          limits=Tight(cell_timeout=60, notebook_timeout=60, startup_timeout=30), jobs=1,
                          isolation=ISOLATION)
    assert time.monotonic() - start < 8.0 + 10
    assert graded[0].status == "time limit" and graded[0].total == 0
    assert all(o.status == "error" for o in graded[0].outcomes if o.question != "q9")  # q9: free text
    assert _sleepers() == []
