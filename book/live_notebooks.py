"""Write the live notebooks (book/live/notebooks/) from the lessons: their explorers, to run in a browser.

    python book/live_notebooks.py            # (re)write them; any Python with the course's deps or none
    python book/live_notebooks.py --check    # exit 1 if they are stale (tests/test_live.py does this)

One live notebook per lesson in LIVE_LESSONS. It holds the lesson's explorer cells, found by
their calls (a code cell that calls a class imported from t5lesson.explorers and shows a widget
in its stored output), and its your-turn cells (tagged "your-turn": a stub the learner fills in,
checked at once), and the code cells tagged "live" (one that runs on a your-turn answer, carried as it is),
in the lesson's order, each explorer and your-turn cell with the text before it (the preceding Markdown
cell, from its last heading or "**Explorer" paragraph on), a link back to the lesson page of the
website, and one cell that imports what they use (for a your-turn cell: the lesson's own imports
of the names it or its answer in solutions/your_turn/ reads, and `hint`). A your-turn cell that
needs torch (a training step) is left out with a line saying so.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "live" / "notebooks"
# Lessons with a live notebook: every lesson with an explorer or a your-turn cell that needs no torch.
LIVE_LESSONS = ("00", "01", "02", "03", "04", "05", "05b")
EXPLORERS = "t5lesson.explorers"
YOUR_TURN_TAG = "your-turn"
CARRIED_TAG = "live"  # a code cell the live notebook carries as it is: one that runs on a your-turn answer
YOUR_TURN_NAME = re.compile(r"^# Your turn \((\w+)\)")  # the comment that names a your-turn cell
NO_TORCH = ("torch", "transformers")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FIRST_VISIT = "about 48 MB and, on a slow computer, up to a minute"  # tests/test_live.py measures it; README
KERNEL = {"kernelspec": {"display_name": "Python (Pyodide)", "language": "python", "name": "python"},
          "language_info": {"name": "python"}}


def site_url() -> str:
    """Where the website is published (book/_config.yml html.baseurl), ending in '/'."""
    import yaml  # here: the your-turn answers (solution()) are read where PyYAML is not installed

    url = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())["html"]["baseurl"]
    return url.rstrip("/") + "/"


def cell(kind: str, source: str, cell_id: str) -> dict:
    out = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
    if kind == "code":
        out.update(execution_count=None, outputs=[])
    return out


def with_view(lesson_cell: dict, live_cell: dict) -> dict:
    """`live_cell` with the lesson cell's JupyterLab view metadata ("jupyter": outputs_hidden on a
    "Predict first" answer, source_hidden), which JupyterLite honours as JupyterLab does."""
    view = lesson_cell.get("metadata", {}).get("jupyter")
    if view:
        live_cell["metadata"]["jupyter"] = dict(view)
    return live_cell


def code_trees(cells: list[dict]):
    """The parsed source of each code cell that parses."""
    for c in cells:
        if c["cell_type"] == "code":
            try:
                yield ast.parse("".join(c["source"]))
            except SyntaxError:
                continue


def explorer_imports(nb: dict) -> dict[str, str]:
    """Names the notebook imports from t5lesson.explorers.*, with their modules."""
    names = {}
    for tree in code_trees(nb["cells"]):
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


def import_bindings(cells: list[dict]) -> dict[str, tuple[str, str | None, str]]:
    """{bound name: (module, imported name or None for `import module`, the name bound)} of the
    top-level imports in `cells`, so a live notebook can import just what a cell uses."""
    bound = {}
    for tree in code_trees(cells):
        for node in tree.body:
            if isinstance(node, ast.Import):
                bound.update({a.asname or a.name.split(".")[0]: (a.name if a.asname else a.name.split(".")[0], None,
                                                                 a.asname or a.name.split(".")[0]) for a in node.names})
            elif isinstance(node, ast.ImportFrom) and not node.level:
                bound.update({a.asname or a.name: (node.module, a.name, a.asname or a.name) for a in node.names})
    return bound


def free_names(source: str) -> set[str]:
    """Names a cell reads but never binds itself (nor are builtins): what earlier cells must give it."""
    tree = ast.parse(source)
    bound = set(imported_by(source)) | {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                                        if isinstance(n, ast.Import) for a in n.names}
    read = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return read - bound - set(dir(__builtins__) if isinstance(__builtins__, type(sys)) else __builtins__)


def needs_torch(module: str) -> bool:
    return module.split(".")[0] in NO_TORCH or bool(set(NO_TORCH) & module_imports(module))


def import_lines(used: dict[str, set[tuple[str | None, str]]], spare: set[str]) -> list[str]:
    """The import statements for `used` ({module: {(name or None for `import module`, bound name)}}),
    grouped and ordered as the course's linter (ruff's isort) wants them; a line binding a name in
    `spare` (no cell reads it: it is there for the learner's answer or hint()) says so to the linter."""
    note = "  # noqa: F401  (for your answer, or hint() when stuck)"
    def by_type(name: str):  # ruff's order-by-type: CONSTANTS, then Classes, then the rest
        return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)

    sections = []
    for first_party in (False, True):
        modules = sorted(m for m in used if m.split(".")[0] == "t5lesson") if first_party else \
            sorted(m for m in used if m.split(".")[0] != "t5lesson")
        plain = [f"import {m}" + (f" as {alias}" if alias != m else "") for m in modules
                 for name, alias in sorted(used[m], key=lambda x: x[1]) if name is None]
        froms = []
        for m in modules:
            taken = sorted((n for n, alias in used[m] if n is not None and n == alias), key=by_type)
            froms += [f"from {m} import {', '.join(taken)}"] if taken else []
            froms += [f"from {m} import {n} as {alias}" for n, alias in sorted(used[m], key=lambda x: str(x[0]))
                      if n is not None and n != alias]
        if plain or froms:
            sections.append("\n".join(line + (note if set(re.findall(r"\w+", line.split(" import ")[-1])) & spare
                                               else "") for line in plain + froms))
    return ["\n\n".join(sections)]


def title_cell(number: str, title: str, page: str, explorers: bool) -> dict:
    """The live notebook's first cell: where it comes from, how to use it, what the first visit costs."""
    if explorers:
        holds, use, wait = "explorers, its your-turn cells", (
            "wait for the first figure, then drag a slider or click it and use the arrow keys. In a your-turn "
            "cell, replace"), "the first slider works"
    else:
        holds, use, wait = "your-turn cells that run without PyTorch,", "then, in a your-turn cell, replace", \
            "the first cell runs"
    heading = "the explorers" if explorers else "the your-turn cells"
    return cell("markdown", (
        f"# Live: {heading} of lesson {number}\n\n"
        f"From [{title}]({page}) (the lesson page has the whole story; these cells are its {holds} "
        "and the text that introduces each). They run in your browser, with nothing "
        f"installed: **Run ▸ Run All Cells**, {use} the `raise NotImplementedError` with your code and "
        "run the cell: it tells you at once whether yours matches the course's version "
        "(`hint(\"name\")` in a new cell gives a hint).\n\n"
        f"The first visit downloads Python, NumPy and matplotlib ({FIRST_VISIT} before {wait}); "
        "later visits use the browser's cache. Changes you make are kept in this browser only."),
        "live-title")


def live_notebook(path: Path) -> dict:
    """The live notebook of one lesson (see the module docstring)."""
    nb = json.loads(path.read_text())
    names = explorer_imports(nb)
    number = path.name.split("_")[0].lstrip("0") or "0"  # "05b" stays "5b"
    page = f"{site_url()}notebooks/{path.stem}.html"
    title = lesson_title(nb)
    used, body = {}, []

    def text_before(i):
        before = next((nb["cells"][j] for j in range(i - 1, -1, -1) if nb["cells"][j]["cell_type"] == "markdown"), None)
        return lead_text("".join(before["source"])) if before else ""

    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        source = "\n".join(line for line in "".join(c["source"]).split("\n") if not line.startswith("# NBVAL"))
        if YOUR_TURN_TAG in c["metadata"].get("tags", []):
            body += your_turn_cells(path, source, import_bindings(nb["cells"][:i]), text_before(i), page, used)
            continue
        if CARRIED_TAG in c["metadata"].get("tags", []):
            body.append(with_view(c, carried_cell(path, c["id"], source, import_bindings(nb["cells"][:i]), body, used)))
            continue
        calls = explorer_calls(source, names)
        shows_widget = any(WIDGET_MIME in o.get("data", {}) for o in c.get("outputs", []))
        if not (calls and shows_widget):  # an explorer cell calls one and shows it (stored)
            continue
        k = sum(1 for b in body if re.fullmatch(r"live-\d+-(explorer|skipped)", b["id"])) + 1
        if not all(literal_arguments(call) for call in calls):
            body.append(cell("markdown", (
                f"*The lesson's next explorer (`{calls[0].func.id}`) shows what the lesson computed with "
                f"PyTorch, which does not run in the browser: see its picture on [the lesson page]({page}).*"),
                f"live-{k}-skipped"))
            continue
        for call in calls:
            module = names[call.func.id]
            if needs_torch(module):
                sys.exit(f"{path.name}: {module} imports torch; it cannot run in the browser "
                         f"(drop lesson {path.name.split('_')[0]} from LIVE_LESSONS in book/live_notebooks.py)")
            if call.func.id not in imported_by(source):
                used.setdefault(module, set()).add((call.func.id, call.func.id))
        body.append(cell("markdown", text_before(i), f"live-{k}-text"))
        body.append(with_view(c, cell("code", source.strip(), f"live-{k}-explorer")))
    if not any(c["id"].endswith(("-explorer", "-your-turn")) for c in body):
        sys.exit(f"{path.name}: no explorer or your-turn cells that run without torch")
    cells = [title_cell(number, title, page, explorers=any(c["id"].endswith("-explorer") for c in body))]
    if used:  # what the explorer and your-turn cells use without importing it
        read = set().union(*(free_names(c["source"]) for c in body if c["cell_type"] == "code"))
        spare = {alias for taken in used.values() for _, alias in taken} - read
        cells.append(cell("code", "\n".join(import_lines(used, spare)), "live-imports"))
    cells += body
    return {"cells": cells, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}


def solution(path: Path, name: str) -> str:
    """The answer to the your-turn cell `name` of lesson `path` (solutions/your_turn/), or ''."""
    answers = ROOT / "solutions" / "your_turn" / f"{path.stem}.py"
    blocks = re.split(r"(?m)^# %% your_turn: (\w+)\n", answers.read_text()) if answers.exists() else []
    return dict(zip(blocks[1::2], blocks[2::2], strict=True)).get(name, "")


def your_turn_cells(path: Path, source: str, bindings: dict, text: str, page: str, used: dict) -> list[dict]:
    """A your-turn cell and its text; the lesson's imports of what it reads go into `used`. One line
    saying why instead when it needs torch."""
    name = YOUR_TURN_NAME.match(source.strip())
    if not name:
        sys.exit(f"{path.name}: a cell tagged {YOUR_TURN_TAG!r} does not start with '# Your turn (name)'")
    name = name[1]
    wanted = free_names(source) | free_names(solution(path, name))  # what a right answer reads too
    missing = sorted(n for n in wanted if n not in bindings)
    if missing:
        sys.exit(f"{path.name}: your-turn cell {name} reads {missing}, which no cell of the lesson before it imports")
    own = {a.name.split(".")[0] if isinstance(n, ast.Import) else n.module for n in ast.walk(ast.parse(source))
           if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    modules = {bindings[n][0] for n in wanted} | own
    if any(needs_torch(m) for m in modules):
        return [cell("markdown", (
            f"*The lesson's your-turn cell `{name}` is a step in PyTorch, which does not run in the browser: "
            f"write it in [the lesson]({page}) in JupyterLab.*"), f"live-{name}-skipped")]
    for n in sorted(wanted):
        module, imported, alias = bindings[n]
        used.setdefault(module, set()).add((imported, alias))
    used.setdefault("t5lesson.lessons.your_turn", set()).add(("hint", "hint"))
    return [cell("markdown", text, f"live-{name}-text"), cell("code", source.strip(), f"live-{name}-your-turn")]


def top_level_names(source: str) -> set[str]:
    """Names a cell defines for the cells after it: its functions, classes and assigned names."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def carried_cell(path: Path, cell_id: str, source: str, bindings: dict, body: list[dict], used: dict) -> dict:
    """A cell tagged CARRIED_TAG, as it is; the lesson's imports of what it reads (and the live
    notebook's cells above do not define) go into `used`."""
    defined = set().union(*(top_level_names(c["source"]) for c in body if c["cell_type"] == "code"))
    wanted = free_names(source) - defined
    missing = sorted(n for n in wanted if n not in bindings)
    if missing:
        sys.exit(f"{path.name}: the cell tagged {CARRIED_TAG!r} ({cell_id}) reads {missing}, which neither the "
                 "lesson's imports nor the live cells above it define")
    if any(needs_torch(bindings[n][0]) for n in wanted):
        sys.exit(f"{path.name}: the cell tagged {CARRIED_TAG!r} ({cell_id}) needs torch; it cannot run in the browser")
    for n in sorted(wanted):
        module, imported, alias = bindings[n]
        used.setdefault(module, set()).add((imported, alias))
    return cell("code", source.strip(), f"live-{cell_id}-carried")


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
