"""The package's rooms and who may import whom: core <- lessons <- lengthgen <- explorers, and grading.

Read from the source (imports, relative ones included), so it costs no imports. The only
upward imports are the two shims `t5lesson.check` and `t5lesson.grade`, kept for notebooks and
commands from before the split.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "t5lesson"
ROOMS = ("lessons", "explorers", "lengthgen", "grading")
ALLOWED = {
    "core": {"core"},
    "lessons": {"core", "lessons"},
    "lengthgen": {"core", "lessons", "lengthgen"},
    "explorers": {"core", "lessons", "lengthgen", "explorers"},
    "grading": {"core", "lengthgen", "grading"},
}
SHIMS = {"t5lesson.check", "t5lesson.grade"}


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            targets |= {c for c in candidates if c in modules and c != name}
        graph[name] = targets
    return graph


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in ROOMS else "core"


def test_rooms_import_only_downward():
    wrong = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets
                   if room(b) not in ALLOWED[room(a)] and a not in SHIMS)
    assert not wrong, wrong


def test_no_import_cycles():
    graph, state, cycles = import_graph(), {}, []

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, cycles


def test_top_folder_holds_only_the_core_and_the_shims():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "_validate", "_moved", "buckets", "bias", "scores", "layer", "saturation",
                   "reference", "pretrained", "perturbation", "seq2seq", "check", "grade"}
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")} == set(ROOMS)
