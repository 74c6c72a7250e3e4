"""The explorers of the built website in headless Chromium: cold first move, move times, keyboard, alt text.

Used by tests/test_book.py (on the site its fixture builds). Kept apart so it can be run by hand
on a site already built:

    python tests/frames_site.py build/book/html      # prints the measurements, writes screenshots

Times are taken in the page, on performance.now()'s clock, so the test's own round trips to the
browser do not count: a move is timed from its input event (event.timeStamp) to the first
animation frame after the new picture is in place (frames.js records both in figure.t5Moves).
A cold visit is a fresh browser context (no cache) loading the page from the loopback server;
its first response is timed from the page's first contentful paint to that first new picture.
"""
from __future__ import annotations

import sys
from pathlib import Path

from book_site import OFFLINE_ARGS, SiteServer

from browser import CHROMIUM

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "frames"
VIEWPORT = {"width": 1400, "height": 900}
# The page's first contentful paint, and the moves frames.js has recorded on the first explorer.
FIRST_MOVE = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const figure = document.querySelector('figure.t5-frames');
  const ready = performance.getEntriesByName('t5-frames-ready')[0];
  return {fcp: paint ? paint.startTime : null, ready: ready ? ready.startTime : null, moves: figure.t5Moves || []};
}"""
SHOWN = """(figure) => {
  const img = figure.querySelector('.t5-frames-image');
  return {src: img.getAttribute('src'), alt: img.alt, readout: figure.querySelector('.t5-frames-readout').innerText,
          complete: img.complete && img.naturalWidth > 0, moves: figure.t5Moves.length,
          values: Array.from(figure.querySelectorAll('[data-t5-control]')).map(el => el.value)};
}"""
ENDS = """(el) => el.tagName === 'SELECT' ? [el.selectedIndex === 0, el.selectedIndex === el.options.length - 1]
                                        : [el.value === el.min, el.value === el.max]"""
# Every frame of the figure decoded by frames.js (which starts as the figure nears the viewport).
ALL_DECODED = """(f) => f.t5Decoded === JSON.parse(f.querySelector('.t5-frames-data').textContent).frames.length"""


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=OFFLINE_ARGS, headless=True)


def cold_first_move(browser, url: str) -> dict:
    """A fresh context loads `url`; as soon as the DOM is there, ArrowRight on the first explorer's
    first control. Times in ms since navigation (fcp: first contentful paint, ready: frames.js set up,
    input, loaded: its frame decoded, painted), move_ms (input to painted) and first_ms: the time
    from the first paint to the first response of a key pressed as soon as the controls answer."""
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    try:
        page = context.new_page()
        page.goto(url, wait_until="domcontentloaded")
        control = page.locator("figure.t5-frames [data-t5-control]").first
        control.focus()
        control.press("ArrowRight")
        page.wait_for_function("() => document.querySelector('figure.t5-frames').t5Moves.length > 0", timeout=10_000)
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        facts = page.evaluate(FIRST_MOVE)
        move = facts["moves"][0]
        # A key pressed the moment the controls answer would show its picture after this long:
        # controls answering (if after the first paint) + the first move's own time, its frame fetched cold.
        waiting = max(0.0, facts["ready"] - facts["fcp"])
        return {"fcp": facts["fcp"], "ready": facts["ready"], "input": move["input"], "loaded": move["loaded"],
                "painted": move["painted"], "move_ms": move["painted"] - move["input"],
                "first_ms": waiting + move["painted"] - move["input"]}
    finally:
        context.close()


def walk(page, figure, key: str = "ArrowRight", steps: int = 6, control: int = 0) -> list[dict]:
    """Focus one of the figure's controls and press `key` (turning back at either end) `steps` times,
    each after the previous picture showed, as a reader would; per move, what the figure shows,
    ms (input to painted) and swap_ms (input to the decoded frame in place)."""
    field = figure.locator("[data-t5-control]").nth(control)
    field.focus()
    back, forth = ("ArrowUp", "ArrowDown") if field.evaluate("(el) => el.tagName") == "SELECT" else \
        ("ArrowLeft", "ArrowRight")
    shown = []
    for _ in range(steps):
        before = figure.evaluate(SHOWN)["moves"]
        at_start, at_end = field.evaluate(ENDS)
        key = back if at_end else forth if at_start else key
        page.keyboard.press(key)
        page.wait_for_function("([f, n]) => f.t5Moves.length > n", arg=[figure.element_handle(), before])
        last = figure.evaluate("(f) => f.t5Moves[f.t5Moves.length - 1]")
        shown.append({**figure.evaluate(SHOWN), "ms": last["painted"] - last["input"],
                      "swap_ms": last["swapped"] - last["input"]})
    return shown


def open_page(browser, url: str):
    """A page at `url` in a fresh context, every frame of every explorer decoded; (context, page)."""
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    page = context.new_page()
    page.goto(url, wait_until="load")
    figures = page.locator("figure.t5-frames")
    for index in range(figures.count()):  # as a reader scrolls past each explorer
        figures.nth(index).scroll_into_view_if_needed()
        page.wait_for_function(ALL_DECODED, arg=figures.nth(index).element_handle(), timeout=30_000)
    return context, page


def screenshot_after_moves(browser, url: str, path: Path) -> list[dict]:
    """Move the page's first explorer three steps from the keyboard, then screenshot it at 1400 x 900."""
    context, page = open_page(browser, url)
    try:
        figure = page.locator("figure.t5-frames").first
        moves = walk(page, figure, steps=3)
        figure.evaluate("(f) => f.scrollIntoView({block: 'start'})")
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
        return moves
    finally:
        context.close()


def main(site: Path) -> None:
    from playwright.sync_api import sync_playwright

    pages = sorted(p.relative_to(site).as_posix() for p in (site / "notebooks").glob("*.html")
                   if "t5-frames" in p.read_text())
    with SiteServer(site) as server, sync_playwright() as p:
        browser = launch(p)
        for page in pages:
            cold = cold_first_move(browser, server.base + page)
            moves = screenshot_after_moves(browser, server.base + page, ARTIFACTS / page.replace("/", "__").replace(
                ".html", ".png"))
            times = ", ".join(f"{m['ms']:.0f}" for m in moves)
            print(f"{page:<46} first response {cold['first_ms']:4.0f} ms after first paint "
                  f"(paint {cold['fcp']:.0f}, ready {cold['ready']:.0f}, key {cold['input']:.0f}, "
                  f"loaded {cold['loaded']:.0f}, painted {cold['painted']:.0f} ms); moves {times} ms")
        browser.close()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main(Path(sys.argv[1]).resolve())
