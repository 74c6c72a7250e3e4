"""What is in the submissions folder: every entry gets a row, or a line saying why it has none.

`survey(folder)` walks it without following links and without ever blocking: each regular
`*.ipynb` is an `Entry` with a safe student id; everything else is `Skipped`, with the reason.
`read(entry, max_bytes)` reads a submission's bytes once, without following links and without
blocking on a FIFO, and returns them or the reason in words. See docs/grading.md, "Grading a class".
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..verdict import Skipped

__all__ = ["Entry", "survey", "read", "student_id", "MAX_ID"]

MAX_ID = 100  # characters of a student id; longer ones are cut and given a hash suffix
SUFFIX = ".ipynb"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class Entry:
    """One submission: its path, its path inside the folder (as text) and its student id."""

    path: Path
    relative: str
    student: str


def _text(name: str) -> str:
    """A file name as printable text: undecodable bytes as \\xNN, control characters as ?."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return _CONTROL.sub("?", text)


def student_id(relative: str) -> str:
    """A student id for a path inside the folder (without .ipynb): printable, at most MAX_ID characters."""
    text = _text(relative[: -len(SUFFIX)] if relative.endswith(SUFFIX) else relative) or "student"
    if len(text) > MAX_ID:
        digest = hashlib.sha256(os.fsencode(relative)).hexdigest()[:10]
        text = f"{text[: MAX_ID - 12]}~{digest}"
    return text


def survey(folder: Path) -> tuple[list[Entry], list[Skipped]]:
    """(submissions, skipped entries) of the folder, both sorted by path (see module doc)."""
    entries: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []

    def walk(directory: Path, prefix: str) -> None:
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda e: os.fsencode(e.name))
        except OSError as exc:
            why = f"the folder could not be read ({exc.strerror or exc})"
            skipped.append(Skipped(_text(prefix.rstrip("/") or "."), why))
            return
        for child in children:
            relative = f"{prefix}{child.name}"
            shown = _text(relative)
            try:
                mode = child.stat(follow_symlinks=False).st_mode
            except OSError as exc:
                skipped.append(Skipped(shown, f"could not be examined ({exc.strerror or exc})"))
                continue
            if child.name.startswith("."):
                skipped.append(Skipped(shown, "hidden (its name starts with a dot)"))
            elif stat.S_ISLNK(mode):
                skipped.append(Skipped(shown, "a symbolic link: links are not followed"))
            elif stat.S_ISDIR(mode):
                walk(Path(child.path), relative + "/")
            elif not stat.S_ISREG(mode):
                skipped.append(Skipped(shown, "not a regular file (a FIFO, socket or device)"))
            elif not child.name.endswith(SUFFIX):
                skipped.append(Skipped(shown, f"not a notebook (the name does not end in {SUFFIX})"))
            else:
                entries.append((relative, Path(child.path)))

    walk(folder, "")
    found, taken = [], set()
    for relative, path in entries:
        student = student_id(relative)
        if student in taken:  # two names that read the same once made safe
            n = 2
            while f"{student}~{n}" in taken:
                n += 1
            student = f"{student}~{n}"
        taken.add(student)
        found.append(Entry(path, _text(relative), student))
    return found, skipped


@dataclass(frozen=True)
class Unreadable:
    """Why a submission's file could not be read; `too_large` when it is over the size limit."""

    reason: str
    too_large: bool = False


TOO_LARGE = Unreadable("larger than the limit", too_large=True)


def read(entry: Entry, max_bytes: int) -> bytes | Unreadable:
    """The file's bytes, or why they cannot be read."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(entry.path, flags)
    except OSError as exc:
        return Unreadable(f"the file could not be opened ({exc.strerror or exc})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Unreadable("it is not a regular file")
        if info.st_size > max_bytes:
            return TOO_LARGE
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                return TOO_LARGE
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        return Unreadable(f"the file could not be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
