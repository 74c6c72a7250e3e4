"""The website's explorers move at page load, from the frames each explorer drew at build time.

Issue 46's bar, checked on the site tests/conftest.py builds, in headless Chromium on loopback:
the first control answers within 1 s of a cold visit's first paint; a move shows its frame within
50 ms; the frame shown is the explorer's own render at those values, with its alt text; every
control works from the keyboard; a lesson page adds at most 3 MB and the site at most 30 MB.
Times are taken in the page (tests/frames_site.py); the measurements go to artifacts/frames/.
axe-core's WCAG check of every page is tests/test_book.py's.

Also the hidden answers of issue 42: a code cell with JupyterLab's outputs_hidden metadata shows
its outputs only inside a closed <details> (a one-page book built from a fixture notebook), and
the live notebooks keep that metadata.
"""
from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from book_site import BOOK_PYTHON, ROOT, SiteServer, book_missing_reason
from frames_site import ARTIFACTS, cold_first_move, launch, open_page, screenshot_after_moves, walk

FIRST_RESPONSE_MS, MOVE_MS = 1000, 50  # issue 46's budgets
PAGE_BYTES, SITE_BYTES = 3_000_000, 30_000_000
sys.path.insert(0, str(ROOT / "book"))
import frames  # noqa: E402 (book/frames.py: which lessons have explorers, and their controls)

FRAME_PAGES = [f"notebooks/{Path(name).stem}.html" for name in frames.PAGE_CONTROLS]
MEASURED: dict = {}


@pytest.fixture(scope="module")
def html(site):
    html, result = site[:2]
    if result.returncode != 0:
        pytest.fail(f"the site did not build:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return html


@pytest.fixture(scope="module")
def chromium(html):
    from playwright.sync_api import sync_playwright

    with SiteServer(html) as server, sync_playwright() as p:
        browser = launch(p)
        yield browser, server.base
        browser.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "measured.json").write_text(json.dumps(MEASURED, indent=1) + "\n")


def figures_data(page: Path) -> list[dict]:
    """The frames' data of each explorer figure on a built page (book/frames_html.py)."""
    return [json.loads(m) for m in re.findall(r'<script type="application/json" class="t5-frames-data">(.*?)</script>',
                                              page.read_text(), re.S)]


def test_every_lesson_explorer_has_frames(html):
    for page in FRAME_PAGES:
        stored = len(frames.explorer_cells(json.loads((ROOT / page.replace(".html", ".ipynb")).read_text())))
        assert len(figures_data(html / page)) == stored >= 1, page


@pytest.mark.parametrize("page", FRAME_PAGES)
def test_page_adds_at_most_3_mb(html, page):
    text = (html / page).read_text()
    figures = "".join(re.findall(r'<figure class="t5-frames".*?</figure>(?:<script>.*?</script>)?', text, re.S))
    files = {f["src"] for d in figures_data(html / page) for f in d["frames"]}
    added = len(figures.encode()) + sum((html / page).parent.joinpath(src).resolve().stat().st_size for src in files)
    MEASURED.setdefault("page_bytes", {})[page] = added
    assert added <= PAGE_BYTES, f"{page} adds {added / 1e6:.2f} MB of frames and figure HTML"


def test_site_frames_at_most_30_mb(html):
    total = sum(p.stat().st_size for p in (html / "_frames").rglob("*.png"))
    MEASURED["site_frame_bytes"] = total
    assert total <= SITE_BYTES, f"{total / 1e6:.1f} MB of frames"


def test_first_paint_waits_for_no_frame(html):
    for page in FRAME_PAGES:
        text = (html / page).read_text()
        images = re.findall(r'<img class="t5-frames-image"[^>]*>', text)
        assert images and all('loading="lazy"' in img for img in images), "frames load as the figure nears the view"
        assert not re.search(r'<link[^>]+_frames/', text), "no frame is preloaded"
        assert "frames.js" not in re.sub(r"<script>.*?</script>", "", text, flags=re.S), "the script is inline"


@pytest.mark.parametrize("page", FRAME_PAGES)
def test_first_control_answers_within_a_second_of_a_cold_visit(chromium, page):
    browser, base = chromium
    tries = [cold_first_move(browser, base + page)]
    if tries[0]["first_ms"] > FIRST_RESPONSE_MS:  # a loaded, shared machine: one more cold visit
        tries.append(cold_first_move(browser, base + page))
    MEASURED.setdefault("cold", {})[page] = tries
    best = min(t["first_ms"] for t in tries)
    assert best <= FIRST_RESPONSE_MS, f"first response {best:.0f} ms after the first paint: {tries}"


@pytest.mark.parametrize("page", FRAME_PAGES)
def test_keyboard_moves_show_the_frame_its_alt_text_within_50_ms(chromium, html, page):
    browser, base = chromium
    tries = [keyboard_moves(browser, base + page, figures_data(html / page))]
    if not within_budget(tries[0]):  # a loaded, shared machine: one more visit
        tries.append(keyboard_moves(browser, base + page, figures_data(html / page)))
    MEASURED.setdefault("moves_ms", {})[page] = [[round(m["ms"], 1) for m in moves] for moves in tries]
    assert any(within_budget(moves) for moves in tries), \
        [[(round(m["swap_ms"]), round(m["ms"])) for m in moves] for moves in tries]


def within_budget(moves: list[dict]) -> bool:
    """Every move's decoded frame in place within MOVE_MS of its key press, and the median move painted
    (two animation frames after the swap, an upper bound) within it too."""
    return max(m["swap_ms"] for m in moves) <= MOVE_MS and statistics.median(m["ms"] for m in moves) <= MOVE_MS


def keyboard_moves(browser, url: str, figures: list[dict]) -> list[dict]:
    """A fresh visit; every control of every explorer walked from the keyboard (`check_control`)."""
    context, tab = open_page(browser, url)
    try:
        moves = []
        for index, data in enumerate(figures):
            figure = tab.locator("figure.t5-frames").nth(index)
            for control in range(len(data["sizes"])):
                moves += check_control(tab, figure, data, control)
        return moves
    finally:
        context.close()


def check_control(tab, figure, data: dict, control: int) -> list[dict]:
    """Walk one control from the keyboard; each move must show the frame of the new values, with its
    alt text and readout. The moves, with their times."""
    field = figure.locator("[data-t5-control]").nth(control)
    key = "ArrowDown" if field.evaluate("(el) => el.tagName") == "SELECT" else "ArrowRight"
    moves, previous_alt = [], figure.evaluate("(f) => f.querySelector('.t5-frames-image').alt")
    for state in walk(tab, figure, key, steps=min(4, data["sizes"][control] + 1), control=control):
        index = 0
        for size, value in zip(data["sizes"], state["values"], strict=True):
            index = index * size + int(value)
        frame = data["frames"][index]
        assert state["src"] == frame["src"] and state["alt"] == frame["alt"], (state, frame["src"])
        assert state["alt"] != previous_alt and state["readout"].strip() == frame["readout"].strip()
        assert state["complete"], "the new frame is shown"
        previous_alt = state["alt"]
        moves.append(state)
    return moves


def test_the_frame_shown_is_the_explorers_own_render(chromium, html):
    from t5lesson.explorers.frames import frames as explorer_frames
    from t5lesson.explorers.warmup import SoftmaxOfTwo

    browser, base = chromium
    page = "notebooks/00_start_here.html"
    context, tab = open_page(browser, base + page)
    try:
        shown = walk(tab, tab.locator("figure.t5-frames").first, "ArrowRight", steps=2)[-1]  # gap 1 -> 2
    finally:
        context.close()
    (own,) = [f for f in explorer_frames(SoftmaxOfTwo(), {"gap": [2.0]}) if f.values == {"gap": 2.0}]
    explorer = SoftmaxOfTwo(gap=2.0)  # drawn afresh, as a learner's notebook would
    assert (html / "notebooks" / shown["src"]).resolve().read_bytes() == own.png
    assert shown["alt"] == explorer.alt_text() and shown["readout"].strip() == explorer.readout()


def test_screenshot_of_a_moving_explorer(chromium):
    browser, base = chromium
    path = ARTIFACTS / "04_bias_heatmaps_moved.png"
    moves = screenshot_after_moves(browser, base + "notebooks/04_bias_heatmaps.html", path)
    assert len(moves) == 3 and path.stat().st_size > 20_000


# Issue 42: a "Predict first" answer's outputs stay hidden until the reader opens them -------------
HIDDEN_ANSWER = "The answer is 0.9975"


def hidden_answer_notebook() -> dict:
    return {"cells": [
        {"cell_type": "markdown", "id": "t", "metadata": {},
         "source": "# Hidden answers\n\n### Predict first\n\nGuess."},
        {"cell_type": "code", "id": "a", "execution_count": 1, "metadata": {"jupyter": {"outputs_hidden": True}},
         "source": "print('answer')", "outputs": [{"output_type": "stream", "name": "stdout",
                                                   "text": HIDDEN_ANSWER + "\n"}]},
    ], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def hidden_answer_page(tmp_path_factory):
    """A one-page book of the fixture notebook, staged by book/build.py's own steps and built by Jupyter Book."""
    if book_missing_reason():
        pytest.skip(book_missing_reason())
    import build as build_py  # book/build.py

    src = tmp_path_factory.mktemp("hidden") / "src"
    (src / "notebooks").mkdir(parents=True)
    notebook = src / "fixture.ipynb"
    notebook.write_text(json.dumps(hidden_answer_notebook()))
    cfg = build_py.config()
    build_py.stage_notebook(notebook, src / "notebooks" / "hidden.ipynb", "notebooks/hidden.ipynb",
                            {"notebooks/hidden.ipynb"}, cfg, "", set())
    notebook.unlink()
    for name in ("_config.yml", "_assets", "_ext"):
        (shutil.copytree if (ROOT / "book" / name).is_dir() else shutil.copy)(ROOT / "book" / name, src / name)
    (src / "_toc.yml").write_text("format: jb-book\nroot: notebooks/hidden\n")
    result = subprocess.run([str(BOOK_PYTHON.parent / "jupyter-book"), "build", str(src), "--builder", "html",
                             "--path-output", str(src.parent), "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return src.parent / "_build" / "html"


def test_predict_first_answer_is_hidden_until_opened(hidden_answer_page, chromium):
    with SiteServer(hidden_answer_page) as server:
        context = chromium[0].new_context()
        tab = context.new_page()
        tab.goto(server.base + "notebooks/hidden.html")
        answer = tab.get_by_text(HIDDEN_ANSWER)
        assert not answer.is_visible(), "the answer shows before the reader opens it"
        summary = tab.locator("details summary", has_text="Show the result (predict first)")
        assert summary.count() == 1 and tab.locator("details[open]").count() == 0
        summary.focus()
        tab.keyboard.press("Enter")
        assert answer.is_visible(), "Enter on the summary opens it"
        context.close()


def test_live_notebooks_keep_outputs_hidden(tmp_path):
    import live_notebooks

    lesson = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    (explorer,) = [c for i, c in enumerate(lesson["cells"]) if i in frames.explorer_cells(lesson)]
    explorer["metadata"]["jupyter"] = {"outputs_hidden": True}
    copy = tmp_path / "00_start_here.ipynb"
    copy.write_text(json.dumps(lesson))
    live = live_notebooks.live_notebook(copy)
    (cell,) = [c for c in live["cells"] if c["id"].endswith("-explorer")]
    assert cell["metadata"]["jupyter"] == {"outputs_hidden": True}
