"""Every file of the package that is not Python (a template, a script, stored results) is package data,
so `pip install .` ships it: the grader reads its templates and scripts from the installed package."""
from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer
ROOT = Path(__file__).resolve().parents[1]


def test_every_file_of_the_package_that_is_not_python_is_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = [p for p in (ROOT / "t5lesson").rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert files
    shipped = []
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        for package, patterns in globs.items():
            folder = package.replace(".", "/") + "/"
            if relative.startswith(folder) and any(fnmatch.fnmatch(relative[len(folder):], p) for p in patterns):
                shipped.append(relative)
                break
    assert shipped == [p.relative_to(ROOT).as_posix() for p in files]
