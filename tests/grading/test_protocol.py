"""The grading protocol: every module path and reference that travels as a string resolves here,
so a rename fails in CI rather than in a class; the job file and the statuses round-trip."""
from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

import nbformat
import pytest

from t5lesson import exercises as bank
from t5lesson.grading import harvest, protocol
from t5lesson.grading.protocol import (
    RUNNER_MODULE,
    SANDBOX_MODULE,
    Job,
    Limits,
    RunEnd,
    SandboxPlan,
    Status,
    harvest_question,
    mark_harvest,
    resolve,
    status_of,
)
from t5lesson.grading.questions.kinds import Code

CODE_QUESTIONS = [(e, q) for e in bank.exercise_ids() for q in bank.get(e).questions if isinstance(q, Code)]


@pytest.mark.parametrize("module", [RUNNER_MODULE, SANDBOX_MODULE])
def test_started_modules_import_and_have_a_main(module):
    assert callable(getattr(importlib.import_module(module), "main", None))


@pytest.mark.parametrize("exercise,question", CODE_QUESTIONS, ids=lambda x: getattr(x, "id", x))
def test_references_and_blocked_targets_resolve(exercise, question):
    assert callable(resolve(question.reference))
    for target in question.blocked:
        module, _, path = target.partition(":")
        if not module.startswith("t5lesson"):
            continue  # third-party targets: blocked as whole modules, or only when loaded
        if path.endswith("*"):  # a whole module or class: it must hold functions to block
            owner = importlib.import_module(module) if path == "*" else resolve(f"{module}:{path[:-2]}")
            assert harvest.target_functions(owner, "*"), target
            continue
        obj = resolve(target)
        # harvest.blocking swaps the code object; a target without one would silently stay usable
        assert inspect.isfunction(getattr(obj, "__func__", obj)), target


def test_harvest_marker_round_trip():
    cell = nbformat.v4.new_code_cell("x = 1")
    assert harvest_question(cell) is None
    mark_harvest(cell, "q3")
    assert harvest_question(cell) == "q3"


def test_every_run_end_has_a_status_and_unknown_ones_are_grader_errors():
    assert {status_of(end) for end in RunEnd} <= set(Status)
    assert status_of("completed") is Status.GRADED
    assert status_of("something new") is Status.GRADER_ERROR
    assert f"{Status.KERNEL_DIED}" == str(Status.KERNEL_DIED) == "kernel died"


def test_job_file_round_trip(tmp_path: Path):
    job = Job("run.ipynb", "result.json", str(tmp_path), Limits(cell_timeout=3.0, memory_mb=512), {"home": "/x"})
    job.write(tmp_path / "job.json")
    assert Job.read(tmp_path / "job.json") == job


def test_sandbox_plan_crosses_the_job_file_as_plain_json(tmp_path: Path):
    plan = SandboxPlan(home="/w/home", scratch="/w/job/scratch", disk_bytes=256 << 20, hide=("/w/sub", "/w/out"),
                       keep=("/usr", "/w/ipc"), writable_keep=("/w/ipc",), uid=2_100_000_001)
    Job("run.ipynb", "result.json", str(tmp_path), sandbox={"isolation": plan.to_json()}).write(tmp_path / "job.json")
    wire = json.loads((tmp_path / "job.json").read_text())["sandbox"]["isolation"]
    assert wire["hide"] == ["/w/sub", "/w/out"] and wire["uid"] == 2_100_000_001  # plain JSON on the wire
    assert SandboxPlan.from_json(Job.read(tmp_path / "job.json").sandbox["isolation"]) == plan
    assert SandboxPlan.from_json({"home": "/h", "scratch": "/s", "disk_bytes": 1}).uid is None  # as a normal user


def test_the_harvest_and_the_grader_agree_on_the_bounds_of_a_record():
    """harvest.py cannot import records.py (it runs alone in the student's kernel): its copies must agree."""
    from t5lesson.grading import records

    assert (harvest.MAX_ITEMS, harvest.MAX_TEXT) == (records.MAX_ITEMS, records.MAX_TEXT)
    deepest = [[[[[1]]]]]  # the deepest list the harvest lays out: one level more is "too deep"
    assert harvest.to_plain([deepest])["v"][0]["v"][0]["v"][0]["v"][0]["t"] == "other"
    assert _depth(harvest.to_plain(deepest)) <= records.MAX_PLAIN_DEPTH


def _depth(plain) -> int:
    return 1 + max(map(_depth, plain["v"]), default=0) if plain["t"] == "list" else 0


def test_protocol_names_are_defined_once():
    """The harvest MIME type and the cell marker are spelled only in harvest.py and protocol.py."""
    root = Path(protocol.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        if path.name not in ("harvest.py",):
            assert "text/x-t5lesson-harvest" not in text, path
        if path.name != "protocol.py":  # the cell-metadata key (the command's name is the same word)
            assert not re.search(r'\[\s*"t5grade"\s*\]|get\(\s*"t5grade"|"t5grade"\s*:', text), path
