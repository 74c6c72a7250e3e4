"""Drive JupyterLab in headless Chromium the way a learner does: run a lesson, move its sliders.

Used by tests/test_browser.py. Kept apart from the test so it can also be run by hand:

    python tests/browser.py notebooks/01_x.ipynb     # prints latencies, writes a screenshot

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
# Press a key on a slider and time until its explorer's figure <img> changes.
WATCH_FIGURE = """([index]) => {
  const box = document.querySelectorAll('.t5lesson-explorer')[index];
  const img = box.querySelector('.t5lesson-figure');
  window.__t5 = {before: img.src, changed: null};
  new MutationObserver((m, obs) => { window.__t5.changed = performance.now(); obs.disconnect(); })
    .observe(img, {attributes: true, attributeFilter: ['src']});
  window.__t5.start = performance.now();
}"""


def exercise_notebook(page, lab: JupyterLab, notebook: Path, screenshot: Path, run_timeout_s=180):
    """Open, run all, move every slider of every explorer by keyboard. Returns a list of result dicts."""
    page.goto(lab.url(notebook))
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session "
                           "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel", timeout=90_000)
    page.evaluate(RUN_ALL)
    page.wait_for_function(ALL_DONE, timeout=run_timeout_s * 1000, polling=500)
    page.wait_for_timeout(500)
    results = []
    count = page.locator(".t5lesson-explorer").count()
    for index in range(count):
        box = page.locator(".t5lesson-explorer").nth(index)
        name = next((c[len("t5lesson-"):] for c in (box.get_attribute("class") or "").split()
                     if c.startswith("t5lesson-") and c != "t5lesson-explorer"), f"explorer{index}")
        box.scroll_into_view_if_needed()
        for s in range(box.locator(".widget-slider").count()):
            slider = box.locator(".widget-slider").nth(s)
            label = slider.locator(".widget-label").first.inner_text().strip()
            readout = slider.locator(".widget-readout").first
            before_value = readout.inner_text().strip()
            latencies = []
            for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):
                page.evaluate(WATCH_FIGURE, [index])
                slider.locator(".noUi-handle").first.focus()
                page.keyboard.press(key)
                page.wait_for_function("() => window.__t5.changed !== null", timeout=30_000)
                latencies.append(page.evaluate("() => window.__t5.changed - window.__t5.start"))
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(300)
            after_value = readout.inner_text().strip()
            results.append({"explorer": name, "control": label, "value_before": before_value,
                            "value_after": after_value, "latencies_ms": latencies,
                            "median_ms": statistics.median(latencies)})
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=False)
    return results, page.evaluate(ERRORS)


def run(notebooks: list[Path]):
    """Exercise each notebook in one server and one browser; returns {notebook: (results, errors, png)}."""
    from playwright.sync_api import sync_playwright

    out = {}
    with JupyterLab(notebooks) as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for nb in notebooks:
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                png = ARTIFACTS / f"{nb.stem}.png"
                results, errors = exercise_notebook(page, lab, nb, png)
                out[nb] = (results, errors, png)
                page.evaluate("async () => { await window.jupyterapp.commands.execute('kernelmenu:shutdown'); }")
                page.close()
        finally:
            browser.close()
    return out


def latency_table(out) -> str:
    lines = [f"{'notebook':<32} {'explorer':<26} {'control':<20} {'median ms':>9}  value change"]
    for nb, (results, _, _) in out.items():
        for r in results:
            lines.append(f"{nb.name:<32} {r['explorer']:<26} {r['control'][:20]:<20} {r['median_ms']:>9.0f}  "
                         f"{r['value_before']} -> {r['value_after']}")
    return "\n".join(lines)


if __name__ == "__main__":
    result = run([Path(a).resolve() for a in sys.argv[1:]])
    print(latency_table(result))
    for nb, (_, errors, png) in result.items():
        print(f"{nb.name}: screenshot {png}; errors: {errors or 'none'}")
