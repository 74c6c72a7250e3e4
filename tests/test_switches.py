"""README's table of the T5LESSON_* environment variables is complete and has no stale row.

Read as text from the code that can read a variable: the package, the tests, tools/, benchmarks/,
the book's scripts, the root conftest.py and .ci/run (prose in docs or notebooks does not count).
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\bT5LESSON_[A-Z0-9_]+")
CODE_FOLDERS = ("t5lesson", "tests", "tools", "benchmarks", "book")
CODE_FILES = ("conftest.py", ".ci/run")


def code_files() -> list[Path]:
    files = [path for folder in CODE_FOLDERS for path in (ROOT / folder).rglob("*.py")]
    return files + [ROOT / name for name in CODE_FILES if (ROOT / name).exists()]


def names_in_code() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in code_files():
        for name in NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    return found


def names_in_table() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Switches", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(T5LESSON_[A-Z0-9_]+)` \|", section, re.MULTILINE))


def test_every_switch_the_code_reads_is_in_the_table():
    in_code = names_in_code()
    assert len(in_code) >= 10  # the walk sees the code
    missing = {name: sorted(paths) for name, paths in in_code.items() if name not in names_in_table()}
    assert not missing, f"add these to README's Switches table (name, read by, what it does, default): {missing}"


def test_the_table_names_only_switches_that_exist():
    stale = names_in_table() - set(names_in_code())
    assert not stale, f"nothing reads these any more: remove their rows from README's Switches table: {stale}"


def test_every_file_a_row_names_mentions_its_switch():
    """The "read by" column follows the code when a module moves."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Switches", 1)[1].split("\n## ", 1)[0]
    stale = []
    for name, read_by in re.findall(r"^\| `(T5LESSON_[A-Z0-9_]+)` \| (.*?) \|", section, re.MULTILINE):
        for path in re.findall(r"`([\w./-]+\.(?:py|sh))`|`(\.ci/run)`", read_by):
            path = next(p for p in path if p)
            if not (ROOT / path).is_file() or name not in (ROOT / path).read_text(encoding="utf-8"):
                stale.append(f"{name}: {path}")
    assert not stale, f"these rows name a file that does not read the switch: {stale}"
