"""docs/checks.md's table lists every check with the counts of wrong and right answers it is tried on."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_matches_the_catalogue():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "check_table.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr or result.stdout
