"""Every lesson fits one sitting: at most 2,500 words of markdown outside <details>, 3,200 with them.

Derivations, sources and asides go into `<details>` blocks, which a reader opens when they want
them: the main line stays under the first limit, and the whole lesson, opened blocks included,
under the second. Code cells are not counted. A word is a run of non-space characters.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
MAX_MAIN_LINE = 2500  # outside <details>
MAX_WITH_DETAILS = 3200  # every markdown word
DETAILS = re.compile(r"<details\b.*?</details>", re.DOTALL | re.IGNORECASE)


def markdown_words(path: Path, with_details: bool) -> int:
    """Words of the lesson's markdown cells, joined; without the <details> blocks unless `with_details`."""
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return len((text if with_details else DETAILS.sub(" ", text)).split())


def test_details_blocks_are_closed():
    for path in LESSONS:
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"]) if cell["cell_type"] == "markdown" else ""
            assert text.count("<details") == text.count("</details>"), f"{path.name}: an unclosed <details> block"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_main_line_under_2500_words(path):
    words = markdown_words(path, with_details=False)
    assert words < MAX_MAIN_LINE, f"{path.name}: {words} words of markdown outside <details> (limit {MAX_MAIN_LINE})"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_whole_lesson_at_most_3200_words(path):
    words = markdown_words(path, with_details=True)
    assert words <= MAX_WITH_DETAILS, f"{path.name}: {words} words of markdown with <details> (limit 3200)"
