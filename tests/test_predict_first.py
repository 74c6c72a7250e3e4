"""Every lesson asks the learner to commit to an answer before a cell reveals it, at least twice.

A "Predict first" moment is a Markdown cell with a heading that starts with "Predict first",
placed before the cell that shows the answer; the cell after the reveal refers back to it.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^#{1,6}\s+Predict first\b", re.MULTILINE)

LESSONS = ["00", "01", "02", "03", "04", "05", "06", "07", "08"]


def lesson(prefix):
    (path,) = (ROOT / "notebooks").glob(f"{prefix}_*.ipynb")
    return path


def predict_first_cells(path):
    cells = json.loads(path.read_text())["cells"]
    return [n for n, c in enumerate(cells) if c["cell_type"] == "markdown" and HEADING.search("".join(c["source"]))]


@pytest.mark.parametrize("prefix", LESSONS)
def test_lesson_has_two_predict_first_moments_each_before_a_reveal(prefix):
    path = lesson(prefix)
    found = predict_first_cells(path)
    assert len(found) >= 2, f"{path.name}: {len(found)} 'Predict first' heading(s), need at least 2"
    cells = json.loads(path.read_text())["cells"]
    for n in found:  # a code cell must follow soon after, to reveal the answer
        assert any(c["cell_type"] == "code" for c in cells[n + 1:n + 4]), f"{path.name}: cell {n} reveals nothing"
