"""Write the live notebooks (book/live/notebooks/) from the lessons: their explorers, to run in a browser.

    python book/live_notebooks.py            # (re)write them; any Python with the course's deps or none
    python book/live_notebooks.py --check    # exit 1 if they are stale (tests/test_live.py does this)

One live notebook per lesson in LIVE_LESSONS. It holds the lesson's explorer cells, found by
their calls (a code cell that calls a class imported from t5lesson.explorers and shows a widget
in its stored output), each with the
text before it (the preceding Markdown cell, from its last heading or "**Explorer" paragraph
on), a link back to the lesson page of the website, and one cell that imports what they use.
An explorer called with anything but literal arguments shows what the lesson computed (a
trained model, with PyTorch), so it is left out with a line saying so. A lesson is only listed
once its explorers import no torch (checked here, from the source, transitively).

Never edit the output by hand: change the lesson, then run this.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "live" / "notebooks"
# Lessons with a live notebook. Lesson 5 joins once its explorer needs no torch: add "05".
LIVE_LESSONS = ("00", "01", "02", "03", "04", "05b")
EXPLORERS = "t5lesson.explorers"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FIRST_VISIT = "about 40 MB and about 30 s"  # measured by tests/test_live.py; README, "The live site"
KERNEL = {"kernelspec": {"display_name": "Python (Pyodide)", "language": "python", "name": "python"},
          "language_info": {"name": "python"}}


def site_url() -> str:
    """Where the website is published (book/_config.yml html.baseurl), ending in '/'."""
    url = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())["html"]["baseurl"]
    return url.rstrip("/") + "/"


def cell(kind: str, source: str, cell_id: str) -> dict:
    out = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
    if kind == "code":
        out.update(execution_count=None, outputs=[])
    return out


def explorer_imports(nb: dict) -> dict[str, str]:
    """Names the notebook imports from t5lesson.explorers.*, with their modules."""
    names = {}
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(c["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(EXPLORERS):
                names.update({a.asname or a.name: node.module for a in node.names})
    return names


def explorer_calls(source: str, names: dict[str, str]) -> list[ast.Call]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in names and names[n.func.id] != EXPLORERS and n.func.id[:1].isupper()]


def imported_by(source: str) -> set[str]:
    return {a.asname or a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) for a in n.names}


def literal_arguments(call: ast.Call) -> bool:
    try:
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            ast.literal_eval(arg)
    except ValueError:
        return False
    return True


def lead_text(markdown: str) -> str:
    """The part of the Markdown before an explorer that introduces it."""
    blocks = re.split(r"\n\s*\n", markdown.strip())
    starts = [i for i, b in enumerate(blocks) if b.startswith(("#", "**Explorer"))]
    text = "\n\n".join(blocks[starts[-1]:] if starts else blocks[-1:])
    text = re.sub(r"^#+ ", "### ", text)  # the live notebook's own headings are above
    return unlink(text)


def unlink(text: str) -> str:
    """Relative links (to other notebooks or files) as their text: they do not exist in the live site."""
    return re.sub(r"(?<!!)\[([^\]]*)\]\((?![a-z][a-z0-9+.-]*:|#)[^)\s]+\)", r"\1", text, flags=re.I)


def import_time_nodes(tree: ast.AST):
    """The nodes Python runs when it imports a module: not the bodies of functions (lazy imports)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo += [n for n in ast.iter_child_nodes(node)
                 if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]


def module_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """Every top-level package importing a t5lesson module imports, following t5lesson modules and
    their parent packages (any depth); imports inside functions are left out (they run on use)."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    parts = module.split(".")
    path = ROOT.joinpath(*parts).with_suffix(".py")
    if not path.exists():
        path = ROOT.joinpath(*parts, "__init__.py")
    if not path.exists():
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    if "." in module:
        found |= module_imports(module.rpartition(".")[0], seen)
    for node in import_time_nodes(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            found.add(target.split(".")[0])
            if target.startswith("t5lesson"):
                found |= module_imports(target, seen)
    return found


def lesson_title(nb: dict) -> str:
    for c in nb["cells"]:
        match = re.search(r"(?m)^# (.+)$", "".join(c["source"])) if c["cell_type"] == "markdown" else None
        if match:
            return match[1].strip()
    return ""


def live_notebook(path: Path) -> dict:
    """The live notebook of one lesson (see the module docstring)."""
    nb = json.loads(path.read_text())
    names = explorer_imports(nb)
    number = path.name.split("_")[0].lstrip("0") or "0"  # "05b" stays "5b"
    page = f"{site_url()}notebooks/{path.stem}.html"
    title = lesson_title(nb)
    cells = [cell("markdown", (
        f"# Live: the explorers of lesson {number}\n\n"
        f"From [{title}]({page}) (the lesson page has the whole story; these cells are its explorers "
        "and the text that introduces each). They run in your browser, with nothing installed: "
        "**Run ▸ Run All Cells**, wait for the first figure, then drag a slider or click it and use "
        "the arrow keys.\n\n"
        f"The first visit downloads Python, NumPy and matplotlib ({FIRST_VISIT} before the first "
        "slider works); later visits use the browser's cache. Changes you make are kept in this browser only."),
        "live-title")]
    used, body = {}, []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        source = "\n".join(line for line in "".join(c["source"]).split("\n") if not line.startswith("# NBVAL"))
        calls = explorer_calls(source, names)
        shows_widget = any(WIDGET_MIME in o.get("data", {}) for o in c.get("outputs", []))
        if not (calls and shows_widget):  # an explorer cell calls one and shows it (stored)
            continue
        before = next((nb["cells"][j] for j in range(i - 1, -1, -1) if nb["cells"][j]["cell_type"] == "markdown"), None)
        k = len(body) // 2 + 1
        if not all(literal_arguments(call) for call in calls):
            body.append(cell("markdown", (
                f"*The lesson's next explorer (`{calls[0].func.id}`) shows what the lesson computed with "
                f"PyTorch, which does not run in the browser: see its picture on [the lesson page]({page}).*"),
                f"live-{k}-skipped"))
            body.append(None)
            continue
        for call in calls:
            module = names[call.func.id]
            torch_users = {"torch", "transformers"} & module_imports(module)
            if torch_users:
                sys.exit(f"{path.name}: {module} imports {sorted(torch_users)}; it cannot run in the browser "
                         f"(drop lesson {path.name.split('_')[0]} from LIVE_LESSONS in book/live_notebooks.py)")
            if call.func.id not in imported_by(source):
                used.setdefault(module, set()).add(call.func.id)
        body.append(cell("markdown", lead_text("".join(before["source"])) if before else "", f"live-{k}-text"))
        body.append(cell("code", source.strip(), f"live-{k}-explorer"))
    if not any(c and c["id"].endswith("-explorer") for c in body):
        sys.exit(f"{path.name}: no explorer cells found (calls of classes imported from {EXPLORERS})")
    if used:  # the classes the explorer cells use without importing them
        imports = [f"from {module} import {', '.join(sorted(names))}" for module, names in sorted(used.items())]
        cells.append(cell("code", "\n".join(imports), "live-imports"))
    cells += [c for c in body if c is not None]
    return {"cells": cells, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}


def lessons() -> list[Path]:
    found = []
    for number in LIVE_LESSONS:
        matches = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
        if len(matches) != 1:
            sys.exit(f"LIVE_LESSONS has {number}, but notebooks/ has {len(matches)} notebooks {number}_*.ipynb")
        found.append(matches[0])
    return found


def rendered() -> dict[Path, str]:
    """{output path: text} of every live notebook, as the lessons are now."""
    return {OUT / p.name: json.dumps(live_notebook(p), indent=1, ensure_ascii=False) + "\n" for p in lessons()}


def _shown(p: Path) -> str:
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def stale() -> list[str]:
    want = rendered()
    problems = [f"{_shown(p)} is out of date" for p, text in want.items() if not p.exists() or p.read_text() != text]
    problems += [f"{_shown(p)} has no lesson in LIVE_LESSONS" for p in OUT.glob("*.ipynb") if p not in want]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale live notebooks (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for p in problems:
            print(p, "(run: python book/live_notebooks.py)")
        return 1 if problems else 0
    OUT.mkdir(parents=True, exist_ok=True)
    want = rendered()
    for p in OUT.glob("*.ipynb"):
        if p not in want:
            p.unlink()
    for p, text in want.items():
        p.write_text(text)
        print(f"wrote {_shown(p)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
