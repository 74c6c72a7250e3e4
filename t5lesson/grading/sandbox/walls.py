"""The isolation every kernel of one class shares: what it may see, what it must not, its user ids.

`class_walls` lists the folders a kernel's root never shows (the submissions, the reports, the
course's solutions and tests, the grader's run folder) and the paths it keeps (the Python
environment and the course package, minus anything hidden); `uids` gives each submission a user
id of its own when the grader is root; `check_isolation` refuses to grade where kernels cannot
be walled in. See docs/grading.md, "Isolation, honestly".
"""
from __future__ import annotations

import os
from pathlib import Path

from ..course import HIDDEN
from ..protocol import Walls
from . import launcher, namespaces

__all__ = ["UID_BASE", "uids", "class_walls", "check_isolation", "IsolationUnavailable"]

UID_BASE = 2_100_000_000  # far above any real user's id; each batch takes a block of 1,000 by its process id


def uids(count: int) -> list[int]:
    """A user id for each of `count` submissions (as root, each kernel runs as its own)."""
    base = UID_BASE + (os.getpid() % 20_000) * 1_000
    return [base + (i % 1_000) for i in range(count)]


class IsolationUnavailable(RuntimeError):
    """The kernels cannot be isolated here (and isolation was not turned off); the message says why."""


def check_isolation(isolation: str, uid: int) -> None:
    """Raise IsolationUnavailable unless kernels can be walled in here (or `isolation` is "none")."""
    reason = launcher.probe(uid) if isolation != "none" else None
    if reason:
        raise IsolationUnavailable(
            f"the kernels cannot be isolated here: {reason}. Without isolation a kernel can read the solutions and "
            "the other submissions and write the reports. Grade as root, or where unprivileged user namespaces "
            "are allowed; or, knowing that, pass --isolation none.")


def _inside(path: str, folders) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def class_walls(shown: list[str], root: Path, hide, as_root: bool) -> Walls:
    """What every kernel's root shows of the Python environment (`keep`, never inside a hidden folder) and the
    folders it must never show (`hide`: covered where one lies inside a kept path, a second line of defence)."""
    hidden = shown + [str(root / name) for name in HIDDEN] + [str(Path(h).resolve()) for h in hide]
    hidden = [h for h in dict.fromkeys(hidden) if os.path.isdir(h) and h != "/"]
    keep = [p for p in namespaces.needed_paths() if not _inside(os.path.realpath(p), hidden)]
    if not as_root:  # the kernel keeps the grader's user id: that user's own files are hidden too (Python kept)
        hidden.append(os.path.realpath(os.path.expanduser("~")))
    return Walls(hide=tuple(hidden), keep=tuple(keep))
