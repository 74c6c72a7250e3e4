"""pytest imports test files by basename (no __init__.py in tests/), so two files with one name stop the run."""
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_file_has_its_own_name():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]
