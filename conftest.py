"""Run-wide hooks (they must sit at the root to see the nbval items of notebooks/, solutions/, exercises/).

- Notebook time budgets: nbval makes one test item per cell; we add up every phase of every
  cell per notebook (the first cell's setup includes starting the kernel), and we read the CPU
  time its kernel process has used. A notebook fails the run when both are over its budget:
  20 s for every notebook (BUDGET_S holds the exceptions, by number prefix). Wall
  time alone would fail a notebook for waiting on a busy machine (the kernel's CPU time does
  not count the wait); CPU time alone would overcount a kernel that runs threads in parallel
  (its wall time does not). A notebook over both did more work than its budget allows.
- At the end, print the reports tests leave under artifacts/ (notebook times, browser latencies).
"""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
# Reports go here; tools/cross_cpu.py gives each of its parallel runs a folder of its own.
ARTIFACTS = Path(os.environ.get("T5LESSON_ARTIFACTS") or ROOT / "artifacts")
# notebook number prefix -> seconds, where a notebook may take longer than the default. Lesson 5 trains
# its four length-generalisation models in the open: 19.8 s of kernel CPU on a quiet machine here, 2.5 s
# of which is PyTorch importing torch._dynamo when the first optimizer is built. (05b shares the prefix.)
BUDGET_S: dict = {"05": 25.0}
DEFAULT_BUDGET_S = 20.0
_notebook_seconds: dict = {}
_kernel_cpu_seconds: dict = {}  # notebook path -> CPU seconds its kernel had used after its last cell


def pytest_sessionstart(session):
    # A report left by an earlier run would be printed again below as if it were this run's.
    (ARTIFACTS / "notebooks" / "report.txt").unlink(missing_ok=True)


# tools/cross_cpu.py runs the notebooks on the kernels of a smaller CPU (PyTorch's `default`
# capability has no vector kernels), which is slower by design: it scales the budgets.
BUDGET_SCALE = float(os.environ.get("T5LESSON_BUDGET_SCALE") or 1.0)


def budget_for(path: str) -> float:
    return BUDGET_S.get(Path(path).name[:2], DEFAULT_BUDGET_S) * BUDGET_SCALE


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] = _notebook_seconds.get(path, 0.0) + report.duration


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` and its waited-for children (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _kernel_pid(item) -> int | None:
    kernel = getattr(item.parent, "kernel", None)  # nbval's RunningKernel, one per notebook
    process = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "process", None)
    return getattr(process, "pid", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    path = item.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        pid = _kernel_pid(item)
        cpu = _cpu_seconds(pid) if pid else None
        if cpu is not None:  # cumulative: the last cell's reading is the notebook's
            _kernel_cpu_seconds[path] = max(cpu, _kernel_cpu_seconds.get(path, 0.0))


def over_budget(path: str) -> bool:
    budget = budget_for(path)
    cpu = _kernel_cpu_seconds.get(path)
    return _notebook_seconds[path] > budget and (cpu is None or cpu > budget)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if not _notebook_seconds:
        return
    lines = [f"{'notebook':<48} {'seconds':>8} {'kernel CPU s':>12} {'budget':>7}"]
    over = []
    for path, seconds in sorted(_notebook_seconds.items()):
        cpu = _kernel_cpu_seconds.get(path)
        cpu_text = f"{cpu:.1f}" if cpu is not None else "-"
        late = over_budget(path)
        mark = "  OVER BUDGET" if late else ""
        lines.append(f"{path:<48} {seconds:>8.1f} {cpu_text:>12} {budget_for(path):>7.0f}{mark}")
        if late:
            over.append(path)
    lines.append(f"{'all notebooks':<48} {sum(_notebook_seconds.values()):>8.1f} "
                 f"{sum(_kernel_cpu_seconds.values()):>12.1f}")
    if over:
        lines.append(f"FAILING THE RUN: {len(over)} notebook(s) over their time budget: {', '.join(over)}")
    report = ARTIFACTS / "notebooks" / "report.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines) + "\n")
    if over and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    for report in sorted(ARTIFACTS.glob("*/report.txt")):
        terminalreporter.write_sep("-", f"{report.parent.name} report ({report})")
        terminalreporter.write(report.read_text())
