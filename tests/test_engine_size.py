"""The grading engine may only shrink: `t5lesson/grading/` (its `*.py`, counted as `wc -l` counts them,
comments and blank lines included) stays under BUDGET.

BUDGET is its size after the cut that docs/grading.md ("Why not otter-grader, nbgrader or Gradescope
alone") argues for was started, rounded up. Lower BUDGET with every cut;
never raise it without a measured reason written here.
"""
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "t5lesson" / "grading"
BUDGET = 6_000  # 8,683 lines before the cut, 7,386 before its second round; 5,998 after it


def test_grading_engine_stays_within_its_line_budget():
    lines = {path.relative_to(ENGINE): len(path.read_text().splitlines()) for path in ENGINE.rglob("*.py")}
    largest = sorted(lines.items(), key=lambda item: -item[1])[:5]
    assert sum(lines.values()) < BUDGET, f"{sum(lines.values())} lines; largest: {largest}"
