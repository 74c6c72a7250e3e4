"""Drive JupyterLab in headless Chromium the way a learner does: run a lesson, move its sliders.

Used by tests/test_browser.py. Kept apart from the test so it can also be run by hand:

    python tests/browser.py notebooks/01_x.ipynb     # prints latencies and layout, writes screenshots

In a 1400 x 900 window (the file browser open, as JupyterLab starts), for every lesson: a
screenshot of the first explorer's stored picture before anything runs, then Run All; for
every explorer, its layout as shown (slider tracks, descriptions, toggle rows, the image's
natural and shown size, whether it fits the output area) and a screenshot with its cell at the
top; then, from the keyboard alone, every control reached with Tab (starting just before the
explorer) and changed with keys: a slider's handle with the arrow keys, each other button of a
toggle with Enter or Space (taking turns, so both are proved), timing each change from the key
press to the new image. The next key waits until that image is decoded and painted, as a
learner's next press would (else the browser's decoding of one picture would compete with the
kernel's drawing of the next, on a two-core machine). Each change also records where its time
went (`BREAKDOWN`, `PHASES`: the kernel's messages, its own clock, the decode, the frame), the
PNG's size and the CPU time of the server and the kernel (`explorer_table`). Screenshots go to
artifacts/browser/.

The server runs on loopback with a random token, from a temporary root holding copies of the
notebooks (JupyterLab may autosave; the repository's files are never touched), with its own
config/data/runtime folders, announcements and update checks off. It is stopped by PID (its
whole process group, kernels included) when done.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def browser_missing_reason() -> str | None:
    """Why the browser test cannot run here, or None if it can."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install playwright; never `playwright install`)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server in a temporary root; use as a context manager."""

    def __init__(self, notebooks: list[Path]):
        self.notebooks = notebooks
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.proc = None

    def __enter__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="t5lesson-lab-"))
        root = self.tmp / "root"
        (root / "notebooks").mkdir(parents=True)
        for nb in self.notebooks:
            shutil.copy(nb, root / "notebooks" / nb.name)
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.tmp / "config"), JUPYTER_DATA_DIR=str(self.tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(self.tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"), MPLBACKEND="agg")
        # Announcements (news) off: it would pop a notification asking to fetch news.
        settings = self.tmp / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={self.port}", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
               "--expose-app-in-browser", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        self.log = open(self.tmp / "server.log", "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2)
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError(f"JupyterLab did not start; see {self.tmp / 'server.log'}")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, notebook: Path) -> str:
        return f"{self.base}/lab/tree/notebooks/{notebook.name}?token={self.token}&reset"

    def cpu_ms(self) -> dict:
        """CPU time used so far, in ms, by the server and by its kernels (all their threads): a step's
        cost that waiting for a core on a busy machine does not inflate. Empty where /proc lacks it."""
        try:
            kernels = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and _parent(d) == self.proc.pid]
            return {"server": _cpu_ms(self.proc.pid), "kernel": sum(_cpu_ms(pid) for pid in kernels)}
        except OSError:
            return {}

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the server and every kernel it started
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _parent(proc_dir: Path) -> int | None:
    try:  # /proc/PID/stat: "pid (name) state ppid ..."; the name may hold spaces
        return int(proc_dir.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _cpu_ms(pid: int) -> float:
    """The CPU time of every thread of process `pid`, in ms (the scheduler's own count, not ticks)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in task.joinpath("sched").read_text().splitlines():
            if line.startswith("se.sum_exec_runtime"):
                total += float(line.split(":")[1])
    return total


# JavaScript run in the page -------------------------------------------------------------
RUN_ALL = "async () => { await window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
ALL_DONE = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  if (!nb || !nb.content || !nb.sessionContext.session) return false;
  const kernel = nb.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const cells = nb.content.widgets.filter(c => c.model.type === 'code' && c.model.sharedModel.getSource().trim());
  return cells.length > 0 && cells.every(c => c.model.executionCount !== null);
}"""
ERRORS = """() => Array.from(document.querySelectorAll(
  '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], ' +
  '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]'
)).map(e => e.innerText.slice(0, 300))"""
# Code cells whose first line is test plumbing a learner should never see.
# The cells tagged `reveal` (the answer to a "Predict first" or "Think!"): for each, whether JupyterLab
# shows its output (the cell's own state, and whether any of its output is laid out on the page), and the
# text of the folded output's placeholder (JupyterLab shows the first line of the output there).
REVEALS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .map((cell, index) => ({cell, index}))
  .filter(({cell}) => (cell.model.getMetadata('tags') || []).includes('reveal'))
  .map(({cell, index}) => {
    const area = cell.node.querySelector('.jp-OutputArea');
    const shown = !!area && area.getClientRects().length > 0 && !!area.querySelector('.jp-OutputArea-child');
    const folded = cell.node.querySelector('.jp-OutputPlaceholder');
    return {index, hidden: cell.outputHidden === true, shown, placeholder: folded ? folded.textContent : ''};
  })"""
PLUMBING = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .map((c, i) => [i, c.model.type, c.model.sharedModel.getSource()])
  .filter(([i, type, source]) => type === 'code' && /^\\s*#\\s*NBVAL/i.test(source))
  .map(([i, type, source]) => `cell ${i}: ${source.split('\\n')[0]}`)"""
# Scroll the notebook so that cell `index` is at the top.
SCROLL_TO_CELL = """async ([index]) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = index;
  await nb.scrollToItem(index, 'start');
}"""
# The index of the first code cell whose source calls one of the explorers.
FIRST_EXPLORER_CELL = """([names]) => window.jupyterapp.shell.currentWidget.content.widgets.findIndex(
  c => c.model.type === 'code' && names.some(n => c.model.sharedModel.getSource().includes(n + '(')))"""
# The index of the first cell whose output holds an image.
FIRST_FIGURE_CELL = """() => window.jupyterapp.shell.currentWidget.content.widgets.findIndex(
  c => c.model.type === 'code' && c.node.querySelector('.jp-OutputArea-output img'))"""
# The index (in the notebook) of the cell that holds explorer `index`.
CELL_OF_EXPLORER = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const cell = box.closest('.jp-Cell');
  return window.jupyterapp.shell.currentWidget.content.widgets.findIndex(w => w.node === cell);
}"""
# What the learner sees of explorer `index`: controls, image scale, fit in the output area.
LAYOUT = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const area = box.closest('.jp-OutputArea-output');
  const img = box.querySelector('.t5lesson-figure');
  const r = e => e.getBoundingClientRect();
  const cut = e => e.scrollWidth > e.clientWidth + 1;
  return {
    sliders: Array.from(box.querySelectorAll('.widget-slider')).map(s => {
      const label = s.querySelector('.widget-label');
      return {label: label.innerText.trim(), track: r(s.querySelector('.noUi-target')).width, label_cut: cut(label)};
    }),
    toggles: Array.from(box.querySelectorAll('.widget-toggle-buttons')).map(t => {
      const label = t.querySelector('.widget-label');
      return {label: label ? label.innerText.trim() : '', height: r(t).height,
              buttons: t.querySelectorAll('button').length, label_cut: label ? cut(label) : false};
    }),
    image: {natural: [img.naturalWidth, img.naturalHeight], shown: [r(img).width, r(img).height]},
    box: {left: r(box).left, right: r(box).right, width: r(box).width, height: r(box).height,
          scroll_width: box.scrollWidth},
    area: {left: r(area).left, right: r(area).right, width: area.clientWidth},
    viewport: [window.innerWidth, window.innerHeight],
  };
}"""
IMAGE_LOADED = """([index]) => {
  const img = document.querySelectorAll('.t5lesson-explorer')[index].querySelector('.t5lesson-figure');
  return img.complete && img.naturalWidth > 0;
}"""
# Watch explorer `index`: the time of the learner's next key press or click inside it (as the
# page receives it, so the test driver's own round trips do not count) and of the next change
# of its figure's src; and, to see where that time goes, every kernel message sent or received
# until then (the kernel's own clock is in each header's date), when the new picture is decoded,
# and the next animation frame after that (when it is painted).
WATCH_FIGURE = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const img = box.querySelector('.t5lesson-figure');
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const t5 = window.__t5 = {before: img.src, changed: null, input: null, start: performance.now(),
                            messages: [], decoded: null, painted: null};
  const input = () => { if (t5.input === null) t5.input = performance.now(); };
  box.addEventListener('keydown', input, {capture: true, once: true});
  box.addEventListener('mousedown', input, {capture: true, once: true});
  const listen = (_, args) => {
    const m = args.msg;
    t5.messages.push({at: performance.now(), direction: args.direction, type: m.header.msg_type,
                      id: m.header.msg_id, parent: (m.parent_header || {}).msg_id || null,
                      date: Date.parse(m.header.date) - performance.timeOrigin,
                      state: m.content && m.content.execution_state || null,
                      bytes: (m.buffers || []).reduce((n, b) => n + (b.byteLength || 0), 0)});
  };
  kernel.anyMessage.connect(listen);
  t5.stop = () => kernel.anyMessage.disconnect(listen);
  new MutationObserver((m, obs) => {
    t5.changed = performance.now();
    obs.disconnect();
    img.decode().catch(() => null).then(() => {
      t5.decoded = performance.now();
      requestAnimationFrame(() => { t5.painted = performance.now(); });
    });
  }).observe(img, {attributes: true, attributeFilter: ['src']});
}"""
# Where the time of the last watched change went, in ms from the key press (see PHASES).
BREAKDOWN = """() => {
  const t5 = window.__t5;
  t5.stop();
  const t0 = t5.input ?? t5.start;
  const sent = t5.messages.find(m => m.direction === 'send' && m.type === 'comm_msg');
  const ours = sent ? t5.messages.filter(m => m.direction === 'recv' && m.parent === sent.id) : [];
  const busy = ours.find(m => m.type === 'status' && m.state === 'busy');
  const image = ours.find(m => m.type === 'comm_msg' && m.bytes > 0);
  const idle = ours.find(m => m.type === 'status' && m.state === 'idle');
  const at = m => m ? m - t0 : null;
  return {sent: at(sent && sent.at), kernel_start: at(busy && busy.date), kernel_image: at(image && image.date),
          image_received: at(image && image.at), changed: at(t5.changed), decoded: at(t5.decoded),
          painted: at(t5.painted), kernel_idle: at(idle && idle.date), png_bytes: image ? image.bytes : null};
}"""
# Put the focus on explorer `index`'s box itself (not a tab stop), so the next Tab goes to its first control.
FOCUS_BEFORE_CONTROLS = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  box.tabIndex = -1;
  box.focus();
  return document.activeElement === box;
}"""
CONTROLS = ".widget-slider, .widget-toggle-buttons, .widget-checkbox"
# Where the keyboard focus is, relative to explorer `index`: null once it has left the explorer.
FOCUSED = """([index, selector]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const a = document.activeElement;
  if (!a || !box.contains(a) || a === box) return null;
  const control = a.closest(selector);
  const label = control && control.querySelector('.widget-label');
  return {control: Array.from(box.querySelectorAll(selector)).indexOf(control),
          kind: a.classList.contains('noUi-handle') ? 'handle' : a.tagName.toLowerCase(),
          active: a.classList.contains('mod-active'), text: a.innerText.trim(),
          label: label ? label.innerText.trim() : ''};
}"""
PROGRESS_BARS = "() => document.querySelectorAll('.t5lesson-progress').length"
VIEWPORT = {"width": 1400, "height": 900}


def _explorer_name(box, index):
    return next((c[len("t5lesson-"):] for c in (box.get_attribute("class") or "").split()
                 if c.startswith("t5lesson-") and c != "t5lesson-explorer"), f"explorer{index}")


def _timed(page, index, action, value=None, cpu=None):
    """Run `action` (a key press or a click); return (ms until the figure's <img> changes, breakdown).

    The breakdown (`BREAKDOWN`) says when, in ms from the key press, each step happened, and with
    `cpu` (`JupyterLab.cpu_ms`) the CPU ms the server and the kernel spent until the picture was
    painted (`server_cpu`, `kernel_cpu`). With
    `value` (the control's readout), a key that leaves the value as it was (a slider already at
    the end of its range) returns (None, None) instead of waiting for a picture that has no
    reason to change.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    before = value() if value is not None else None
    page.evaluate(WATCH_FIGURE, [index])
    cpu_before = cpu() if cpu is not None else {}
    action()
    try:
        page.wait_for_function("() => window.__t5.changed !== null", timeout=10_000 if value else 30_000)
    except PlaywrightTimeout:
        page.evaluate("() => window.__t5.stop()")
        if value is None or value() != before:
            raise  # the value moved (or nothing tells us it did not), yet the picture never changed
        return None, None
    page.wait_for_function("() => window.__t5.painted !== null", timeout=10_000)
    cpu_after = cpu() if cpu is not None else {}
    steps = page.evaluate(BREAKDOWN)
    steps.update({f"{name}_cpu": cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before})
    return page.evaluate("() => window.__t5.changed - (window.__t5.input ?? window.__t5.start)"), steps


def exercise_notebook(page, lab: JupyterLab, notebook: Path, explorer_names, run_timeout_s=600):
    """Open, screenshot the stored picture, run all, check and screenshot every explorer, move every control.

    Returns a dict: controls (one result per slider/toggle), layouts (one per explorer), plumbing
    (code cells starting with an NBVAL comment), errors, screenshots, progress_bars.
    """
    page.goto(lab.url(notebook))
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel", timeout=90_000)
    page.wait_for_timeout(1000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shots = []
    plumbing = page.evaluate(PLUMBING)
    first = page.evaluate(FIRST_EXPLORER_CELL, [list(explorer_names)])
    if first >= 0:  # what a learner sees before running anything: the stored picture
        page.evaluate(SCROLL_TO_CELL, [first])
        page.wait_for_timeout(800)
        shots.append(ARTIFACTS / f"{notebook.stem}-before-run.png")
        page.screenshot(path=str(shots[-1]))

    reveals_before = page.evaluate(REVEALS)
    page.evaluate(RUN_ALL)
    page.wait_for_function(ALL_DONE, timeout=run_timeout_s * 1000, polling=500)
    page.wait_for_timeout(500)
    reveals_after = page.evaluate(REVEALS)
    controls, layouts = [], []
    count = page.locator(".t5lesson-explorer").count()
    if count == 0:  # no explorer: a screenshot of the first figure, as the learner sees it after running
        page.evaluate(SCROLL_TO_CELL, [max(page.evaluate(FIRST_FIGURE_CELL), 0)])
        page.wait_for_timeout(800)
        shots.append(ARTIFACTS / f"{notebook.stem}-after-run.png")
        page.screenshot(path=str(shots[-1]))
    for index in range(count):
        box = page.locator(".t5lesson-explorer").nth(index)
        name = _explorer_name(box, index)
        page.evaluate(SCROLL_TO_CELL, [page.evaluate(CELL_OF_EXPLORER, [index])])
        page.wait_for_function(IMAGE_LOADED, arg=[index], timeout=30_000)
        page.wait_for_timeout(300)
        layouts.append({"explorer": name, **page.evaluate(LAYOUT, [index])})
        shots.append(ARTIFACTS / f"{notebook.stem}-{index}-{name}.png")
        page.screenshot(path=str(shots[-1]))
        box.scroll_into_view_if_needed()
        controls += keyboard_pass(page, box, index, name, cpu=lab.cpu_ms)
    return {"controls": controls, "layouts": layouts, "plumbing": plumbing, "errors": page.evaluate(ERRORS),
            "screenshots": shots, "progress_bars": page.evaluate(PROGRESS_BARS),
            "reveals": {"before": reveals_before, "after": reveals_after}}


def keyboard_pass(page, box, index, name, max_tabs=60, cpu=None):
    """Work every control of explorer `index` with the keyboard alone; one result per control.

    The focus starts on the explorer's box; Tab then walks its tab stops in order. A slider's
    handle gets ArrowRight, ArrowRight, ArrowLeft (each timed to the new image, the handle keeps
    the focus); each not-yet-chosen button of a toggle gets Enter or Space, in turn. Each result
    says how many Tabs reached the control (`tabs`, None if Tab never got there: then nothing
    was pressed and its values stay equal, which the test reports).
    """
    results = []
    for c in range(box.locator(CONTROLS).count()):
        control = box.locator(CONTROLS).nth(c)
        slider = "widget-slider" in (control.get_attribute("class") or "")
        label = control.locator(".widget-label").first.inner_text().strip()
        value = (lambda control=control: control.locator(".widget-readout").first.inner_text().strip()) if slider else \
            (lambda control=control: control.locator("button.mod-active").first.inner_text().strip())
        results.append({"explorer": name, "control": label, "kind": "slider" if slider else "toggle",
                        "value_before": value(), "value": value, "latencies_ms": [], "steps": [], "tabs": None,
                        "keys": []})
    assert page.evaluate(FOCUS_BEFORE_CONTROLS, [index]), f"{name}: could not put the focus on the explorer"
    toggle_key = 0
    for tabs in range(1, max_tabs + 1):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED, [index, CONTROLS])
        if focused is None:
            break  # Tab has left the explorer: every tab stop in it was visited
        if focused["control"] < 0:
            continue
        result = results[focused["control"]]
        if result["tabs"] is None:
            result["tabs"] = tabs
        if focused["kind"] == "handle":
            for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft"):
                ms, steps = _timed(page, index, lambda key=key: page.keyboard.press(key), value=result["value"],
                                   cpu=cpu)
                if ms is not None:  # None: the key met the end of the slider's range
                    result["latencies_ms"].append(ms)
                    result["steps"].append(steps)
                    result["keys"].append(key)
            page.keyboard.press("ArrowRight")  # ends one step up from where it started
            page.wait_for_timeout(300)
            result["value_after"] = result["value"]()
        elif focused["kind"] == "button" and not focused["active"] and not result["keys"]:
            # one press per toggle: pressing its next button too would, with two, bring back the start
            key = ("Enter", "Space")[toggle_key % 2]
            toggle_key += 1
            ms, steps = _timed(page, index, lambda key=key: page.keyboard.press(key), cpu=cpu)
            result["latencies_ms"].append(ms)
            result["steps"].append(steps)
            result["keys"].append(key)
            result["value_after"] = result["value"]()
    # Read while the explorer is in view (Tab has moved on: a windowed notebook may hide its cell).
    for result in results:
        getter = result.pop("value")
        result.setdefault("value_after", result["value_before"] if result["tabs"] is None else getter())
        result["median_ms"] = statistics.median(result["latencies_ms"]) if result["latencies_ms"] else 0.0
    return results


def run(notebooks: list[Path]):
    """Exercise each notebook in one server and one browser; returns {notebook: result dict}."""
    from playwright.sync_api import sync_playwright

    from t5lesson.explorers import load_all

    names = sorted(load_all())
    out = {}
    with JupyterLab(notebooks) as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for nb in notebooks:
                page = browser.new_page(viewport=VIEWPORT)
                out[nb] = exercise_notebook(page, lab, nb, names)
                page.evaluate("async () => { await window.jupyterapp.commands.execute('kernelmenu:shutdown'); }")
                page.close()
        finally:
            browser.close()
    return out


def percentile(values, q):
    """The q-th percentile (0-100) of values, linear between the closest ranks."""
    values = sorted(values)
    if not values:
        return float("nan")
    position = (len(values) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def all_latencies(out) -> list:
    return [ms for result in out.values() for c in result["controls"] for ms in c["latencies_ms"]]


def latency_table(out) -> str:
    lines = [f"{'notebook':<32} {'explorer':<28} {'control':<24} {'median ms':>9} {'max ms':>7}  value change"]
    for nb, result in out.items():
        for c in result["controls"]:
            lines.append(f"{nb.name:<32} {c['explorer']:<28} {c['control'][:24]:<24} {c['median_ms']:>9.0f} "
                         f"{max(c['latencies_ms'] or [0]):>7.0f}  {c['value_before']} -> {c['value_after']}")
    values = all_latencies(out)
    if values:
        lines.append(f"keypress (or click) to new image over {len(values)} changes: median "
                     f"{percentile(values, 50):.0f} ms, 95th percentile {percentile(values, 95):.0f} ms, "
                     f"max {max(values):.0f} ms")
    return "\n".join(lines)


# The steps of one change, each from the end of the one before (BREAKDOWN gives their ends).
PHASES = (("key to message", None, "sent"), ("to kernel", "sent", "kernel_start"),
          ("kernel work", "kernel_start", "kernel_image"), ("image to page", "kernel_image", "image_received"),
          ("page to src", "image_received", "changed"), ("decode", "changed", "decoded"),
          ("to frame", "decoded", "painted"))


def _median(steps, key):
    values = [s[key] for s in steps if s and key in s]
    return statistics.median(values) if values else float("nan")


def explorer_table(out) -> str:
    """Per explorer, over all its changes: median and 95th percentile from key press to new image, the
    median of each step (PHASES), the median PNG size, and the median to the painted frame."""
    changes = {}
    for result in out.values():
        for c in result["controls"]:
            changes.setdefault(c["explorer"], []).extend(zip(c["latencies_ms"], c["steps"], strict=True))
    heads = [name for name, _, _ in PHASES]
    lines = [f"{'explorer':<28} {'n':>3} {'median':>6} {'p95':>5}  " + " ".join(f"{h:>13}" for h in heads)
             + f" {'to paint':>8} {'PNG kB':>7} {'kernel CPU':>10} {'server CPU':>10}   (ms; steps: medians)"]

    def step(steps, start, end):
        values = [s[end] - (s[start] if start else 0) for s in steps
                  if s and s.get(end) is not None and (start is None or s.get(start) is not None)]
        return statistics.median(values) if values else float("nan")

    for name, pairs in changes.items():
        latencies = [ms for ms, _ in pairs]
        steps = [s for _, s in pairs]
        sizes = [s["png_bytes"] for s in steps if s and s.get("png_bytes")]
        middle, tail = percentile(latencies, 50), percentile(latencies, 95)
        lines.append(f"{name:<28} {len(latencies):>3} {middle:>6.0f} {tail:>5.0f}  "
                     + " ".join(f"{step(steps, a, b):>13.1f}" for _, a, b in PHASES)
                     + f" {step(steps, None, 'painted'):>8.0f} "
                     + f"{statistics.median(sizes) / 1e3 if sizes else float('nan'):>7.0f} "
                     + " ".join(f"{_median(steps, key):>10.1f}" for key in ("kernel_cpu", "server_cpu")))
    return "\n".join(lines)


def layout_table(out) -> str:
    lines = [f"{'notebook':<32} {'explorer':<28} {'shortest track':>14} {'image natural/shown':>20} "
             f"{'box w x h':>11} {'area w':>7}"]
    for nb, result in out.items():
        for lay in result["layouts"]:
            tracks = [s["track"] for s in lay["sliders"]]
            natural, shown = lay["image"]["natural"], lay["image"]["shown"]
            lines.append(f"{nb.name:<32} {lay['explorer']:<28} {min(tracks, default=0):>12.0f}px "
                         f"{natural[0]:>8}/{shown[0]:<6.0f}px {lay['box']['width']:>5.0f}x{lay['box']['height']:<5.0f} "
                         f"{lay['area']['width']:>7}")
    return "\n".join(lines)


def write_changes(out, path=ARTIFACTS / "changes.json"):
    """Every timed change (explorer, control, key, ms, steps) as JSON, to compare runs with."""
    import json

    changes = [{"notebook": nb.name, "explorer": c["explorer"], "control": c["control"], "key": key, "ms": ms,
                "steps": steps}
               for nb, result in out.items() for c in result["controls"]
               for key, ms, steps in zip(c["keys"], c["latencies_ms"], c["steps"], strict=True)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(changes, indent=1) + "\n")


if __name__ == "__main__":
    result = run([Path(a).resolve() for a in sys.argv[1:]])
    write_changes(result)
    print(latency_table(result))
    print(explorer_table(result))
    print(layout_table(result))
    for nb, r in result.items():
        print(f"{nb.name}: errors {r['errors'] or 'none'}; NBVAL cells {r['plumbing'] or 'none'}; "
              f"progress bars {r['progress_bars']}; screenshots {[str(p) for p in r['screenshots']]}")
