"""No docstring or comment in the package states how fast something ran ("4 ms", "0.5-1 s").

A timing is a measurement of one machine on one day: it goes stale without anyone noticing. The
*why* stays in the docstring; the *how fast* is printed by a script in benchmarks/, which anyone
can rerun. Read with ast (docstrings) and tokenize (comments), so code and the strings a
program prints are not looked at.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "t5lesson"
TIMING = re.compile(r"(?<![\w.])\d+(\.\d+)?(\s?[-–]\s?\d+(\.\d+)?)?\s?(ms|µs|us|s|sec|seconds|min|minutes)\b")
# (file, function) whose docstring may show durations: examples of the format it writes, not measurements.
ALLOWED: dict[tuple[str, str], str] = {}

def docstrings(tree: ast.AST):
    """(line, owner, docstring) of the module (owner ""), each class and each function."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield node.body[0].lineno, getattr(node, "name", ""), text


def comments(source: str):
    """(line, "", comment) of every `#` comment."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], "", token.string


def timings(path: Path, allowed_owners=frozenset()) -> list[tuple[int, str]]:
    """(line, matched text) of each timing in the file's docstrings and comments."""
    source = path.read_text(encoding="utf-8")
    found = []
    for line, owner, text in [*docstrings(ast.parse(source)), *comments(source)]:
        if owner not in allowed_owners:
            found += [(line, match.group(0)) for match in TIMING.finditer(text)]
    return found


def test_no_timing_in_a_docstring_or_comment():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100  # the walk sees the whole package, subpackages included
    found = []
    for path in files:
        name = path.relative_to(PACKAGE).as_posix()
        owners = {owner for file, owner in ALLOWED if file == name}
        found += [f"{name}:{line}: {text!r}" for line, text in timings(path, owners)]
    assert not found, ("timings in docstrings or comments (keep the why, move the how fast into what a "
                       f"benchmarks/*.py prints): {found}")


def test_the_allowlist_is_still_needed():
    """Each allowed docstring still exists and still holds a duration: no stale exemptions."""
    for file, owner in ALLOWED:
        path = PACKAGE / file
        assert timings(path) != timings(path, {owner}), f"{file}:{owner} needs no exemption any more"


def test_the_pattern_sees_timings_and_not_code():
    seen = [m.group(0) for m in TIMING.finditer("about 4 ms, 0.5-1 s, 11ms, 2 minutes, 30 seconds")]
    assert seen == ["4 ms", "0.5-1 s", "11ms", "2 minutes", "30 seconds"]
    assert not TIMING.search("lessons 1-3, 5 symbols, 3 steps, v1.2s, 64 buckets, q5 s")  # q5: no digit start
    source = 'def f():\n    """Sums."""\n    print("took 4 ms")  # the output, not a comment about speed\n'
    path = Path(__file__).with_name("_timing_probe.py")
    try:
        path.write_text(source, encoding="utf-8")
        assert timings(path) == []
        path.write_text(source.replace('"""Sums."""', '"""Sums, in 4 ms."""'), encoding="utf-8")
        assert timings(path) == [(2, "4 ms")]
    finally:
        path.unlink(missing_ok=True)


def test_engine_module_docstrings_are_short():
    """An engine module's docstring says what the module is for in a few lines and points to docs/grading.md."""
    engine = Path(__file__).resolve().parents[1] / "t5lesson" / "grading"
    long = {}
    for path in sorted(engine.rglob("*.py")):
        text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
        if len(text.strip("\n").splitlines()) > 8:
            long[path.relative_to(engine).as_posix()] = len(text.strip("\n").splitlines())
    assert not long, f"module docstrings over 8 lines (move the explanation into docs/grading.md): {long}"
