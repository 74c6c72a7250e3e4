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
import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

# Terminal escape sequences (CSI "ESC [ ... final", OSC "ESC ] ... BEL or ESC \\", the other
# two-character escapes, and their 8-bit forms): removed whole, not just their ESC byte.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x9b[0-?]*[ -/]*[@-~]?"
                      r"|(?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
                      r"|\x1b[ -~]?")
_LINE_BREAKS = re.compile("\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")


def inert(text: object, multiline: bool = False) -> str:
    """Text from a submission or a kernel, safe to write anywhere: no escape sequences, no control,
    format or direction characters; line breaks become "\\n" and tabs stay where the field is
    `multiline` (an answer's indentation), both become spaces where it is not. The same text again
    gives the same result."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    text = _LINE_BREAKS.sub("\n" if multiline else " ", _ESCAPES.sub("", text))
    keep = "\n\t" if multiline else ""  # control (Cc), format (Cf: zero-width, direction) and surrogates go
    text = text if multiline else text.replace("\t", " ")
    return "".join(c for c in text if c in keep or unicodedata.category(c) not in ("Cc", "Cf", "Cs"))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*<>\[\]|])")


def md_text(text: object) -> str:
    """One line of submission text as Markdown shows it, never as Markdown structure: `inert`, on
    one line, with the characters that make links, images, HTML, code and emphasis escaped, and a
    backslash before a first character that could start a heading, a quote or a list."""
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", inert(text))
    text = re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
    return f"\\{text}" if text[:1] in ("#", ">", "+", "=", "~", "-") else text


def code_span(text: object) -> str:
    """A Markdown code span holding `text` (made `inert`, on one line) exactly: its fence is one
    backtick longer than the longest run of backticks inside, so none can end it early."""
    text = inert(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def safe_name(student: str) -> str:
    """A file name for a student id: letters, digits, dot, dash, underscore only; at most 100 characters."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", student.replace("/", "__")).strip("._") or "student"
    if len(name) > 100:
        name = f"{name[:88]}-{hashlib.sha256(student.encode('utf-8', 'backslashreplace')).hexdigest()[:10]}"
    return name


def safe_names(ids: Iterable[str]) -> list[str]:
    """`safe_name` of each id, in order; a name made again gets -2, -3, ... so that no file is written twice."""
    seen: Counter[str] = Counter()
    names: list[str] = []
    for name in map(safe_name, ids):
        seen[name] += 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """A CSV field a spreadsheet shows as text: a leading =, +, -, @, tab or CR gets a ' before it,
    and so does a leading ', so that `uncell` can always tell the value back. Made `inert` (line
    breaks kept: a quoted field may span lines; the caller makes single-line fields so). Points are
    never negative, so numbers stay numbers."""
    text = inert(value, multiline=True)
    return f"'{text}" if text.startswith(_FORMULA_START) or text.startswith("'") else text


def uncell(text: str) -> str:
    """The value behind a `csv_cell` field: exactly one leading ' removed, if there is one."""
    return text[1:] if text.startswith("'") else text


def csv_text(header: list[str], rows: Iterable[Iterable[object]]) -> str:
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
        Path(tmp).unlink(missing_ok=True)
        raise
