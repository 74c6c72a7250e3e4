import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    np.random.seed(0)
    torch.manual_seed(0)


def pytest_terminal_summary(terminalreporter):
    """Print the reports tests leave under artifacts/ (browser latencies, notebook timings)."""
    from pathlib import Path

    for report in sorted((Path(__file__).resolve().parents[1] / "artifacts").glob("*/report.txt")):
        terminalreporter.write_sep("-", f"{report.parent.name} report ({report})")
        terminalreporter.write(report.read_text())


# --- notebook time budgets --------------------------------------------------------------------
# nbval makes one test item per cell; we add up every phase of every cell per notebook (the
# first cell's setup includes starting the kernel) and fail the run when a notebook is over budget.
BUDGET_S = {"05": 60.0}
DEFAULT_BUDGET_S = 20.0
_notebook_seconds: dict = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] = _notebook_seconds.get(path, 0.0) + report.duration


def budget_for(path: str) -> float:
    from pathlib import Path

    return BUDGET_S.get(Path(path).name[:2], DEFAULT_BUDGET_S)


def pytest_sessionfinish(session, exitstatus):
    if not _notebook_seconds:
        return
    from pathlib import Path

    lines = [f"{'notebook':<48} {'seconds':>8} {'budget':>7}"]
    over = []
    for path, seconds in sorted(_notebook_seconds.items()):
        budget = budget_for(path)
        lines.append(f"{path:<48} {seconds:>8.1f} {budget:>7.0f}{'  OVER BUDGET' if seconds > budget else ''}")
        if seconds > budget:
            over.append(path)
    report = Path(__file__).resolve().parents[1] / "artifacts" / "notebooks" / "report.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines) + "\n")
    if over and session.exitstatus == 0:
        session.exitstatus = 1
