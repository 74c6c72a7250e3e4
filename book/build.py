"""Build the course website from the stored notebooks and the explorers' frames.

    .venv-book/bin/python book/build.py [--out build/book] [--course-python .venv/bin/python]

0. Draw the frames of every explorer on a lesson page (book/frames.py, run by the course's Python,
   since this venv has no NumPy, matplotlib or torch): each lesson's own cells run up to its
   explorers, and each explorer draws its figure at every setting of one or two controls. Kept in
   build/cache/frames while the lesson and the package are unchanged. Nothing else is executed.
1. Stage what is published into OUT/src, laid out like the repository (so a page's path is its
   notebook's path in the repository, which the Colab and Binder links need):
   - notebooks/NN_*.ipynb, the lessons, as stored (executed). Explorers (an ipywidgets view with
     a static PNG beside it) become their frames with native controls (book/frames_html.py,
     _assets/frames.js): they move at page load. The saved widget state is dropped (it would pull
     widget JavaScript from a CDN). A code cell whose outputs JupyterLab opens hidden (metadata
     jupyter.outputs_hidden, a "Predict first" answer) shows them in a closed <details>. Each page
     gets "open in Colab" / "launch Binder" links under its title.
   - exercises/NN_*.ipynb, blank as generated, each with a link back to its lesson.
   - instructor.md, from the README's sections named in INSTRUCTOR_SECTIONS.
   - _assets/ (served as the site's _static/): book.css, and mathjax/, MathJax 3 from the
     pinned sphinx-mathjax-offline package (no CDN).
   solutions/ is never read. Relative links to repository files that are not pages become links
   to the repository (repository.url in book/_config.yml, the one setting for all of these).
2. Run Jupyter Book on OUT/src with warnings as errors; the site is OUT/html, and the frames the
   pages show are copied into OUT/html/_frames.
3. Build the live part into OUT/html/live (book/live.py: JupyterLite with the pinned, hash-checked
   Pyodide, the live notebooks of book/live/notebooks/ and exercises 1 to 5). Each lesson page with
   a live notebook links to it. --no-live skips this step.

Exits non-zero (with Sphinx's message) on any warning, so the build is either clean or failed.
"""
from __future__ import annotations

import argparse
import copy
import json
import posixpath
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frames  # noqa: E402 (book/frames.py, beside this file)
import live  # noqa: E402 (book/live.py, beside this file)
from frames_html import FRAMES_DIR, explorer_html  # noqa: E402
from live_notebooks import FIRST_VISIT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
LESSON_GLOB = "[0-9][0-9]*_*.ipynb"  # 05b_...: an optional lesson sorts after its main one
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# Parts of MathJax 3's es5/ folder the pages use: the tex-chtml bundle, the TeX extensions it may
# autoload, its CommonHTML fonts, and the menu's accessibility and speech components.
MATHJAX_PARTS = ["tex-chtml.js", "input", "output/chtml.js", "output/chtml", "a11y", "ui", "sre", "adaptors"]
FRAMES_CACHE = ROOT / "build" / "cache" / "frames"  # book/frames.py's output, kept while its inputs are unchanged
# What a cell with JupyterLab's "outputs hidden" metadata says before its outputs (a "Predict first" answer).
HIDDEN_RESULT = ("Show the result (predict first)", "Hide the result")
EXPLORER_NOTE = ("Static image of an explorer: its sliders work when the notebook runs (open it in Colab or "
                 "Binder with the links at the top of this page, or in JupyterLab).")
# The README's "## " sections that make the instructor's page, kept at their level under its title.
INSTRUCTOR_SECTIONS = ("Two commands", "Instructor's guide", "Colab and Binder", "The course as a website")
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")


def config() -> dict:
    return yaml.safe_load((BOOK / "_config.yml").read_text())


def repository(cfg: dict) -> tuple[str, str, str, str]:
    """(url, owner, name, branch) of repository.url, which must be a GitHub address (Colab needs one)."""
    url = cfg["repository"]["url"].rstrip("/").removesuffix(".git")
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+)", url)
    if not match:
        sys.exit(f"book/_config.yml: repository.url must be https://github.com/OWNER/NAME, not {url!r}")
    return url, match[1], match[2], cfg["repository"].get("branch", "main")


def launch_links(cfg: dict, path: str) -> tuple[str, str]:
    """Colab and Binder URLs of a notebook at `path` in the repository, as the theme's buttons build them."""
    _, owner, name, branch = repository(cfg)
    buttons = cfg["launch_buttons"]
    colab = f"{buttons['colab_url'].rstrip('/')}/github/{owner}/{name}/blob/{branch}/{path}"
    binder = f"{buttons['binderhub_url'].rstrip('/')}/v2/gh/{owner}/{name}/{branch}?urlpath=lab/tree/{path}"
    return colab, binder


def rewrite_links(text: str, page: str, pages: set[str], cfg: dict, images: set[str]) -> str:
    """Keep links to published pages; point links to other repository files at the repository.

    `page` and `pages` are repository paths ("notebooks/01_x.ipynb"). An image from the
    repository is kept and its path added to `images` (stage() copies it beside the page). A link
    into solutions/ keeps its text and loses its target. Anything else (a web address, an anchor)
    is left as is.
    """
    url, _, _, branch = repository(cfg)

    def fix(match):
        label, target = match[1], match[2]
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target, re.I):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if resolved in pages:
            return match[0]
        if resolved.split("/")[0] == "solutions":
            return label[1:-1] if not label.startswith("!") else ""
        if label.startswith("!") and (ROOT / resolved).is_file() and not resolved.startswith(".."):
            images.add(resolved)
            return match[0]
        if (ROOT / resolved).exists() and not resolved.startswith(".."):
            kind = "tree" if (ROOT / resolved).is_dir() else "blob"
            return f"{label}({url}/{kind}/{branch}/{resolved}{'#' + anchor if anchor else ''})"
        return match[0]  # left for Sphinx to report (a warning fails the build)

    return LINK.sub(fix, text)


def markdown_cell(text: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def insert_under_title(nb: dict, text: str) -> None:
    """Put `text` right under the notebook's first "# " heading (or at the top if it has none)."""
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).split("\n")
        for i, line in enumerate(lines):
            if line.startswith("# "):
                cell["source"] = "\n".join(lines[:i + 1] + ["", text, ""] + lines[i + 1:])
                return
    nb["cells"].insert(0, markdown_cell(text, "t5book-header"))


def live_href(path: str) -> str | None:
    """The live site's address (relative to the page) of a published notebook, if it has a live version:
    a lesson with a live notebook (book/live/notebooks/), or a live exercise (live.EXERCISES)."""
    folder, name = posixpath.split(path)
    if folder == "notebooks" and (BOOK / "live" / "notebooks" / name).exists():
        return f"../live/lab/index.html?path={name}"
    if folder == "exercises" and name in live.EXERCISES:
        return f"../live/lab/index.html?path=exercises/{name}"
    return None


def live_link(path: str) -> str:
    """The launch box's line that opens the page's live notebook, or ''."""
    href = live_href(path)
    if href is None:
        return ""
    # Raw HTML: the target is a file of the live site (built after the book), not a page Sphinx knows.
    what = "move the sliders live in your browser" if path.startswith("notebooks/") else \
        "answer it live in your browser, with check() and hint()"
    return (f"\n\n**No install:** <a class=\"t5-live-link\" href=\"{href}\">{what}</a> "
            f"(JupyterLite; the first visit downloads {FIRST_VISIT}, later ones use the browser's cache).")


def launch_box(cfg: dict, path: str, what: str) -> str:
    colab, binder = launch_links(cfg, path)
    return (f"```{{container}} t5-launch\n**Run this {what}:** [open in Colab]({colab}) · [launch Binder]({binder}). "
            f"This page shows its stored outputs; sliders and `check()` work in the running notebook. "
            f"In Colab, run [the setup cell](../instructor.md#colab-and-binder) first.{live_link(path)}\n```")


def rest_link(path: str) -> str:
    """Where the whole of an explorer on the page at `path` runs, as the end of a sentence (raw HTML)."""
    href = live_href(path)
    if href is None:
        return "when the notebook runs (open it in Colab or Binder with the links at the top of this page)"
    return f'in <a class="t5-live-link" href="{href}">the live notebook</a> (in your browser, nothing to install)'


def hide_outputs(cell: dict) -> None:
    """A cell JupyterLab opens with its outputs hidden (metadata jupyter.outputs_hidden: the answer to
    a "Predict first" question) shows them on the page only inside a closed <details>: myst-nb's
    hide-output, with our summary (book/_ext/t5book.py keeps the summary's visible text its name)."""
    if not cell.get("metadata", {}).get("jupyter", {}).get("outputs_hidden") or not cell.get("outputs"):
        return
    metadata = cell["metadata"]
    metadata["tags"] = [*metadata.get("tags", []), "hide-output"]
    metadata["mystnb"] = {**metadata.get("mystnb", {}),
                          "code_prompt_show": HIDDEN_RESULT[0], "code_prompt_hide": HIDDEN_RESULT[1]}


def show_explorer(output: dict, path: str, number: int, moving: list) -> str | None:
    """Put the explorer's frames (`moving[number - 1]`, from book/frames.py) in place of its widget view
    and stored picture; without frames (an exercise page) keep the picture and return the note to add."""
    data = output["data"]
    del data[WIDGET_MIME]
    if number <= len(moving):
        output["data"] = {"text/html": explorer_html(moving[number - 1], number, "..", rest_link(path), number == 1)}
        output["metadata"] = {}
        return None
    live_note = (f' Or <a class="t5-live-link" href="{live_href(path)}">move the sliders live in your '
                 'browser</a>, with nothing installed.') if live_href(path) else ""
    return f"```{{container}} t5-static-explorer\n{EXPLORER_NOTE}{live_note}\n```"


def stage_code_cell(cell: dict, path: str, shown: int, moving: list) -> tuple[int, list[dict]]:
    """Prepare one code cell in place; returns the explorers seen so far and cells to add after it."""
    source = "".join(cell["source"]).split("\n")
    cell["source"] = "\n".join(line for line in source if not line.startswith("# NBVAL_"))
    # A widget with no stored picture is a progress bar: it means nothing on a static page.
    cell["outputs"] = [o for o in cell.get("outputs", [])
                       if WIDGET_MIME not in o.get("data", {}) or "image/png" in o["data"]]
    hide_outputs(cell)
    added = []
    for output in cell["outputs"]:
        if WIDGET_MIME in output.get("data", {}):
            shown += 1
            note = show_explorer(output, path, shown, moving)
            if note:
                added.append(markdown_cell(note, f"t5book-explorer-{shown}"))
    return shown, added


def stage_notebook(src: Path, dest: Path, path: str, pages: set[str], cfg: dict, header: str,
                   images: set[str], moving: list = ()) -> dict:
    """Copy one notebook for publishing (see the module docstring); returns counts for the log.

    moving: the frames of the page's explorers, in page order (book/frames.py's manifest).
    """
    nb = json.loads(src.read_text())
    nb.get("metadata", {}).pop("widgets", None)
    cells, explorers = [], 0
    for cell in nb["cells"]:
        cell = copy.deepcopy(cell)
        cells.append(cell)
        if cell["cell_type"] == "markdown":
            cell["source"] = rewrite_links("".join(cell["source"]), path, pages, cfg, images)
        elif cell["cell_type"] == "code":
            explorers, added = stage_code_cell(cell, path, explorers, list(moving))
            cells.extend(added)
    nb["cells"] = cells
    insert_under_title(nb, header)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return {"explorers": explorers, "moving": min(explorers, len(moving))}


def draw_frames(lessons: list[Path], course_python: Path) -> dict[str, list]:
    """Each lesson's explorers as frames (book/frames.py, run by the course's Python): lesson file name ->
    its manifest's explorers, in page order. Lessons without an explorer are left out."""
    if not course_python.exists():
        sys.exit(f"no course Python at {course_python}: the explorers' frames are drawn by the course's own code "
                 "(python3 -m venv .venv && .venv/bin/pip install -r requirements.txt, or --course-python)")
    with_explorers = [p for p in lessons if frames.explorer_cells(json.loads(p.read_text()))]
    FRAMES_CACHE.mkdir(parents=True, exist_ok=True)
    try:
        frames.export_all(str(course_python), FRAMES_CACHE, with_explorers)
    except RuntimeError as error:
        sys.exit(str(error))
    return {p.name: json.loads((FRAMES_CACHE / f"{p.stem}.json").read_text())["explorers"] for p in with_explorers}


def copy_frames(html: Path, drawn: dict[str, list]) -> None:
    """Copy the frames the pages show into the site (html/_frames/<lesson>/<n>/)."""
    target = html / FRAMES_DIR
    if target.exists():
        shutil.rmtree(target)
    for name in drawn:
        shutil.copytree(FRAMES_CACHE / Path(name).stem, target / Path(name).stem)


def readme_sections(*titles: str) -> str:
    """The README's "## " sections with these titles, in README order."""
    parts = re.split(r"(?m)^(?=## )", (ROOT / "README.md").read_text())
    found = [p for p in parts if p.startswith("## ") and p[3:].split("\n")[0].strip() in titles]
    missing = set(titles) - {p[3:].split("\n")[0].strip() for p in found}
    if missing:
        sys.exit(f"README.md has no section(s) {sorted(missing)} for the instructor's page")
    return "\n".join(p.rstrip() + "\n" for p in found)


def mathjax_dir() -> Path:
    from importlib.metadata import distribution

    dist = distribution("sphinx-mathjax-offline")
    return Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))


def stage(src: Path, cfg: dict, drawn: dict[str, list]) -> dict:
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(BOOK / name, src / name)
    # Not "_static": Jupyter Book would add every .js under a "_static" folder to every page.
    shutil.copytree(BOOK / "_assets", src / "_assets")
    shutil.copytree(BOOK / "_ext", src / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    mathjax = mathjax_dir()
    for part in MATHJAX_PARTS:
        target = src / "_assets" / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (mathjax / part).is_dir() else shutil.copy)(mathjax / part, target)
    lessons = sorted((ROOT / "notebooks").glob(LESSON_GLOB))
    exercises = sorted((ROOT / "exercises").glob(LESSON_GLOB))
    pages = {f"notebooks/{p.name}" for p in lessons} | {f"exercises/{p.name}" for p in exercises} | {"instructor.md"}
    counts, images = {}, set()
    for nb in lessons:
        path = f"notebooks/{nb.name}"
        counts[path] = stage_notebook(nb, src / path, path, pages, cfg, launch_box(cfg, path, "lesson"), images,
                                      drawn.get(nb.name, []))
    by_number = {p.name.split("_")[0]: p for p in lessons}  # "05" and "05b" apart
    for nb in exercises:
        path = f"exercises/{nb.name}"
        lesson = by_number.get(nb.name.split("_")[0])
        if lesson is None:
            sys.exit(f"{path}: no lesson notebooks/{nb.name[:2]}_*.ipynb to link back to")
        back = f"This exercise goes with [lesson {int(nb.name[:2])}](../notebooks/{lesson.name})."
        header = back + "\n\n" + launch_box(cfg, path, "exercise")
        counts[path] = stage_notebook(nb, src / path, path, pages, cfg, header, images)
    guide = readme_sections(*INSTRUCTOR_SECTIONS)
    intro = ("# For instructors\n\nFrom the course README: how to install the course, hand out and grade the "
             "exercises, open the notebooks in Colab or Binder, and publish this website.\n\n")
    (src / "instructor.md").write_text(intro + rewrite_links(guide, "instructor.md", pages, cfg, images))
    for image in sorted(images):  # images the pages show from the repository, at the same paths
        (src / image).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / image, src / image)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book",
                        help="output folder: OUT/src is the staged book, OUT/html the site (default: build/book)")
    parser.add_argument("--no-live", action="store_true", help="build the book only, without its live part")
    parser.add_argument("--course-python", type=Path, default=ROOT / ".venv" / "bin" / "python",
                        help="the course venv's Python, which draws the explorers' frames (default: .venv/bin/python)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    cfg = config()
    start = time.monotonic()
    drawn = draw_frames(sorted((ROOT / "notebooks").glob(LESSON_GLOB)), args.course_python)
    framed = time.monotonic()
    counts = stage(out / "src", cfg, drawn)
    staged = time.monotonic()
    if (out / "_build").exists():
        shutil.rmtree(out / "_build")
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(out / "src"), "--path-output", str(out),
           "--builder", "html", "-W", "-n", "--keep-going", "--quiet"]
    result = subprocess.run(cmd)
    if result.returncode != 0:
        print(f"book build FAILED (exit {result.returncode}): a warning or error above", file=sys.stderr)
        return result.returncode
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    (out / "_build" / "html").rename(html)
    copy_frames(html, drawn)
    explorers, moving = (sum(c[k] for c in counts.values()) for k in ("explorers", "moving"))
    frame_files = list((html / FRAMES_DIR).rglob("*.png"))
    print(f"book: {len(counts)} notebooks ({moving} of {explorers} explorers moving, {len(frame_files)} frames, "
          f"{sum(f.stat().st_size for f in frame_files) / 1e6:.1f} MB, drawn in {framed - start:.1f} s) + instructor "
          f"page; staged in {staged - framed:.1f} s, built in {time.monotonic() - staged:.1f} s -> {html}/index.html")
    if args.no_live:
        return 0
    facts = live.build(html, out / "live-work")
    print(f"live: {facts['notebooks']} live notebooks + {facts['exercises']} exercises, {facts['packages']} "
          f"packages in the Pyodide lock (Pyodide from {facts['source']}); {facts['mb']:.0f} MB in {facts['files']} "
          f"files, built in {facts['seconds']:.1f} s -> {html}/live/lab/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
