"""Run what the live site runs, without torch, on whatever numpy/matplotlib this Python has.

    PYTHONPATH=. python tests/live_kernel_check.py     # prints one JSON line; exit 1 on any failure

tests/test_live.py runs it with the course's venv (the course's pins) and, where it exists, with
a venv holding Pyodide's own versions (numpy 2.0.2, matplotlib 3.8.4: `python book/live.py pins`).
torch and transformers are made unimportable first, as in the browser. Then: every code cell of
every live notebook (book/live/notebooks/); every explorer they show, moved to each end of each
slider and to each toggle's other choices, its picture checked to change; every your-turn cell
filled once with its answer (solutions/your_turn/: it must say it matches) and once with a wrong
one (it must say it differs); and exercises 1 to 5 answered with the solutions' code, every
check() verdict read (all must be "Correct").
"""
from __future__ import annotations

import ast
import contextlib
import importlib.abc
import io
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))  # live_notebooks: the answers of the your-turn cells
BLOCKED = ("torch", "transformers")
EXERCISES = ("01_unscaled_scores", "02_where_sqrt_d_went", "03_relative_position_buckets", "04_bias_heatmaps",
             "05_length_generalisation")


def your_turn_answers(notebook: Path, cell: dict) -> tuple[str, str, str]:
    """(name, right, wrong) for a live notebook's your-turn cell: the answer in solutions/your_turn/,
    and the stub with its `raise NotImplementedError` turned into `return 0.0` (never the course's result)."""
    import live_notebooks

    name = cell["id"].removeprefix("live-").removesuffix("-your-turn")
    right = live_notebooks.solution(notebook, name)
    wrong = re.sub(r"raise NotImplementedError\(.*\)", "return 0.0", cell["source"])
    assert right and wrong != cell["source"], f"{notebook.name} {name}: no answer, or no stub to make wrong"
    return name, right, wrong


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not available in the browser")
        return None


def run_cell(source: str, namespace: dict):
    """Execute a cell like a kernel: the value of its last expression is returned."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace) if last else None


def move_every_control(explorer) -> list[str]:
    """Problems found moving each control of `explorer` away from its default (picture must change)."""
    problems, name = [], type(explorer).__name__
    for p in explorer.params:
        if not p.shown:
            continue
        if p.options is not None:
            targets = [o for o in p.options if o != p.default]
        elif isinstance(p.default, bool):
            targets = [not p.default]
        elif p.stops is not None:
            targets = [s for s in (p.stops[0], p.stops[-1]) if s != p.default]
        else:
            targets = [v for v in (p.min, p.max) if v != p.default]
        for value in targets:
            before = explorer.to_png()
            explorer.update(**{p.name: value})
            if explorer.to_png() == before:
                problems.append(f"{name}: the picture did not change with {p.name}={value!r}")
        explorer.update(**{p.name: p.default})
    return problems


def your_turn_problems(path: Path, cell: dict, namespace: dict, said: dict) -> list[str]:
    """Run a your-turn cell right and wrong (your_turn_answers); what it printed goes into `said`."""
    name, right, wrong = your_turn_answers(path, cell)
    problems = []
    for kind, source, word in (("wrong", wrong, "differs"), ("right", right, "matches")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run_cell(source, namespace)
        said[f"{path.name}:{name}:{kind}"] = out.getvalue().strip()
        if not out.getvalue().startswith(f"{name}: {word}"):
            problems.append(f"{path.name}: your-turn {name} answered {kind} said {out.getvalue()!r}")
    return problems


def main() -> int:
    sys.meta_path.insert(0, _NoTorch())
    import matplotlib

    matplotlib.use("agg")
    import numpy

    from t5lesson.explorers.base import Explorer

    result = {"python": sys.version.split()[0], "numpy": numpy.__version__, "matplotlib": matplotlib.__version__,
              "explorers": [], "verdicts": {}, "your_turn": {}, "problems": []}
    for path in sorted((ROOT / "book" / "live" / "notebooks").glob("*.ipynb")):
        namespace = {"__name__": "__main__"}
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                value = run_cell("".join(cell["source"]), namespace)
            except Exception as e:  # noqa: BLE001 (reported, as the browser would show it)
                result["problems"].append(f"{path.name}: {type(e).__name__}: {e}")
                continue
            if isinstance(value, Explorer):
                result["explorers"].append(f"{path.name}:{type(value).__name__}")
                result["problems"] += [f"{path.name}: {p}" for p in move_every_control(value)]
            if cell["id"].endswith("-your-turn"):
                result["problems"] += your_turn_problems(path, cell, namespace, result["your_turn"])
    import __main__

    for name in EXERCISES:
        solution = json.loads((ROOT / "solutions" / f"{name}.ipynb").read_text())
        namespace = __main__.__dict__  # check() reads the learner's answers from __main__
        for cell in solution["cells"]:
            if cell["cell_type"] != "code":
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                try:
                    run_cell("".join(cell["source"]), namespace)
                except Exception as e:  # noqa: BLE001
                    result["problems"].append(f"{name}: {type(e).__name__}: {e}")
            for line in out.getvalue().splitlines():
                match = re.match(r"(q\d+): (\w+)", line)
                if match:
                    result["verdicts"][f"{name}:{match[1]}"] = match[2]
    from t5lesson import exercises

    # free text is never marked by check(): it shows the rubric (or "Not attempted" with no saved notebook)
    free = {f"{e}:{q.id}" for e in EXERCISES for q in exercises.get(e).questions if not q.auto_scored}
    result["problems"] += [f"{q}: {v}" for q, v in result["verdicts"].items()
                           if v != "Correct" and not (q in free and v in ("Not", "Submitted"))]
    result["torch_imported"] = any(m.split(".")[0] in BLOCKED for m in sys.modules)
    print(json.dumps(result))
    return 1 if result["problems"] or result["torch_imported"] else 0


if __name__ == "__main__":
    sys.exit(main())
