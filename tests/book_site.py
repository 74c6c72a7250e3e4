"""Build the course website and read every page in headless Chromium with the network blocked.

Used by tests/test_book.py. Kept apart from the test so it can also be run by hand:

    python tests/book_site.py          # builds into a temporary folder, prints a report, writes screenshots

Everything the test expects is derived from the repository as it is now (the notebooks in
notebooks/ and exercises/, book/_config.yml, solutions/), never from a list kept here.

The book tooling lives in its own venv (.venv-book, README "The course as a website"), or in the
Python named by T5LESSON_BOOK_PYTHON. The build runs under `unshare -n` (no network at all) where
the machine allows it. The site is served on loopback by a small HTTP server in this process;
Chromium reaches it directly, while every other request is aborted by a route handler (and
recorded) and, as a second wall, sent to a dead proxy.

Every page is also checked by axe-core (the WCAG 2.1 A and AA rules), from the copy of npm's
axe-core package in tests/vendor/axe-core (see its SOURCE.md), whose hash is checked before use.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import yaml

from browser import CHROMIUM, CHROMIUM_ARGS, browser_missing_reason

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "book"
BOOK_PYTHON = Path(os.environ.get("T5LESSON_BOOK_PYTHON", ROOT / ".venv-book" / "bin" / "python"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
# Loopback is exempt from a proxy in Chromium; anything else goes to a port where nothing listens.
OFFLINE_ARGS = CHROMIUM_ARGS + ["--proxy-server=http://127.0.0.1:9", "--dns-prefetch-disable"]
# axe-core from npm (`npm pack axe-core@4.11.0`), vendored: tests/vendor/axe-core/SOURCE.md.
AXE_VERSION = "4.11.0"
AXE_JS = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
AXE_SHA256 = "e9e5863c33a874f09bc01acd9234b7e3c871479f5eef8802fa582544465e6d01"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Run after MathJax: a summary per violated rule (impact, how many elements, a few of them).
AXE_RUN = """async (tags) => {
  // label-content-name-mismatch (WCAG 2.5.3, level A) is an experimental rule: named to run.
  // preload off: axe would fetch the stylesheets again and resolve their @import against the page,
  // asking for files that do not exist (../basic.css from a page one folder down); no rule here needs it.
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
                                          rules: {'label-content-name-mismatch': {enabled: true}},
                                          preload: false});
  return {version: axe.version, violations: result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    nodes: v.nodes.slice(0, 4).map(n => ({target: n.target.join(' '), summary: n.failureSummary,
                                          html: n.html.slice(0, 200)}))}))};
}"""


def axe_source() -> str:
    """The vendored axe-core, after checking it is the npm package's file."""
    data = AXE_JS.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != AXE_SHA256:
        raise RuntimeError(f"{AXE_JS} has sha256 {digest}, not axe-core {AXE_VERSION}'s {AXE_SHA256}")
    return data.decode("utf-8")


# What the site must hold, derived from the repository ---------------------------------------
def notebook_pages() -> list[str]:
    """Repository paths of the published notebooks: lessons (start page first), then exercises."""
    return ([f"notebooks/{p.name}" for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))]
            + [f"exercises/{p.name}" for p in sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))])


def pages() -> list[str]:
    """Every page of the site, as its HTML path: the notebooks, then the instructor's page."""
    return [p.replace(".ipynb", ".html") for p in notebook_pages()] + ["instructor.html"]


def notebook_expectations(path: str) -> dict:
    """What a notebook's page must show: its stored images, explorers (widgets) and whether it has math."""
    nb = json.loads((ROOT / path).read_text())
    images = explorers = 0
    math = False
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            math = math or bool(re.search(r"\$[^$]+\$", "".join(cell["source"])))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            images += any(m in data for m in IMAGE_MIMES)
            explorers += WIDGET_MIME in data and "image/png" in data  # a progress bar has no picture
    return {"images": images, "explorers": explorers, "math": math}


def lesson_of_exercise(path: str) -> str:
    """The lesson page an exercise page must link back to (same two-digit number)."""
    number = Path(path).name[:2]
    (lesson,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    return f"notebooks/{lesson.stem}.html"


def book_config() -> dict:
    return yaml.safe_load((ROOT / "book" / "_config.yml").read_text())


def repository() -> tuple[str, str, str, str]:
    repo = book_config()["repository"]
    url = repo["url"].rstrip("/").removesuffix(".git")
    owner, name = urlsplit(url).path.strip("/").split("/")
    return url, owner, name, repo.get("branch", "main")


def launch_urls(path: str) -> tuple[str, str]:
    """The Colab and Binder addresses a notebook's page must offer (from the one repository setting)."""
    _, owner, name, branch = repository()
    return (f"https://colab.research.google.com/github/{owner}/{name}/blob/{branch}/{path}",
            f"https://mybinder.org/v2/gh/{owner}/{name}/{branch}?urlpath=lab/tree/{path}")


def normalise(text: str) -> str:
    """Letters and digits only, lower case: the same answer compares equal as code, Markdown or HTML."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def solution_only_lines() -> list[str]:
    """Lines of the solutions' answers (between the markers, and free-text answer cells) that appear
    nowhere in the published sources (lessons, exercises, README), normalised; short ones dropped
    (a one-letter answer cannot be told from the question's text)."""
    public = ""
    for path in notebook_pages():
        public += "\n".join("".join(c["source"]) for c in json.loads((ROOT / path).read_text())["cells"])
    public = normalise(public + (ROOT / "README.md").read_text())
    found = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            regions = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S)
            if cell["cell_type"] == "markdown" and cell.get("metadata", {}).get("t5lesson", {}).get("role") == "answer":
                regions.append(source)
            for line in "\n".join(regions).split("\n"):
                key = normalise(line)
                if len(key) >= 12 and key not in public:
                    found.append(key)
    return sorted(set(found))


# Building ------------------------------------------------------------------------------------
def book_missing_reason() -> str | None:
    """Why the site test cannot run here, or None if it can."""
    if not BOOK_PYTHON.exists():
        return (f"no book tooling at {BOOK_PYTHON} (install it: python3 -m venv .venv-book && "
                ".venv-book/bin/pip install -r book/requirements.txt)")
    probe = subprocess.run([str(BOOK_PYTHON), "-c", "import jupyter_book, importlib.metadata as m; "
                            "m.distribution('sphinx-mathjax-offline')"], capture_output=True)
    if probe.returncode != 0:
        return f"{BOOK_PYTHON} lacks jupyter-book or sphinx-mathjax-offline (pip install -r book/requirements.txt)"
    return browser_missing_reason()


def offline_prefix() -> list[str]:
    """`unshare -n` where it works (root on Linux): the command then runs with no network at all."""
    try:
        ok = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return ["unshare", "-n"] if ok else []


def build(out: Path) -> tuple[subprocess.CompletedProcess, float, bool]:
    """Run the README's build (book/build.py) into `out`, without network where the machine allows it.

    Returns the process, its seconds, and whether the network was cut.
    """
    prefix = offline_prefix()
    start = time.monotonic()
    # The explorers' frames are drawn by the course's Python: this one, which runs the tests.
    result = subprocess.run(prefix + [str(BOOK_PYTHON), str(ROOT / "book" / "build.py"), "--out", str(out),
                                      "--course-python", sys.executable],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    return result, time.monotonic() - start, bool(prefix)


# Static checks on the built files ------------------------------------------------------------
class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids, self.text = [], set(), []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        attr = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src"}.get(tag)
        if attr and attrs.get(attr):
            self.refs.append(attrs[attr])
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


@functools.cache
def parse_html(path: Path) -> _Refs:
    parser = _Refs()
    parser.feed(path.read_text(errors="replace"))
    return parser


def broken_internal_links(site: Path) -> list[str]:
    """Every relative href/src of every page whose file (or #anchor in it) is missing."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:  # theme template fragments, not pages
            continue
        for ref in parse_html(page).refs:
            parts = urlsplit(ref)
            if parts.scheme or parts.netloc or ref.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = f"{page.relative_to(site)} -> {ref}"
            if not target.is_relative_to(site.resolve()) or not target.exists():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in parse_html(target).ids:
                broken.append(f"{where} (no anchor #{parts.fragment})")
    return broken


# JupyterLite's own files in the live part (its app, extensions, Pyodide): not course text. What the
# course adds there (live/files, live/api: the notebooks) is read like every page.
LITE_OWN = ("build", "extensions", "static", "pypi")


def site_texts(site: Path):
    """(relative path, text) of every text file of the site; HTML as its visible text."""
    for path in sorted(site.rglob("*")):
        if not path.is_file() or path.suffix in (".png", ".jpg", ".gif", ".woff", ".woff2", ".ttf", ".inv", ".ico"):
            continue
        parts = path.relative_to(site).parts
        if len(parts) > 2 and parts[0] == "live" and parts[1] in LITE_OWN:
            continue
        raw = path.read_text(errors="replace")
        if path.suffix == ".html":
            yield path.relative_to(site), raw + "\n" + html.unescape("".join(parse_html(path).text))
        else:
            yield path.relative_to(site), raw


def solution_leaks(site: Path) -> list[str]:
    """Solution markers or solution-only answer lines found in the site; [] when clean."""
    leaks = [f"{p}: a path under solutions/" for p in site.rglob("*") if "solutions" in p.relative_to(site).parts]
    answers = solution_only_lines()
    for rel, text in site_texts(site):
        for marker in ("BEGIN SOLUTION", "END SOLUTION"):
            if marker in text:
                leaks.append(f"{rel}: {marker!r}")
        flat = normalise(text)
        leaks += [f"{rel}: solution line {a!r}" for a in answers if a in flat]
    return leaks


# Reading the pages in Chromium -----------------------------------------------------------------
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class SiteServer:
    """The built site over HTTP on 127.0.0.1, in a thread; use as a context manager."""

    def __init__(self, site: Path):
        handler = functools.partial(_QuietHandler, directory=str(site))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __enter__(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


MATHJAX_DONE = """async () => {
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return false;
  await MathJax.startup.promise;
  await document.fonts.ready;
  return true;
}"""
# Images that load as they near the viewport (the explorers' frames), loaded now: the checks below
# (and the axe run) need them all, wherever they are on the page.
LOAD_LAZY_IMAGES = """async () => {
  const lazy = Array.from(document.querySelectorAll('img[loading="lazy"]'));
  lazy.forEach(img => { img.loading = 'eager'; });
  await Promise.all(lazy.map(img => img.decode().catch(() => null)));
  return lazy.length;
}"""
# Everything the checks need from one page, read after MathJax has finished.
PAGE_FACTS = """() => {
  const skip = 'pre, code, script, style, mjx-container, mjx-assistive-mml, .MathJax_Preview';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement.closest(skip)) texts.push(n.nodeValue);
  }
  const math = Array.from(document.querySelectorAll('span.math, div.math'));
  const outputImages = Array.from(document.querySelectorAll('.cell_output img'));
  const notes = Array.from(document.querySelectorAll('.t5-static-explorer'));
  return {
    title: document.title,
    text: texts.join(' '),
    bodyText: document.body.innerText,
    math: math.length,
    mathRendered: math.filter(m => m.querySelector('mjx-container')).length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    mjx: document.querySelectorAll('mjx-container').length,
    outputImages: outputImages.length,
    outputImagesLoaded: outputImages.filter(i => i.complete && i.naturalWidth > 0).length,
    outputImageAlts: outputImages.map(i => i.getAttribute('alt') || ''),
    brokenImages: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    explorerNotes: notes.length,
    movingExplorers: document.querySelectorAll('figure.t5-frames').length,
    notesAfterImage: notes.filter(n => {
      const prev = n.previousElementSibling;  // the explorer's code cell, its PNG in the output
      return prev && prev.querySelector('.cell_output img');
    }).length,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
    launchBox: Array.from(document.querySelectorAll('.t5-launch a[href]')).map(a => a.href),
    articleLinks: Array.from(document.querySelectorAll('article a[href]')).map(a => a.href),
  };
}"""


def safe_name(page: str) -> str:
    return page.replace("/", "__").removesuffix(".html")


def read_pages(site: Path, page_list: list[str], shots: Path = ARTIFACTS, parallel: int = 2) -> dict:
    """Open every page offline, `parallel` at a time; returns {page: facts} with requests, errors,
    timings and a screenshot path."""
    shots.mkdir(parents=True, exist_ok=True)
    with SiteServer(site) as server:
        return asyncio.run(_read_pages(server.base, page_list, shots, parallel))


async def _read_pages(base: str, page_list: list[str], shots: Path, parallel: int) -> dict:
    from playwright.async_api import async_playwright

    local = (base, "data:", "blob:", "about:")
    axe = axe_source()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=OFFLINE_ARGS, headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
            slots = asyncio.Semaphore(parallel)

            async def read(page_path):
                async with slots:
                    page = await context.new_page()
                    bad, errors, external = [], [], []

                    async def route(r):  # the first wall: nothing but the site leaves the page
                        if r.request.url.startswith(local):
                            await r.continue_()
                        else:
                            external.append(r.request.url)
                            await r.abort("blockedbyclient")

                    await page.route("**/*", route)
                    page.on("response", lambda r: r.status >= 400 and bad.append(f"{r.status} {r.url}"))
                    page.on("requestfailed", lambda r: bad.append(f"failed {r.url} ({r.failure})"))
                    page.on("request", lambda r: not r.url.startswith(local) and external.append(r.url))
                    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                    page.on("console", lambda m: m.type == "error" and errors.append(f"console: {m.text}"))
                    start = time.monotonic()
                    response = await page.goto(base + page_path, wait_until="load")
                    mathjax = await page.evaluate(MATHJAX_DONE)
                    load_s = time.monotonic() - start
                    await page.evaluate(LOAD_LAZY_IMAGES)
                    facts = await page.evaluate(PAGE_FACTS)
                    await page.add_script_tag(content=axe)
                    facts["axe"] = await page.evaluate(AXE_RUN, AXE_TAGS)
                    png = shots / f"{safe_name(page_path)}.png"
                    await page.screenshot(path=str(png), full_page=True)
                    facts.update(status=response.status if response else None, bad=bad, errors=errors,
                                 external=sorted(set(external)), mathjax=mathjax, load_s=load_s,
                                 screenshot=png, url=base + page_path, base=base)
                    await page.close()
                    return page_path, facts

            results = await asyncio.gather(*(read(p) for p in page_list))
            await context.close()
        finally:
            await browser.close()
    return dict(results)


def serious(facts: dict) -> list[dict]:
    """The page's axe violations of serious or critical impact."""
    return [v for v in facts["axe"]["violations"] if v["impact"] in ("serious", "critical")]


def resolve(base: str, href: str) -> str:
    """A link's page path relative to the site root ('' for other sites), without query or fragment."""
    if not href.startswith(base):
        return ""
    return urlsplit(urljoin(base, href)).path.lstrip("/")


def report(build_s: float, offline: bool, facts: dict) -> str:
    where = "with no network (unshare -n)" if offline else "network NOT cut (no unshare here)"
    lines = [f"site build (book/build.py, warnings as errors, {where}): {build_s:.1f} s", "",
             f"{'page':<46} {'load s':>6} {'math':>5} {'images':>6} {'explorers':>9} {'axe':>4}  screenshot"]
    for page, f in facts.items():
        lines.append(f"{page:<46} {f['load_s']:>6.2f} {f['mathRendered']:>2}/{f['math']:<3} "
                     f"{f['outputImagesLoaded']:>6} {f['movingExplorers'] + f['explorerNotes']:>9} "
                     f"{len(serious(f)):>4}  "
                     f"{f['screenshot'].relative_to(ROOT)}")
    lines += ["", f"axe-core {AXE_VERSION}, rules {', '.join(AXE_TAGS)}: violations by rule (all impacts)"]
    by_rule = {}
    for page, f in facts.items():
        for v in f["axe"]["violations"]:
            entry = by_rule.setdefault((v["id"], v["impact"]), [0, set()])
            entry[0] += v["count"]
            entry[1].add(page)
    for (rule, impact), (count, where) in sorted(by_rule.items()):
        lines.append(f"  {rule} ({impact}): {count} elements on {len(where)} pages")
    if not by_rule:
        lines.append("  none")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import tempfile

    reason = book_missing_reason()
    if reason:
        sys.exit(reason)
    with tempfile.TemporaryDirectory(prefix="t5lesson-book-") as tmp:
        result, seconds, offline = build(Path(tmp))
        print(result.stdout[-3000:], result.stderr[-3000:])
        if result.returncode:
            sys.exit("build failed")
        facts = read_pages(Path(tmp) / "html", pages())
        print(report(seconds, offline, facts))
        for page, f in facts.items():
            for v in f["axe"]["violations"]:
                print(page, v["id"], v["impact"], v["count"], [n["target"] for n in v["nodes"]],
                      v["nodes"][0]["summary"][:300])
        print("broken links:", broken_internal_links(Path(tmp) / "html") or "none")
        print("solution leaks:", solution_leaks(Path(tmp) / "html") or "none")
