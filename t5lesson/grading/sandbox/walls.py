"""The isolation every kernel of one class shares: what it may see, what it must not, its user ids.

`class_walls` lists the folders a kernel's root never shows (the submissions, the reports, the
course's solutions and tests, the grader's run folder) and the paths it keeps (the Python
environment and the course package, minus anything hidden); `uids` gives each submission a user
id of its own when the grader is root, from a block that no other run on the machine holds;
`check_isolation` refuses to grade where kernels cannot be walled in. See docs/grading.md,
"Isolation, honestly".
"""
from __future__ import annotations

import fcntl
import functools
import os
from collections.abc import Iterable
from pathlib import Path

from ..course import HIDDEN
from ..protocol import Walls
from . import namespaces

UID_BASE, BLOCK, BLOCKS = 2_100_000_000, 1_000, 20_000  # far above any real user's id: 20,000 blocks of 1,000
LOCKS = "/run/t5grade-uids"  # the blocks' lock files (only root takes a block)


def _first_block() -> int:
    """Where this process starts looking for a free block of user ids."""
    return os.getpid() % BLOCKS


def reserve(start: int) -> tuple[int, int]:
    """(block, lock) for the first free block of user ids from `start` on: the lock, an open file descriptor with
    an exclusive lock on the block's file, holds it until it is closed (at the latest when this process and its
    children exit). Two runs on one machine never share a user id, nor its per-user process limit. As a normal
    user, whose kernels keep that user's id: (start, -1)."""
    if os.geteuid() != 0:
        return start, -1
    os.makedirs(LOCKS, mode=0o700, exist_ok=True)
    for k in range(BLOCKS):
        block = (start + k) % BLOCKS
        fd = os.open(os.path.join(LOCKS, f"{block}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return block, fd
        except BlockingIOError:
            os.close(fd)
    raise IsolationUnavailable("no free block of kernel user ids: every one is held by another grading run")


@functools.cache
def _block() -> int:
    """This process's block of user ids, reserved for it alone until it exits (its lock is never closed)."""
    return reserve(_first_block())[0]


def uids(count: int) -> list[int]:
    """A user id for each of `count` submissions (as root, each kernel runs as its own), from this process's block."""
    base = UID_BASE + _block() * BLOCK
    return [base + (i % BLOCK) for i in range(count)]


class IsolationUnavailable(RuntimeError):
    """The kernels cannot be isolated here (and isolation was not turned off); the message says why."""


def check_isolation(isolation: str, uid: int) -> None:
    """Raise IsolationUnavailable unless kernels can be walled in here (or `isolation` is "none")."""
    if isolation != "none" and (reason := namespaces.probe(uid)):
        raise IsolationUnavailable(
            f"the kernels cannot be isolated here: {reason}. Without isolation a kernel can read the solutions and "
            "the other submissions and write the reports. Grade as root, or where unprivileged user namespaces "
            "are allowed; or, knowing that, pass --isolation none.")


def class_walls(shown: list[str], root: Path, hide: Iterable[str | os.PathLike[str]], as_root: bool) -> Walls:
    """What every kernel's root shows of the Python environment (`keep`, never inside a hidden folder) and the
    folders it must never show (`hide`: covered where one lies inside a kept path, a second line of defence)."""
    hidden = shown + [str(root / name) for name in HIDDEN] + [str(Path(h).resolve()) for h in hide]
    hidden = [h for h in dict.fromkeys(hidden) if os.path.isdir(h) and h != "/"]
    keep = [p for p in namespaces.needed_paths() if not namespaces.inside(os.path.realpath(p), hidden)]
    if not as_root:  # the kernel keeps the grader's user id: that user's own files are hidden too (Python kept)
        hidden.append(os.path.realpath(os.path.expanduser("~")))
    return Walls(hide=tuple(hidden), keep=tuple(keep))
