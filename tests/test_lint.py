"""ruff over the package, tests, scripts and every notebook's code cells (settings in pyproject.toml)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    targets = [p for p in ("t5lesson", "tests", "benchmarks", "tools", "notebooks", "solutions") if (ROOT / p).exists()]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", *targets],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
