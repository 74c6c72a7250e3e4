"""Run-wide hooks (they must sit at the root to see the nbval items of notebooks/, solutions/, exercises/).

- Notebook time budgets: nbval makes one test item per cell; we add up every phase of every
  cell per notebook (the first cell's setup includes starting the kernel) and fail the run when
  a notebook is over its budget: 20 s for every notebook (BUDGET_S holds exceptions by number
  prefix; there are none).
- At the end, print the reports tests leave under artifacts/ (notebook times, browser latencies).
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
BUDGET_S: dict = {}  # notebook number prefix -> seconds, where a notebook may take longer than the default
DEFAULT_BUDGET_S = 20.0
_notebook_seconds: dict = {}


def pytest_sessionstart(session):
    # A report left by an earlier run would be printed again below as if it were this run's.
    (ROOT / "artifacts" / "notebooks" / "report.txt").unlink(missing_ok=True)


def budget_for(path: str) -> float:
    return BUDGET_S.get(Path(path).name[:2], DEFAULT_BUDGET_S)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] = _notebook_seconds.get(path, 0.0) + report.duration


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if not _notebook_seconds:
        return
    lines = [f"{'notebook':<48} {'seconds':>8} {'budget':>7}"]
    over = []
    for path, seconds in sorted(_notebook_seconds.items()):
        budget = budget_for(path)
        lines.append(f"{path:<48} {seconds:>8.1f} {budget:>7.0f}{'  OVER BUDGET' if seconds > budget else ''}")
        if seconds > budget:
            over.append(path)
    lines.append(f"{'all notebooks':<48} {sum(_notebook_seconds.values()):>8.1f}")
    if over:
        lines.append(f"FAILING THE RUN: {len(over)} notebook(s) over their time budget: {', '.join(over)}")
    report = ROOT / "artifacts" / "notebooks" / "report.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines) + "\n")
    if over and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    for report in sorted((ROOT / "artifacts").glob("*/report.txt")):
        terminalreporter.write_sep("-", f"{report.parent.name} report ({report})")
        terminalreporter.write(report.read_text())
