"""Every lesson's main line stays readable in one sitting: under 2,500 words of markdown outside <details>.

Derivations, sources and asides go into `<details>` blocks, which a reader opens when they want
them; they are not counted. Code cells are not counted either.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
MAX_WORDS = 2500
DETAILS = re.compile(r"<details\b.*?</details>", re.DOTALL | re.IGNORECASE)


def main_line_words(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return len(DETAILS.sub(" ", text).split())


def test_details_blocks_are_closed():
    for path in LESSONS:
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"]) if cell["cell_type"] == "markdown" else ""
            assert text.count("<details") == text.count("</details>"), f"{path.name}: an unclosed <details> block"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_main_line_under_2500_words(path):
    words = main_line_words(path)
    assert words < MAX_WORDS, f"{path.name}: {words} words of markdown outside <details> (limit {MAX_WORDS})"
