"""What is in the submissions folder: every entry gets a row, or a line saying why it has none.

`survey(folder)` walks it without following links and without ever blocking: each regular
`*.ipynb` is an `Entry` with a safe student id; everything else is `Skipped`, with the reason.
`read(entry, max_bytes)` reads a submission's bytes once, without blocking on a FIFO, opening it
one folder at a time without following links and refusing any folder or file that is not the one
the survey saw (device and inode). See docs/grading.md, "Grading a class" and its step 1.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path

from ..verdict import Skipped

MAX_ID = 100  # characters of a student id; longer ones are cut and given a hash suffix
SUFFIX = ".ipynb"
Identity = tuple[int, int]  # (st_dev, st_ino) of a file or folder, as the survey saw it


@dataclass(frozen=True)
class Entry:
    """One submission: its path, its path inside the folder (as text) and its student id; and, from
    the survey, the folder it was found under (`root`), the names on the way (`parts`, the file's
    last) and the identity of the root, of each folder on the way and of the file (`identities`)."""

    path: Path
    relative: str
    student: str
    root: Path | None = None
    parts: tuple[str, ...] = ()
    identities: tuple[Identity, ...] = ()


def _text(name: str) -> str:
    """A file name as printable text: undecodable bytes as \\xNN; control characters, and format
    characters (zero-width spaces, direction overrides, ...), as ?."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)


def _identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino)


def student_id(relative: str) -> str:
    """A student id for a path inside the folder (without .ipynb): printable, at most MAX_ID characters."""
    text = _text(relative[: -len(SUFFIX)] if relative.endswith(SUFFIX) else relative) or "student"
    if len(text) > MAX_ID:
        digest = hashlib.sha256(os.fsencode(relative)).hexdigest()[:10]
        text = f"{text[: MAX_ID - 12]}~{digest}"
    return text


def survey(folder: Path) -> tuple[list[Entry], list[Skipped]]:
    """(submissions, skipped entries) of the folder, both sorted by path (see module doc)."""
    found: list[Entry] = []
    skipped: list[Skipped] = []
    taken: set[str] = set()
    top = Path(os.path.abspath(folder))

    def walk(directory: Path, prefix: str, parts: tuple[str, ...] = (), seen: tuple[Identity, ...] = ()) -> None:
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
                info = child.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(shown, f"could not be examined ({exc.strerror or exc})"))
                continue
            if child.name.startswith("."):
                skipped.append(Skipped(shown, "hidden (its name starts with a dot)"))
            elif stat.S_ISLNK(info.st_mode):
                skipped.append(Skipped(shown, "a symbolic link: links are not followed"))
            elif stat.S_ISDIR(info.st_mode):
                walk(Path(child.path), relative + "/", (*parts, child.name), (*seen, _identity(info)))
            elif not stat.S_ISREG(info.st_mode):
                skipped.append(Skipped(shown, "not a regular file (a FIFO, socket or device)"))
            elif not child.name.endswith(SUFFIX):
                skipped.append(Skipped(shown, f"not a notebook (the name does not end in {SUFFIX})"))
            else:
                base = student_id(relative)  # two names that read the same once made safe: ~2, ~3, ...
                student = next(s for s in chain([base], (f"{base}~{n}" for n in count(2))) if s not in taken)
                taken.add(student)
                found.append(Entry(Path(child.path), shown, student, top, (*parts, child.name),
                                   (*seen, _identity(info))))

    try:
        root = (_identity(os.stat(folder)),)
    except OSError:
        root = ()
    walk(folder, "", (), root)
    return found, skipped


@dataclass(frozen=True)
class Unreadable:
    """Why a submission's file could not be read; `too_large` when it is over the size limit."""

    reason: str
    too_large: bool = False


TOO_LARGE = Unreadable("larger than the limit", too_large=True)
CHANGED = Unreadable("the file or a folder on its path was replaced after the submissions folder was "
                     "surveyed (for example by a link); it was not read")
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_surveyed(entry: Entry) -> int | Unreadable:
    """An open descriptor of the entry's file, reached one name at a time from the surveyed root,
    each folder opened relative to its parent without following a link, each folder and the file
    checked against the identity the survey recorded; else why not (`CHANGED`)."""
    if entry.root is None or len(entry.identities) != len(entry.parts) + 1:
        return CHANGED
    fd = os.open(entry.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for depth, name in enumerate(entry.parts):
            if _identity(os.fstat(fd)) != entry.identities[depth]:
                return CHANGED
            try:
                child = os.open(name, _DIR_FLAGS if depth < len(entry.parts) - 1 else _FILE_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    return CHANGED
                raise
            os.close(fd)
            fd = child
        if _identity(os.fstat(fd)) != entry.identities[-1]:
            return CHANGED
        fd, opened = -1, fd
        return opened
    finally:
        if fd >= 0:
            os.close(fd)


def read(entry: Entry, max_bytes: int) -> bytes | Unreadable:
    """The file's bytes, or why they cannot be read (see module doc)."""
    try:
        fd = os.open(entry.path, _FILE_FLAGS) if entry.root is None else _open_surveyed(entry)
    except OSError as exc:
        return Unreadable(f"the file could not be opened ({exc.strerror or exc})")
    if isinstance(fd, Unreadable):
        return fd
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Unreadable("it is not a regular file")
        if info.st_size > max_bytes:
            return TOO_LARGE
        data = bytearray()
        while chunk := os.read(fd, 1 << 20):
            data += chunk
            if len(data) > max_bytes:
                return TOO_LARGE
        return bytes(data)
    except OSError as exc:
        return Unreadable(f"the file could not be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
