"""The private folders of one batch: job folders, kernels' homes, their socket folders.

`work_area()` makes them (readable by the grader only, or passable where a kernel's own user id
must reach its home) and removes them at the end, unless T5LESSON_GRADE_KEEP is set to debug
the grader. The socket folders live where a Unix socket's path stays short enough. Whatever a
kernel left in them, their removal never raises (`sandbox.resources.remove_quietly`).
"""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import GradingError
from ..sandbox.resources import remove_quietly

__all__ = ["work_area", "keep_run_folders", "SOCKET_PATH_MAX"]

SOCKET_PATH_MAX = 107 - len("/tmpXXXXXXXX/k-65535")  # a Unix socket's path is at most 107 bytes


def keep_run_folders() -> bool:
    """T5LESSON_GRADE_KEEP set: leave every run folder in place, to debug the grader itself."""
    return bool(os.environ.get("T5LESSON_GRADE_KEEP"))


def _socket_folder() -> Path:
    """A private folder for the kernels' socket folders, with a path short enough for Unix sockets."""
    for base in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if os.path.isdir(base) and len(os.fsencode(base)) + len("/t5ipc-XXXXXXXX") <= SOCKET_PATH_MAX:
            try:
                folder = Path(tempfile.mkdtemp(prefix="t5ipc-", dir=base))
            except OSError:
                continue
            os.chmod(folder, 0o711)
            return folder
    raise GradingError("no folder with a path short enough for the kernels' sockets (set TMPDIR to a short path)")


@contextmanager
def work_area():
    """(work folder, socket folder): the run's private folders, removed at the end."""
    work = Path(tempfile.mkdtemp(prefix="t5grade-"))
    ipc_root = None
    try:
        os.chmod(work, 0o711)
        (work / "jobs").mkdir(mode=0o700)
        (work / "scratch").mkdir(mode=0o711)
        ipc_root = _socket_folder()
        (work / "ipc").symlink_to(ipc_root)
        yield work, ipc_root
    finally:
        if not keep_run_folders():
            for folder in (work, ipc_root):
                if folder is None:
                    continue
                try:
                    remove_quietly(folder)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # logged, never raised: the batch's reports come first
                    print(f"t5grade: could not remove {folder}: {type(exc).__name__}", file=sys.stderr)
