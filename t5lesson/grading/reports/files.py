"""Writing report files: atomically, with names and CSV cells that are safe wherever they are opened.

A student id becomes a file name (`safe_name`) and a CSV cell a spreadsheet shows as text, never
as a formula (`csv_cell`, `csv_text`); every report file appears whole or not at all
(`atomic_write`). See docs/grading.md, "Grading a class".
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import tempfile
from pathlib import Path

__all__ = ["safe_name", "csv_cell", "csv_text", "atomic_write"]


def safe_name(student: str) -> str:
    """A file name for a student id: letters, digits, dot, dash, underscore only; at most 100 characters."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", student.replace("/", "__")).strip("._") or "student"
    if len(name) > 100:
        name = f"{name[:88]}-{hashlib.sha256(student.encode('utf-8', 'backslashreplace')).hexdigest()[:10]}"
    return name


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A CSV field a spreadsheet shows as text: a leading =, +, -, @, tab or CR gets a ' before it.

    Numbers stay numbers (points are never negative); student ids and answers are text.
    """
    text = str(value)
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def csv_text(header: list[str], rows) -> str:
    """A CSV table (header, then rows) whose every cell is spreadsheet-safe (`csv_cell`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buffer.getvalue()


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (a temporary file beside it, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
