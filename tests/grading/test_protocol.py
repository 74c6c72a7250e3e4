"""The grading protocol: every module path and reference that travels as a string resolves here,
so a rename fails in CI rather than in a class; every type that crosses a process boundary (the
job file, the launcher's config, the result file) round-trips through JSON."""
from __future__ import annotations

import importlib
import inspect
import json
import re
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest

from t5lesson import exercises as bank
from t5lesson.grading import harvest, protocol
from t5lesson.grading.protocol import (
    RUNNER_MODULE,
    SANDBOX_MODULE,
    CellResult,
    CellStatus,
    Job,
    LaunchConfig,
    Limits,
    RunEnd,
    RunResult,
    SandboxPlan,
    Walls,
    harvest_question,
    mark_harvest,
    resolve,
)
from t5lesson.grading.questions.kinds import Code
from t5lesson.grading.verdict import Status, status_of

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


PLAN = SandboxPlan(home="/w/home", disk_bytes=256 << 20, hide=("/w/sub", "/w/out"),
                   keep=("/usr", "/w/ipc"), writable_keep=("/w/ipc",), uid=2_100_000_001)
LAUNCH = LaunchConfig(home="/w/home", pid_file="/w/job/kernel.pid", ipc_dir="/w/ipc", memory_bytes=2 << 30,
                      cpu_seconds=230, file_bytes=64 << 20, max_processes=256, cgroup=("/sys/fs/cgroup/t5",),
                      watch_memory=None, zygote="/w/zygote/socket", isolation=PLAN)
RESULT = RunResult(cells=[CellResult(0, CellStatus.OK, 0.5, 12), CellResult(3, CellStatus.SKIPPED),
                          CellResult(1, CellStatus.ERROR, 0.1, 40, True, "ZeroDivisionError", "division by zero",
                                     "2", "f")],
                   harvest={"q1": '{"nonce": "n"}'}, ended=RunEnd.TIME_LIMIT, detail="", memory_exceeded=True)


def _through_json(data: dict) -> dict:
    return json.loads(json.dumps(data))


@pytest.mark.parametrize("value", [PLAN, LAUNCH, LaunchConfig(home="/h"), RESULT, RunResult()], ids=repr)
def test_every_protocol_type_round_trips_through_json(value):
    assert type(value).from_json(_through_json(value.to_json())) == value


def test_limits_and_walls_round_trip_through_json():
    limits = Limits(cell_timeout=3.0, memory_mb=512, harvest_limit=5_000_000)
    assert Limits.from_json(_through_json(asdict(limits))) == limits
    walls = Walls(hide=("/w/sub",), keep=("/usr",))
    assert Walls(**{k: tuple(v) for k, v in _through_json(asdict(walls)).items()}) == walls
    plan = walls.plan(uid=None, home="/h", disk_bytes=1, ipc_dir="/w/ipc")
    assert plan.keep == ("/usr", "/w/ipc") and plan.writable_keep == ("/w/ipc",) and plan.hide == ("/w/sub",)


def test_the_bounds_of_a_record_follow_the_runs_harvest_limit():
    assert Limits().harvest_nodes() == 400_000 and Limits().notebook_nodes() == 2_000_000  # the defaults of old
    assert Limits(harvest_limit=5_000_000).harvest_nodes() > Limits().harvest_nodes()


def test_job_file_round_trip(tmp_path: Path):
    job = Job("run.ipynb", "result.json", str(tmp_path), Limits(cell_timeout=3.0, memory_mb=512), LAUNCH)
    job.write(tmp_path / "job.json")
    assert Job.read(tmp_path / "job.json") == job
    LAUNCH.write(tmp_path / "sandbox.json")  # the worker's copy for the launcher
    assert LaunchConfig.read(tmp_path / "sandbox.json") == LAUNCH


def test_sandbox_plan_crosses_the_job_file_as_plain_json(tmp_path: Path):
    Job("run.ipynb", "result.json", str(tmp_path), sandbox=LAUNCH).write(tmp_path / "job.json")
    wire = json.loads((tmp_path / "job.json").read_text())["sandbox"]["isolation"]
    assert wire["hide"] == ["/w/sub", "/w/out"] and wire["uid"] == 2_100_000_001  # plain JSON on the wire
    assert Job.read(tmp_path / "job.json").sandbox.isolation == PLAN
    assert SandboxPlan.from_json({"home": "/h", "scratch": "/s", "disk_bytes": 1}).uid is None  # as a normal user


def test_a_result_file_is_read_leniently():
    """What the grader cannot read in a result file is left out, never trusted: odd cells, texts, ends."""
    result = RunResult.from_json({"cells": [{"index": "0"}, 7, {"index": 2, "status": "new", "ename": 3}],
                                  "harvest": {"q1": 5, "q2": "text"}, "ended": "exploded", "detail": None})
    assert [(c.index, c.status, c.ename) for c in result.cells] == [(2, None, "3")]
    assert result.harvest == {"q2": "text"} and result.ended is None and status_of(result.ended) is Status.GRADER_ERROR
    assert RunResult.from_json({}) == RunResult(ended=None)


def test_the_harvest_and_the_grader_agree_on_the_bounds_of_a_record():
    """harvest.py cannot import records.py (it runs alone in the student's kernel): its copies must agree."""
    from t5lesson.grading import records

    assert harvest.MAX_ITEMS == records.MAX_ITEMS  # records cuts strings with harvest.to_plain itself
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
