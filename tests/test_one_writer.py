"""Facts the package once wrote in two or three places have one writer each; a second one fails here.

Each fact is a pattern of its definition in the source and the one module allowed to hold it; the
others import it (the initial stds from `t5lesson.layer.init_stds`, the harvest's bounds from
`t5lesson.grading.harvest`).
"""
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "t5lesson"
FACTS = {
    "the initial std of W_q": (r"\*\s*[\w\[\]\"'.]*d_kv\W*\)\s*\*\*\s*-0\.5", "layer.py"),
    "the harvest's bound on list items": (r"^MAX_ITEMS\s*=", "grading/harvest.py"),
    "the harvest's bound on text": (r"^MAX_TEXT\s*=", "grading/harvest.py"),
    "slow cases per code question": (r"^MAX_SLOW_CASES\s*=|slow_cases\W.*_limit\(\d", "grading/harvest.py"),
}


@pytest.mark.parametrize("fact", list(FACTS))
def test_each_fact_has_one_writer(fact):
    pattern, owner = FACTS[fact]
    writers = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                     if re.search(pattern, p.read_text(encoding="utf-8"), re.MULTILINE))
    assert writers == [owner], f"{fact} is written in {writers}; write it in {owner} alone and import it"
