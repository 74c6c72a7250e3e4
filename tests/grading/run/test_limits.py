"""Limits hold per submission: the whole-notebook time limit covers the reading of the answers,
and the grader leaves nothing of its own behind (connection files with their keys included).

Limits that need isolation (memory of a whole process tree, shared memory, disk, leftovers of
IPC) are tested in test_isolation.py.
"""
from __future__ import annotations

import tempfile
import time

import nbformat
from isolation_helpers import ISOLATION

from t5lesson import exercises as bank
from t5lesson.grade import grade_folder
from t5lesson.grading import harvest
from t5lesson.grading.protocol import Limits
from t5lesson.grading.run.compose import prepare
from t5lesson.grading.sandbox.resources import harvest_reserve

from synthetic_class import EXERCISE, EXERCISE_ID, FULL_POINTS, add_after, full, write

SLOW_HOOK = "import time\nget_ipython().events.register('pre_run_cell', lambda *args: time.sleep(3))"


def test_the_notebook_limit_bounds_everything_the_reading_included(tmp_path):
    """A hook that sleeps before every cell, the grader's reading cells too, cannot stretch the run."""
    limits = Limits(cell_timeout=5, notebook_timeout=12, harvest_timeout=5, stuck_grace=3, startup_timeout=30)
    folder = tmp_path / "subs"
    folder.mkdir()
    nb = full()
    add_after(nb, "setup", SLOW_HOOK)
    write(nb, folder / "hook.ipynb")
    start = time.monotonic()
    graded = grade_folder(folder, tmp_path / "report", limits=limits, jobs=1, isolation=ISOLATION)
    wall = time.monotonic() - start
    # without the bound: about 25 cells x 3 s; with it, the budget, one cell's grace, the kernel's start
    assert graded[0].seconds < limits.notebook_timeout + limits.stuck_grace + 15, graded[0].seconds
    assert wall < limits.notebook_timeout + limits.stuck_grace + 30
    assert str(graded[0].status) == "time limit"
    assert any("kept for reading the answers" in note for note in graded[0].notes)


def test_reserve_for_the_reading_is_inside_the_budget():
    assert harvest_reserve(Limits()) == 30
    assert harvest_reserve(Limits(notebook_timeout=6, harvest_timeout=30)) == 1.5
    assert Limits(notebook_timeout=6).hard_limit() < Limits(notebook_timeout=6).startup_timeout + 6 + 20


def test_after_slow_cases_timeouts_the_other_cases_are_skipped():
    def hangs():
        time.sleep(30)  # far past the 0.05 s each case gets: every call is stopped by the alarm

    cases = [{"args": [], "kwargs": {}}] * 5
    for allowed in (1, 2):
        results = harvest.call_cases(hangs, cases, 0.05, allowed)
        assert results == [{"timeout": True}] * allowed + [{"skipped": True}] * (5 - allowed)


def test_the_run_notebook_carries_the_slow_cases_limit():
    """`--slow-cases` reaches the kernel: each code question's harvesting cell carries it."""
    exercise, template = bank.get(EXERCISE_ID), nbformat.read(EXERCISE, as_version=4)
    data = nbformat.writes(full()).encode()
    for allowed in (1, 7):
        prep = prepare(data, template, exercise, "nonce", Limits(slow_cases=allowed))
        sources = {q: prep.notebook.cells[i].source for q, i in prep.harvest_cell.items()}
        code = [q.id for q in exercise.questions if q.auto_scored and q.harvest_spec()["kind"] == "code"]
        assert code and all(f"'slow_cases': {allowed}" in sources[q] for q in code)


def test_no_connection_file_or_other_litter_is_left_in_tmp(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    folder = tmp_path / "subs"
    folder.mkdir()
    write(full(), folder / "a.ipynb")
    nb = full()
    add_after(nb, "setup", "quit()")
    write(nb, folder / "b.ipynb")
    limits = Limits(cell_timeout=10, notebook_timeout=40, harvest_timeout=10, startup_timeout=30)
    graded = grade_folder(folder, tmp_path / "report", limits=limits, jobs=2, isolation=ISOLATION)
    assert {g.student: g.total for g in graded} == {"a": FULL_POINTS, "b": FULL_POINTS}, \
        [(g.status, g.notes) for g in graded]
    assert list(scratch.iterdir()) == []
