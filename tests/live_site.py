"""Drive the live part of the built site (JupyterLite + Pyodide) in headless Chromium, offline.

Used by tests/test_live.py. Kept apart from the test so it can also be run by hand:

    python tests/live_site.py [SITE]   # builds the site if no SITE (build/book/html) is given; prints a report

The site is served on 127.0.0.1 by a small HTTP server in this process, which also counts the
bytes it sends (the first visit's download). Chromium reaches it directly; every other request
is aborted by a route handler (and recorded) and, as a second wall, sent to a dead proxy. For
every live notebook, in a fresh browser context (an empty cache, as on a first visit): open it,
Run All, and for every explorer press an arrow key on each slider and click each slider's track,
timing key press (or click) to new image; screenshots of each explorer go to artifacts/live/.
Every your-turn cell is filled once wrong and once with its answer (solutions/your_turn/) and run,
its verdict read; then each cell carried from the lesson to run on the answers (tagged `live`) is
run again, what it printed read (a screenshot of it where the notebook has no explorer). On
exercises 1 to 5: one answer right and one wrong, both through check(), and hint() for the wrong
one; the outputs read back. One more visit (TIMED) clicks Run All in the Run menu as soon as the
notebook shows, cold and then warm (the same browser again), and times each phase: Pyodide's
files, the kernel ready, the first import, the first picture, the first slider.
"""
from __future__ import annotations

import functools
import http.server
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from browser import ALL_DONE, CHROMIUM, CHROMIUM_ARGS, ERRORS, RUN_ALL, percentile

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "live"
LIVE_NOTEBOOKS = ROOT / "book" / "live" / "notebooks"
OFFLINE_ARGS = CHROMIUM_ARGS + ["--proxy-server=http://127.0.0.1:9", "--dns-prefetch-disable"]
VIEWPORT = {"width": 1400, "height": 900}
# One right answer (the solution's code for the first question) and one wrong, per live exercise.
EXERCISES = {"01_unscaled_scores.ipynb": ("q1", "q2", 'answer_q2 = ["C"]'),
             "02_where_sqrt_d_went.ipynb": ("q2", "q3", "answer_q3 = 1.0"),
             "03_relative_position_buckets.ipynb": ("q1", "q2", "n = 20\nanswer_q2 = 0"),
             "04_bias_heatmaps.ipynb": ("q1", "q3", "answer_q3 = 32 * 6"),
             "05_length_generalisation.ipynb": ("q1", "q2", 'answer_q2 = "A"')}
# The visit that times the first slider, cold (empty cache) and warm (the same browser again): Run All
# clicked in the Run menu as soon as the notebook shows, before the kernel is ready, as a learner might.
TIMED = "03_relative_position_buckets.ipynb"


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript", ".json": "application/json"}
    sent = None  # a shared list of (path, bytes)

    def log_message(self, *args):
        pass

    def end_headers(self):  # as GitHub Pages serves a site: cached ten minutes, then revalidated
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def copyfile(self, source, outputfile):
        data = source.read()
        outputfile.write(data)
        self.sent.append((self.path, len(data)))


class LiveServer:
    """The built site over HTTP on 127.0.0.1, counting bytes sent; a context manager."""

    def __init__(self, site: Path):
        self.sent = []
        handler = functools.partial(type("H", (_CountingHandler,), {"sent": self.sent}), directory=str(site))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def bytes_since(self, mark: int) -> int:
        return sum(n for _, n in self.sent[mark:])


APP_READY = ("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
             "&& window.jupyterapp.shell.currentWidget.sessionContext "
             "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
             "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel")
KERNEL_STARTED = ("() => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
                  " return !!k && (k.status === 'idle' || k.status === 'busy'); }")  # busy: running queued cells
KERNEL_IDLE = ("() => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
               " return k && k.status === 'idle'; }")
EXPLORER_CALLS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code' && /^[A-Z]\\w*\\(|\\n[a-z_]+$/.test(c.model.sharedModel.getSource().trim()))
  .length"""
SCROLL_TO = """async ([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const nb = window.jupyterapp.shell.currentWidget.content;
  const cell = nb.widgets.findIndex(w => w.node === box.closest('.jp-Cell'));
  nb.activeCellIndex = cell;
  await nb.scrollToItem(cell, 'start');
}"""
IMAGE_LOADED = """([index]) => {
  const img = document.querySelectorAll('.t5lesson-explorer')[index].querySelector('.t5lesson-figure');
  return !!img && img.complete && img.naturalWidth > 0;
}"""
WATCH = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const img = box.querySelector('.t5lesson-figure');
  window.__t5 = {changed: null, input: null, start: performance.now()};
  const input = () => { if (window.__t5.input === null) window.__t5.input = performance.now(); };
  box.addEventListener('keydown', input, {capture: true, once: true});
  box.addEventListener('mousedown', input, {capture: true, once: true});
  new MutationObserver((m, obs) => { window.__t5.changed = performance.now(); obs.disconnect(); })
    .observe(img, {attributes: true, attributeFilter: ['src']});
}"""
SET_SOURCE = """([index, source]) => {
  window.jupyterapp.shell.currentWidget.content.widgets[index].model.sharedModel.setSource(source);
}"""
CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => ({
  type: c.model.type, source: c.model.sharedModel.getSource(),
  meta: (c.model.getMetadata && c.model.getMetadata('t5lesson')) || null,
  output: c.model.type === 'code' ? c.node.querySelector('.jp-OutputArea') ?.innerText || '' : ''}))"""
OUTPUT_OF = """([index]) => window.jupyterapp.shell.currentWidget.content.widgets[index]
  .node.querySelector('.jp-OutputArea') ?.innerText || ''"""
RUN_CELL = """async ([index]) => { const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = index; await window.jupyterapp.commands.execute('notebook:run-cell'); }"""
EXECUTED = """([index]) => window.jupyterapp.shell.currentWidget.content.widgets[index].model.executionCount !== null"""
EXECUTION_COUNT = """([index]) => window.jupyterapp.shell.currentWidget.content.widgets[index].model.executionCount"""
NOTEBOOK_SHOWN = """() => { const nb = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!nb && !!nb.content && nb.content.widgets.length > 0
    && !!document.querySelector('.jp-Notebook .jp-Cell'); }"""
FIRST_PICTURE = """() => { const img = document.querySelector('.t5lesson-explorer .t5lesson-figure');
  return !!img && img.complete && img.naturalWidth > 0; }"""
# The kernel's worker: when each Pyodide file it fetched arrived (ms since the worker started).
WORKER_FILES = """() => performance.getEntriesByType('resource')
  .map(e => [e.name.split('/').pop(), e.responseEnd, e.transferSize])"""
LINKS = "() => Array.from(document.querySelectorAll('.jp-RenderedMarkdown a[href]')).map(a => a.href)"


def _timed(page, index, action) -> float:
    page.evaluate(WATCH, [index])
    action()
    page.wait_for_function("() => window.__t5.changed !== null", timeout=30_000)
    return page.evaluate("() => window.__t5.changed - (window.__t5.input ?? window.__t5.start)")


def _open(page, url: str, t0: float) -> dict:
    page.goto(url)
    page.wait_for_function(APP_READY, timeout=600_000, polling=500)
    page.wait_for_function(KERNEL_IDLE, timeout=600_000, polling=500)
    return {"kernel_ready_s": time.monotonic() - t0}


def _run_all(page, timeout_s=600):
    page.evaluate(RUN_ALL)
    page.wait_for_function(ALL_DONE, timeout=timeout_s * 1000, polling=500)
    page.wait_for_timeout(300)


def live_notebook(page, base: str, name: str, t0: float) -> dict:
    """Open one live notebook, Run All, key and click every slider of every explorer; a dict of facts."""
    facts = _open(page, f"{base}live/lab/index.html?path={name}", t0)
    # Read the links while the first cells are on screen: JupyterLab keeps only the cells near the view
    # in the page, and Run All ends at the last cell of a long notebook.
    links = page.evaluate(LINKS)
    _run_all(page)
    facts["run_all_s"] = time.monotonic() - t0
    links += [link for link in page.evaluate(LINKS) if link not in links]
    facts.update(errors=page.evaluate(ERRORS), links=links, sliders=[], shots=[])
    count = page.locator(".t5lesson-explorer").count()
    facts["explorers"] = count
    stem = Path(name).stem
    for index in range(count):
        box = page.locator(".t5lesson-explorer").nth(index)
        page.evaluate(SCROLL_TO, [index])
        page.wait_for_function(IMAGE_LOADED, arg=[index], timeout=60_000)
        for s in range(box.locator(".widget-slider").count()):
            slider = box.locator(".widget-slider").nth(s)
            label = slider.locator(".widget-label").first.inner_text().strip()
            readout = slider.locator(".widget-readout").first
            before = readout.inner_text().strip()
            handle = slider.locator(".noUi-handle").first
            key = "ArrowLeft" if handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax") \
                else "ArrowRight"

            def press(handle=handle, key=key):
                handle.focus()
                page.keyboard.press(key)

            key_ms = _timed(page, index, press)
            if "first_slider_s" not in facts:
                facts["first_slider_s"] = time.monotonic() - t0
            after_key = readout.inner_text().strip()
            track = slider.locator(".noUi-target").first
            bounds = track.bounding_box()
            handle_box = handle.bounding_box()
            # Click the track away from the handle: the quarter of the track farther from it.
            far_left = handle_box["x"] + handle_box["width"] / 2 > bounds["x"] + bounds["width"] / 2
            x = bounds["width"] * (0.2 if far_left else 0.8)

            def click(track=track, x=x, bounds=bounds):
                track.click(position={"x": x, "y": bounds["height"] / 2})

            click_ms = _timed(page, index, click)
            facts["sliders"].append({"explorer": index, "slider": label, "key": key, "values":
                                     [before, after_key, readout.inner_text().strip()],
                                     "key_ms": key_ms, "click_ms": click_ms})
        box.evaluate("b => b.closest('.jp-Cell').scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        shot = ARTIFACTS / f"{stem}-{index}.png"
        page.screenshot(path=str(shot))
        facts["shots"].append(shot)
    facts["your_turn"] = your_turn_cells(page, name)
    facts["carried"] = carried_cells(page, name)
    if not count and facts["carried"]:  # no explorer to picture (lesson 5): the table run on the answer
        shot = ARTIFACTS / f"{stem}-carried.png"
        page.screenshot(path=str(shot))
        facts["shots"].append(shot)
    return facts


def carried_cells(page, name: str) -> dict:
    """Each cell carried from the lesson (book/live_notebooks.py CARRIED_TAG) run again, now on the
    your-turn answers typed in: {cell id: what it printed}."""
    printed = {}
    nb = json.loads((LIVE_NOTEBOOKS / name).read_text())
    for index, cell in enumerate(nb["cells"]):
        if not cell["id"].endswith("-carried"):
            continue
        count = page.evaluate(EXECUTION_COUNT, [index])
        page.evaluate(RUN_CELL, [index])
        page.wait_for_function(f"() => ({EXECUTION_COUNT})([{index}]) !== {json.dumps(count)}",
                               timeout=120_000, polling=200)
        page.wait_for_timeout(300)
        printed[cell["id"]] = page.evaluate(OUTPUT_OF, [index]).strip()
        page.evaluate("async ([i]) => { await window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'end'); }",
                      [index])
        page.wait_for_timeout(300)
    return printed


def your_turn_cells(page, name: str) -> dict:
    """Each your-turn cell typed in wrong, run, then right (its answer), run: {name: [said wrong, said right]}."""
    from live_kernel_check import your_turn_answers

    said = {}
    nb = json.loads((LIVE_NOTEBOOKS / name).read_text())
    for index, cell in enumerate(nb["cells"]):
        if not cell["id"].endswith("-your-turn"):
            continue
        turn, right, wrong = your_turn_answers(LIVE_NOTEBOOKS / name, cell)
        said[turn] = []
        for source in (wrong, right):
            page.evaluate(SET_SOURCE, [index, source])
            page.evaluate(RUN_CELL, [index])
            before = json.dumps(said[turn][-1] if said[turn] else "")  # wait for this run's verdict
            page.wait_for_function(f"() => ({EXECUTED})([{index}]) && ({OUTPUT_OF})([{index}]).includes('{turn}: ') "
                                   f"&& ({OUTPUT_OF})([{index}]).trim() !== {before}", timeout=120_000, polling=200)
            said[turn].append(page.evaluate(OUTPUT_OF, [index]).strip())
    return said


def timed_visit(context, base: str, name: str, external: list) -> dict:
    """Open `name`, click Run All in the Run menu as soon as the notebook shows, press a key on the first
    slider: seconds from the address typed to each phase (see the module docstring). Requests that
    leave the machine go into `external`."""
    page = context.new_page()
    page.on("request", lambda r: not r.url.startswith((base, "data:", "blob:", "about:")) and external.append(r.url))
    page_errors = []
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    started = []
    page.on("worker", lambda w: started.append((time.monotonic(), w)))
    t0 = time.monotonic()
    page.goto(f"{base}live/lab/index.html?path={name}")
    page.wait_for_function(NOTEBOOK_SHOWN, timeout=600_000, polling=100)
    phases = {"notebook shown": time.monotonic() - t0}
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click()
    phases["Run All clicked (Run menu)"] = time.monotonic() - t0
    waits = [("kernel ready", f"() => ({APP_READY})() && ({KERNEL_STARTED})()"),
             ("first import (the imports cell ran)", f"() => ({EXECUTED})([1])"),  # cell 0 is the title
             ("first picture", FIRST_PICTURE)]
    for label, test in waits:
        page.wait_for_function(test, timeout=600_000, polling=100)
        phases[label] = time.monotonic() - t0
    page.evaluate(SCROLL_TO, [0])
    handle = page.locator(".t5lesson-explorer").first.locator(".noUi-handle").first

    def press():
        handle.focus()
        page.keyboard.press("ArrowRight")

    _timed(page, 0, press)
    phases["first slider works (a key press redrew it)"] = time.monotonic() - t0
    if started:  # the kernel's, if one started (Run All may come before or after it)
        phases["the kernel's worker started"] = started[0][0] - t0
    page.wait_for_function(ALL_DONE, timeout=600_000, polling=200)
    files = []
    for when, worker in started:  # Pyodide's own files arrive in the kernel's worker
        try:
            files += [(when - t0 + end / 1000, file, size) for file, end, size in worker.evaluate(WORKER_FILES)]
        except Exception:  # noqa: BLE001 (a worker that has gone: nothing to read)
            continue
    errors = page.evaluate(ERRORS)
    page.close()
    return {"phases": phases, "files": sorted(files, key=lambda f: f[0]), "errors": errors, "page_errors": page_errors,
            "workers": [worker.url for _, worker in started]}


def timed_visits(p, server: LiveServer, external: list) -> dict:
    """The TIMED visit twice in one browser profile on disk, as a learner's browser keeps it: cold (a new
    profile, nothing cached) and warm (a new tab, what the first visit cached still there). A profile on
    disk, because a throwaway context keeps its cache in memory and drops the largest files (the 10 MB
    interpreter among them). No route handler: Playwright turns the HTTP cache off where one is set. The
    dead proxy still blocks every other address, and page.on("request") records any that is tried."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="t5live-profile-") as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=OFFLINE_ARGS,
                                                       headless=True, viewport=VIEWPORT)
        try:
            for visit in ("cold", "warm"):
                mark = len(server.sent)
                facts = timed_visit(context, server.base, TIMED, external)
                facts["downloaded_mb"] = server.bytes_since(mark) / 1e6
                out[f"timed {visit}"] = facts
        finally:
            context.close()
    return out


def live_exercise(page, base: str, name: str, t0: float) -> dict:
    """Exercise `name` in the live site: one answer right, one wrong, through check(); the verdicts."""
    right_q, wrong_q, wrong = EXERCISES[name]
    solution = json.loads((ROOT / "solutions" / name).read_text())
    answer = next("".join(c["source"]) for c in solution["cells"]
                  if c.get("metadata", {}).get("t5lesson", {}).get("cell") == f"{right_q}-answer")
    answer = re.sub(r"### (BEGIN|END) SOLUTION\n?", "", answer)
    facts = _open(page, f"{base}live/lab/index.html?path=exercises/{name}", t0)
    cells = page.evaluate(CELLS)
    where = {c["meta"]["cell"]: i for i, c in enumerate(cells) if c["meta"] and "cell" in c["meta"]}
    page.evaluate(SET_SOURCE, [where[f"{right_q}-answer"], answer])
    page.evaluate(SET_SOURCE, [where[f"{wrong_q}-answer"], wrong])
    page.evaluate(SET_SOURCE, [where[f"{wrong_q}-check"], f'check("{wrong_q}")\nhint("{wrong_q}")'])
    _run_all(page)
    cells = page.evaluate(CELLS)
    verdicts = {q: cells[where[f"{q}-check"]]["output"].strip() for q in (right_q, wrong_q)}
    page.evaluate("async ([i]) => { const nb = window.jupyterapp.shell.currentWidget.content;"
                  " nb.activeCellIndex = i; await nb.scrollToItem(i, 'start'); }", [where[f"{right_q}-answer"]])
    page.wait_for_timeout(300)
    shot = ARTIFACTS / f"exercise-{Path(name).stem}.png"
    page.screenshot(path=str(shot))
    facts.update(right=right_q, wrong=wrong_q, verdicts=verdicts, shots=[shot], errors=page.evaluate(ERRORS))
    return facts


def run(site: Path) -> dict:
    """Every live notebook and exercise, each in a fresh browser context; {name: facts} plus 'external'."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out, external = {}, []
    names = [p.name for p in sorted(LIVE_NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))]  # 05b_... too
    with LiveServer(site) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=OFFLINE_ARGS, headless=True)
        local = (server.base, "data:", "blob:", "about:")
        try:
            for name in names + [f"exercises/{n}" for n in EXERCISES]:
                context = browser.new_context(viewport=VIEWPORT)  # empty cache and storage: a first visit

                def route(r):
                    if r.request.url.startswith(local):
                        r.continue_()
                    else:
                        external.append(r.request.url)
                        r.abort("blockedbyclient")

                context.route("**/*", route)
                page = context.new_page()
                page.on("request", lambda r: not r.url.startswith(local) and external.append(r.url))
                page_errors = []
                page.on("pageerror", lambda e, errors=page_errors: errors.append(str(e)))
                mark, t0 = len(server.sent), time.monotonic()
                if name.startswith("exercises/"):
                    facts = live_exercise(page, server.base, name.split("/", 1)[1], t0)
                else:
                    facts = live_notebook(page, server.base, name, t0)
                facts.update(downloaded_mb=server.bytes_since(mark) / 1e6, page_errors=page_errors)
                out[name] = facts
                context.close()
            out.update(timed_visits(p, server, external))
        finally:
            browser.close()
    out["external"] = sorted(set(external))
    return out


def timeline(visit: dict) -> list[tuple[float, str]]:
    """A timed visit's phases and the arrival of Pyodide's files in the kernel's worker, in time order."""
    got = [(t, name) for t, name, _ in visit["files"] if name.endswith((".wasm", ".zip", ".whl"))]
    files = []
    if got:
        wasm = [t for t, name in got if name == "pyodide.asm.wasm"]
        files.append((wasm[0] if wasm else got[0][0], "Pyodide's interpreter downloaded (pyodide.asm.wasm)"))
        files.append((max(got)[0], f"the last of Pyodide's {len(got)} files downloaded ({max(got)[1]})"))
    return sorted([(t, label) for label, t in visit["phases"].items()] + files)


def latencies(out: dict, kind: str) -> list[float]:
    return [s[kind] for name, f in out.items() if name != "external" for s in f.get("sliders", [])]


def report(out: dict, site: Path) -> str:
    files = [p for p in (site / "live").rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files) / 1e6
    pages = {name: f for name, f in out.items() if name != "external" and not name.startswith("timed ")}
    lines = [f"live site: {size:.1f} MB in {len(files)} files (site/live)", "",
             f"{'page':<44} {'MB':>5} {'kernel s':>8} {'run all s':>9} {'1st slider s':>12} {'explorers':>9}"]
    for name, f in pages.items():
        lines.append(f"{name:<44} {f['downloaded_mb']:>5.1f} {f['kernel_ready_s']:>8.1f} "
                     f"{f.get('run_all_s', float('nan')):>9.1f} {f.get('first_slider_s', float('nan')):>12.1f} "
                     f"{f.get('explorers', 0):>9}")
    for name, f in pages.items():
        for s in f.get("sliders", []):
            lines.append(f"  {name} explorer {s['explorer']} {s['slider']!r}: key {s['key']} {s['key_ms']:.0f} ms, "
                         f"click {s['click_ms']:.0f} ms, values {' -> '.join(s['values'])}")
        for turn, said in f.get("your_turn", {}).items():
            lines += [f"  {name} your turn {turn}, {kind}: {text.splitlines()[0]}" for kind, text in zip(
                ("wrong", "right"), said, strict=True)]
        lines += [f"  {name} {q}: {v.splitlines()[0]}" for q, v in f.get("verdicts", {}).items()]
    keys, clicks = latencies(out, "key_ms"), latencies(out, "click_ms")
    both = keys + clicks
    lines.append(f"key press to new image over {len(keys)} presses: median {statistics.median(keys):.0f} ms, "
                 f"p95 {percentile(keys, 95):.0f} ms; with {len(clicks)} track clicks: median "
                 f"{statistics.median(both):.0f} ms, p95 {percentile(both, 95):.0f} ms")
    for visit in ("cold", "warm"):
        f = out.get(f"timed {visit}")
        if not f:
            continue
        cache = "a new browser profile, nothing cached" if visit == "cold" else "a new tab, same profile"
        lines += ["", f"{TIMED}, {visit} visit ({cache}; Run All clicked in the Run menu as soon as the notebook "
                      f"showed): {f['downloaded_mb']:.1f} MB sent"]
        lines += [f"  {t:6.1f} s  {label}" for t, label in timeline(f)]
    lines.append(f"requests leaving the machine (all blocked): {out['external'] or 'none'}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    site = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "book" / "html"
    result = run(site)
    text = report(result, site)
    (ARTIFACTS / "report.txt").write_text(text)
    print(text)
    for name, f in result.items():
        if name != "external" and not name.startswith("timed ") and (f.get("errors") or f.get("page_errors")):
            print(name, "errors:", f.get("errors"), f.get("page_errors"))
