"""No engine function has more than 20 branches (if, for, while, except, conditional expressions,
comprehensions and each extra operand of and/or), counted from the source with ast."""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "t5lesson" / "grading"
MAX_BRANCHES = 20


def branches(function: ast.AST) -> int:
    count = 0
    for node in ast.walk(function):
        if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.comprehension,
                             ast.IfExp)):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def engine_functions() -> dict[str, int]:
    found = {}
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[f"{path.relative_to(ENGINE).as_posix()}:{node.name}"] = max(
                    branches(node), found.get(f"{path.relative_to(ENGINE).as_posix()}:{node.name}", 0))
    return found


def test_no_engine_function_over_the_bar():
    found = engine_functions()
    assert len(found) > 300  # the walk sees the whole engine, subpackages included
    over = {name: n for name, n in found.items() if n > MAX_BRANCHES}
    assert not over, f"over {MAX_BRANCHES} branches (split them into named steps): {over}"


def test_the_count_sees_branches():
    tree = ast.parse("def f(x):\n    if x and x > 1 or x < -1:\n        return [y for y in x if y]\n"
                     "    for i in x:\n        pass\n    try:\n        pass\n    except ValueError:\n        pass\n")
    assert branches(tree.body[0]) == 6  # if, 2 extra operands of and/or, comprehension, for, except
