"""The notebook time budget (the root conftest.py): a notebook fails only when both its wall time and
its kernel's CPU time are over budget, so waiting on a busy machine alone never fails it."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
budget = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(budget)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_cpu_seconds_counts_this_process_work():
    before = budget._cpu_seconds(os.getpid())
    total = 0
    for i in range(3_000_000):
        total += i * i
    after = budget._cpu_seconds(os.getpid())
    assert before is not None and after > before
    assert budget._cpu_seconds(2 ** 31) is None  # no such process


@pytest.mark.parametrize("wall, cpu, over", [
    (25.0, 12.0, False),  # a busy machine: the kernel waited for a core
    (12.0, 25.0, False),  # threads in parallel: more CPU than wall time
    (25.0, 24.0, True),   # really too much work
    (25.0, None, True),   # no CPU reading (not Linux): wall time decides
    (15.0, None, False),
])
def test_over_budget_needs_both_readings(monkeypatch, wall, cpu, over):
    path = "notebooks/99_example.ipynb"
    monkeypatch.setattr(budget, "_notebook_seconds", {path: wall})
    monkeypatch.setattr(budget, "_kernel_cpu_seconds", {} if cpu is None else {path: cpu})
    assert budget.over_budget(path) is over
