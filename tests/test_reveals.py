"""An answer waits until it is earned: the cell that reveals a prediction's answer is stored collapsed.

After a "Predict first" or "Think!" prompt, the code cell that shows the answer carries the tag
`reveal` and JupyterLab's cell metadata `jupyter.outputs_hidden`, so its stored output is folded
away until the learner runs the cell (tests/test_browser.py checks this in JupyterLab itself, the
website test on the built pages).
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROMPT = re.compile(r"Predict first|\bThink!")
LESSONS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


def reveal_cells(cells) -> list[int]:
    return [n for n, c in enumerate(cells) if "reveal" in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_every_prompt_has_a_collapsed_reveal(path):
    cells = json.loads(path.read_text())["cells"]
    prompts = [n for n, c in enumerate(cells) if c["cell_type"] == "markdown" and PROMPT.search("".join(c["source"]))]
    reveals = reveal_cells(cells)
    for k, n in enumerate(prompts):
        end = prompts[k + 1] if k + 1 < len(prompts) else len(cells)
        assert any(n < r < end for r in reveals), \
            f"{path.name}: the prompt in cell {n} has no code cell tagged 'reveal' before the next prompt"
    for r in reveals:
        cell = cells[r]
        assert cell["cell_type"] == "code", f"{path.name}: cell {r} is tagged reveal but is not code"
        assert cell.get("metadata", {}).get("jupyter", {}).get("outputs_hidden") is True, \
            f"{path.name}: the reveal cell {r} is stored with its output open"


# JupyterLab shows a folded output as its first non-empty line (CodeCell.getOutputPlaceholderText),
# taken from the first output in this order of types: so that line must not give the answer away,
# and every reveal cell prints the same neutral line first.
PLACEHOLDER_TYPES = ("text/html", "image/svg+xml", "application/pdf", "text/markdown", "text/plain")


def placeholder(cell) -> str:
    """The line JupyterLab shows in place of a folded cell's output."""
    if not cell.get("outputs"):
        return ""
    first = cell["outputs"][0]
    if first["output_type"] == "stream":
        text = "".join(first["text"])
    elif first["output_type"] == "error":
        return first.get("evalue", "")
    else:
        data = first.get("data", {})
        kind = next((k for k in PLACEHOLDER_TYPES if k in data), None)
        text = "".join(data[kind]) if kind else ""
    return next((line for line in text.split("\n") if line), "")


NEUTRAL = "Compare with your prediction:"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_a_folded_reveal_shows_a_neutral_line(path):
    """Folded, a reveal shows only its first line: the cell prints NEUTRAL first, so that line gives nothing away."""
    cells = json.loads(path.read_text())["cells"]
    for r in reveal_cells(cells):
        line = placeholder(cells[r])
        assert line == NEUTRAL, f"{path.name}: folded, reveal cell {r} shows {line!r}; print {NEUTRAL!r} first"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_the_text_that_discusses_a_result_is_folded_too(path):
    """The Markdown right after a reveal discusses its result (unless it opens the next section with a
    heading): it starts folded in a <details>, so the answer is not on screen before the cell runs."""
    cells = json.loads(path.read_text())["cells"]
    reveals = set(reveal_cells(cells))
    for r in sorted(reveals):
        after = r + 1
        while after in reveals:
            after += 1
        if after >= len(cells) or cells[after]["cell_type"] != "markdown":
            continue
        text = "".join(cells[after]["source"]).lstrip()
        if text.startswith("#"):
            continue  # the next section
        assert text.startswith("<details>"), f"{path.name}: cell {after} discusses reveal {r}'s result unfolded"
