"""Stored notebooks: lessons and solutions executed (or nbval checks nothing), exercises blank."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
BLANK = sorted((ROOT / "exercises").glob("*.ipynb"))


def code_cells(path):
    cells = json.loads(path.read_text())["cells"]
    return [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).strip()]


@pytest.mark.parametrize("path", EXECUTED, ids=[p.name for p in EXECUTED])
def test_stored_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(path)]
    assert None not in counts, f"{path.name}: cells never executed (nbval would not compare them)"
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: not executed top to bottom in one fresh kernel"


@pytest.mark.parametrize("path", EXECUTED + BLANK, ids=[p.name for p in EXECUTED + BLANK])
def test_kernelspec_and_no_absolute_paths(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        assert "/work/" not in source and "/tmp/" not in source and "/root/" not in source, path.name


ALL = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb")) + BLANK
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_PRINTED = 90  # characters: wider lines wrap mid-number in a 1400 px JupyterLab window


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_no_test_plumbing_in_code(path):
    """Outputs nbval must not compare are tagged `nbval-ignore-output`; no NBVAL comment in sight."""
    shown = [c["source"] for c in code_cells(path) if "".join(c["source"]).lstrip().upper().startswith("# NBVAL")]
    assert not shown, f"{path.name}: code cells start with an NBVAL comment; use the cell tag instead"


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_printed_lines_fit_the_page(path):
    long = [line for c in code_cells(path) for o in c.get("outputs", []) if o["output_type"] == "stream"
            for line in "".join(o["text"]).splitlines() if len(line) > MAX_PRINTED]
    assert not long, f"{path.name}: printed lines over {MAX_PRINTED} characters: {long[:3]}"
