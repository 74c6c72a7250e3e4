"""The package's rooms and who may import whom: core <- common <- lessons <- lengthgen <- explorers; the grading
engine apart; the course's exercises on top of both.

Read from the source (imports, relative ones included), so it costs no imports. The engine
(`t5lesson/grading/`) knows no course: it imports nothing of t5lesson but itself and `_validate`.
The exercises (`t5lesson/exercises/`) import the engine and the core. The two composition roots,
`t5lesson.check` (the learner's import) and `t5lesson.grade` (the instructor's command), are the
only modules of the top folder that bind the engine to the exercises (the learner's one also
hands hint() the your-turn cells' hints).
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "t5lesson"
ROOMS = ("common", "lessons", "explorers", "lengthgen", "grading", "exercises")
ALLOWED = {
    "core": {"core"},
    "common": {"core", "common"},
    "lessons": {"core", "common", "lessons"},
    "lengthgen": {"core", "common", "lessons", "lengthgen"},
    "explorers": {"core", "common", "lessons", "lengthgen", "explorers"},
    "grading": {"grading"},
    "exercises": {"core", "common", "lessons", "lengthgen", "grading", "exercises"},
}
ENGINE_MAY_IMPORT = {"t5lesson._validate"}  # the one core module the engine uses
ROOTS = {"t5lesson.check", "t5lesson.grade"}  # the composition roots: engine + exercises


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


def _allowed(a: str, b: str) -> bool:
    if a in ROOTS:
        return room(b) in {"core", "grading", "exercises"} or b == "t5lesson.lessons.your_turn"
    if room(a) == "grading":
        return room(b) == "grading" or b in ENGINE_MAY_IMPORT
    return room(b) in ALLOWED[room(a)]


def test_rooms_import_only_downward():
    wrong = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets if not _allowed(a, b))
    assert not wrong, wrong


def test_the_engine_imports_no_course():
    """Not the exercises, not the core, not lessons or lengthgen: the engine is handed an Exercise."""
    graph = import_graph()
    engine = [m for m in graph if room(m) == "grading"]
    assert len(engine) > 20
    wrong = sorted(f"{a} -> {b}" for a in engine for b in graph[a]
                   if room(b) != "grading" and b not in ENGINE_MAY_IMPORT)
    assert not wrong, wrong
    assert _allowed("t5lesson.grading.batch", "t5lesson._validate")
    assert not _allowed("t5lesson.grading.batch", "t5lesson.exercises")  # the rule can fail
    assert not _allowed("t5lesson.grading.check", "t5lesson.buckets")


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


def test_top_folder_holds_only_the_core_and_the_composition_roots():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "_validate", "buckets", "bias", "scores", "layer", "saturation",
                   "reference", "perturbation", "seq2seq", "flex", "check", "grade"}
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")} == set(ROOMS)
