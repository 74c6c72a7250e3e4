"""Every figure a lesson stores carries alt text (what it shows, what to notice) in its output metadata.

`describe(fig, ...)` writes it where the figure is made; `as_image` and the explorers put it in
the output's metadata (image/png -> alt), where JupyterLab, screen readers and the website
build (book/build.py, into `<img alt>`) read it. This reads the stored notebooks, so a figure
added without alt text, or a notebook stored before the alt text existed, fails here.
"""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")


def stored_figures(path):
    """(cell number, mime, alt or None) of every image a notebook stores."""
    for number, cell in enumerate(json.loads(path.read_text())["cells"]):
        for output in cell.get("outputs", []):
            for mime in IMAGE_MIMES:
                if mime in output.get("data", {}):
                    yield number, mime, output.get("metadata", {}).get(mime, {}).get("alt")


def test_the_lessons_store_figures():
    assert sum(1 for nb in NOTEBOOKS for _ in stored_figures(nb)) >= 15


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_stored_figure_has_alt_text(notebook):
    missing, weak = [], []
    for number, mime, alt in stored_figures(notebook):
        if not alt:
            missing.append(f"cell {number} ({mime})")
        elif len(alt) < 60 or alt.lower().endswith((".png", ".svg")) or "_images/" in alt:
            weak.append(f"cell {number}: {alt!r}")
    assert not missing, (f"{notebook.name}: figures without alt text: {missing}; build them with "
                         "describe(fig, ...) and show them with as_image, then re-run the notebook")
    assert not weak, f"{notebook.name}: alt text too short or a file name: {weak}"
