"""Mutants of a course answer, made mechanically: each changes one thing a slip could change.

The operators: an arithmetic operator swapped (+ -, * /, // /, @ *), a comparison loosened or
flipped (< <=, > >=, == !=), an integer constant moved by one, a sign dropped or added, the two
first arguments of a call swapped, a term of a sum or product dropped, an axis or dim keyword
changed, a `min`/`max` swapped. Each mutant is the answer's source with one node changed, so it
reads like a slip; the harness keeps only those that differential testing proves wrong.
"""
from __future__ import annotations

import ast
import copy
import random
from collections.abc import Iterator

SWAP_BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.FloorDiv: ast.Div, ast.MatMult: ast.Mult, ast.Pow: ast.Mult}
SWAP_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                ast.NotEq: ast.Eq}
AXIS_WORDS = {"axis", "dim"}


def _edits(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(what changed, the replacement node) for every single change of `node` itself."""
    if isinstance(node, ast.BinOp) and type(node.op) in SWAP_BINARY:
        yield f"{type(node.op).__name__} -> {SWAP_BINARY[type(node.op)].__name__}", \
            ast.BinOp(node.left, SWAP_BINARY[type(node.op)](), node.right)
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            yield "right term dropped", node.left
            if isinstance(node.op, (ast.Add, ast.Mult)):
                yield "left term dropped", node.right
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAP_COMPARE:
        yield f"{type(node.ops[0]).__name__} -> {SWAP_COMPARE[type(node.ops[0])].__name__}", \
            ast.Compare(node.left, [SWAP_COMPARE[type(node.ops[0])]()], node.comparators)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        yield f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1)
        yield f"{node.value} -> {node.value - 1}", ast.Constant(node.value - 1)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield "sign dropped", node.operand
    if isinstance(node, ast.Call):
        if len(node.args) >= 2:
            args = [node.args[1], node.args[0], *node.args[2:]]
            yield "first two arguments swapped", ast.Call(node.func, args, node.keywords)
        for k, word in enumerate(node.keywords):
            if word.arg in AXIS_WORDS and isinstance(word.value, (ast.Constant, ast.UnaryOp)):
                value = ast.literal_eval(word.value)
                if isinstance(value, int):
                    keywords = list(node.keywords)
                    keywords[k] = ast.keyword(word.arg, ast.Constant(value - 1 if value != 0 else 1))
                    yield f"{word.arg}={value} changed", ast.Call(node.func, node.args, keywords)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            other = "max" if node.func.id == "min" else "min"
            yield f"{node.func.id} -> {other}", ast.Call(ast.Name(other, ast.Load()), node.args, node.keywords)


class _Replace(ast.NodeTransformer):
    def __init__(self, target: int, replacement: ast.AST):
        self.target, self.replacement, self.seen = target, replacement, -1

    def generic_visit(self, node):
        self.seen += 1
        if self.seen == self.target:
            return self.replacement
        return super().generic_visit(node)


def _numbered(tree: ast.AST) -> list[ast.AST]:
    """The nodes in the order _Replace's walk meets them."""
    order = []

    class Walk(ast.NodeVisitor):
        def generic_visit(self, node):
            order.append(node)
            super().generic_visit(node)

    Walk().visit(tree)
    return order


def mutants(source: str, functions: tuple[str, ...] = (), limit: int = 40, seed: int = 0) -> dict[str, str]:
    """label -> mutated source, at most `limit` of them (a fixed sample when there are more).

    Only nodes inside the functions named in `functions` (all functions when empty) are changed;
    docstrings and the your-turn call line are left alone.
    """
    tree = ast.parse(source)
    nodes = _numbered(tree)
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (not functions or node.name in functions):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            inside |= {id(inner) for statement in body for inner in ast.walk(statement)}
    made: dict[str, str] = {}
    for number, node in enumerate(nodes):
        if id(node) not in inside:
            continue
        for what, replacement in _edits(node):
            changed = _Replace(number, copy.deepcopy(replacement)).visit(copy.deepcopy(tree))
            try:
                text = ast.unparse(ast.fix_missing_locations(changed))
            except Exception:  # noqa: BLE001 - a change that makes no valid Python is no mutant
                continue
            line = getattr(node, "lineno", "?")
            made.setdefault(f"mutant: line {line}, {what}", text)
    if len(made) > limit:
        keep = sorted(random.Random(seed).sample(sorted(made), limit))
        made = {label: made[label] for label in keep}
    return made
