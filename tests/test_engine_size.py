"""The grading engine stays the size docs/grading.md argues for ("Why not otter-grader, nbgrader or
Gradescope alone"): under 6,000 lines, counted as `wc -l` counts them, comments and blank lines included."""
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "t5lesson" / "grading"
LIMIT = 6_000


def test_grading_engine_is_under_its_line_budget():
    lines = {path.relative_to(ENGINE): len(path.read_text().splitlines()) for path in ENGINE.rglob("*.py")}
    largest = sorted(lines.items(), key=lambda item: -item[1])[:5]
    assert sum(lines.values()) < LIMIT, f"{sum(lines.values())} lines; largest: {largest}"
