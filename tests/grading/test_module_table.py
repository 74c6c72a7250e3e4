"""docs/grading.md's module table has one row for every module of the engine and of the exercises, and no other."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_has_a_row_and_every_row_a_module():
    docs = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    table = docs.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`((?:grading|exercises)/[\w/]+\.py)`", table))
    modules = {p.relative_to(ROOT / "t5lesson").as_posix()
               for folder in ("grading", "exercises") for p in (ROOT / "t5lesson" / folder).rglob("*.py")
               if p.name != "__init__.py" and not re.fullmatch(r"ex\d\d_\w+\.py", p.name)}
    assert len(modules) > 30  # the walk sees the engine
    assert not modules - named, f"add a row to docs/grading.md's module table for: {sorted(modules - named)}"
    assert not named - modules, f"these rows name no module: {sorted(named - modules)}"
