"""Limits that hold for a whole submission, not per process, and the clean-up after a kernel.

Memory (shared memory included) and processes are bounded by a cgroup (v2) per submission where the
grader may make one (`Cgroup`), else by the worker's watch on the kernel's process tree
(`tree_memory`); see docs/grading.md, "Memory of a whole submission". After a run the grader
kills the kernel's supervisor's group (`kill_group`): with isolation its PID namespace, and so
everything the kernel started, ends with it. Every run folder is removed by `remove_tree`.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import psutil

from ..protocol import Limits

__all__ = ["Cgroup", "tree_memory", "held_shared_memory", "descendants", "harvest_reserve", "kill_group",
           "remove_tree", "remove_quietly"]

ROOT = Path("/sys/fs/cgroup")


class Cgroup:
    """One submission's cgroup (v2): memory (with swap where it is accounted) and processes."""

    def __init__(self, path: Path):
        self.paths = [path]  # one folder, as LaunchConfig.cgroup names it

    @classmethod
    def create(cls, name: str, memory_bytes: int, max_processes: int) -> Cgroup | None:
        """A new cgroup with these limits, or None where none can be made (not root, no cgroup v2 hierarchy, or the
        memory and pids controllers not delegated to this process's cgroup)."""
        if os.geteuid() != 0 or not (ROOT / "cgroup.controllers").exists():
            return None
        try:
            own = [line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")]
            path = ROOT / own[0].lstrip("/") / name
            path.mkdir()
        except (OSError, IndexError):
            return None
        made = cls(path)
        try:
            (path / "memory.max").write_text(str(memory_bytes))
            (path / "pids.max").write_text(str(max_processes))
            if (path / "memory.swap.max").exists():  # where swap is accounted
                (path / "memory.swap.max").write_text("0")
        except OSError:
            made.remove()
            return None
        return made

    @classmethod
    def available(cls) -> bool:
        """Can a cgroup with a memory limit be made here (made and removed at once to find out)?"""
        group = cls.create(f"t5grade-probe-{os.getpid()}", 2 ** 30, 64)
        if group is None:
            return False
        group.remove()
        return True

    def went_over_memory(self) -> bool:
        """Did the memory limit kill a process of the submission?"""
        try:
            pairs = [line.split() for line in (self.paths[0] / "memory.events").read_text().splitlines()]
        except OSError:
            return False
        counts = {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
        return counts.get("oom_kill", 0) > 0 or counts.get("max", 0) > 0

    def remove(self) -> None:
        """Kill every process in the cgroup, then remove it."""
        for _ in range(40):
            try:
                for pid in (self.paths[0] / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
                self.paths[0].rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def kill_group(pid: int) -> bool:
    """SIGKILL the process group that `pid` leads; False when there was none to kill."""
    try:
        os.killpg(pid, signal.SIGKILL)
        return True
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """pid and every process below it."""
    try:
        return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


def _memory_of(pid: int) -> int:
    """Proportional set size of a process in bytes (0 once it is gone)."""
    try:
        return psutil.Process(pid).memory_full_info().pss
    except (psutil.Error, AttributeError):  # no pss where the kernel has no smaps
        return 0


TMPFS_MAGIC = 0x01021994  # statfs's f_type of tmpfs and shmem (memfd_create's files live there)


def _on_tmpfs(path: str) -> bool:
    """Does `path` (here a /proc/PID/fd link, followed) lie on a tmpfs? f_type is statfs's first field
    (os.statvfs has no f_type)."""
    buffer = ctypes.create_string_buffer(256)
    if ctypes.CDLL(None).statfs(os.fsencode(path), buffer) != 0:
        return False
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF == TMPFS_MAGIC


def held_shared_memory(pids: Iterable[int], exclude_devices: Iterable[int] = ()) -> int:
    """Bytes of the memory-backed files the processes `pids` hold open: every memfd, and every file of a
    tmpfs other than `exclude_devices` (the kernel's own size-limited one). Each file is counted once.

    Such a file's pages are memory, but no process's PSS counts them unless they are mapped. Read
    from /proc/PID/fd by hand: psutil's open_files leaves out memfds and deleted files.
    """
    excluded, sizes, tmpfs = set(exclude_devices), dict[tuple[int, int], int](), dict[int, bool]()
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            link = f"{folder}/{name}"
            try:
                target = os.readlink(link)
                info = os.stat(link)
            except OSError:
                continue
            if not target.startswith("/") or not stat.S_ISREG(info.st_mode) or info.st_dev in excluded:
                continue  # socket:[..], pipe:[..], anon_inode:.., or the kernel's own tmpfs
            if not target.startswith("/memfd:"):
                if info.st_dev not in tmpfs:
                    tmpfs[info.st_dev] = _on_tmpfs(link)
                if not tmpfs[info.st_dev]:
                    continue
            sizes[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return sum(sizes.values())


def tree_memory(pid: int, exclude_devices: Iterable[int] = ()) -> int:
    """Memory used by a process and all its descendants, in bytes: their PSS, and the memfd and tmpfs
    files they hold open (`held_shared_memory`; `exclude_devices`: the kernel's own tmpfs, bounded apart)."""
    pids = descendants(pid)
    return sum(_memory_of(p) for p in pids) + held_shared_memory(pids, exclude_devices)


def harvest_reserve(limits: Limits) -> float:
    """Seconds kept at the end of the notebook's budget for reading the answers: `harvest_timeout`, but never
    more than a quarter of the whole budget (which bounds the student's cells and the reading together)."""
    return min(limits.harvest_timeout, limits.notebook_timeout / 4)


def remove_tree(path: str | os.PathLike[str]) -> list[str]:
    """Remove `path` and everything in it; return what could not be removed (at most 100 lines). Never raises.

    A kernel may leave any tree behind: thousands of levels (Python 3.11's shutil.rmtree recurses and
    fails), folders without permissions, links. GNU `rm -rf` walks any depth, never follows a link and
    stays on one file system; `chmod -R u+rwx` first opens up the folders a normal user's kernel closed.
    """
    path = os.fspath(path)
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            subprocess.run(["chmod", "-R", "u+rwx", "--", path], capture_output=True, check=False)
        done = subprocess.run(["rm", "-rf", "--one-file-system", "--", path], capture_output=True, text=True,
                              errors="replace", check=False)
    except OSError as exc:
        return [f"rm {path}: {type(exc).__name__}: {exc}"]
    errors = done.stderr.splitlines()[:100]
    return errors or ([f"rm {path}: exit status {done.returncode}"] if done.returncode else [])


def remove_quietly(path: str | os.PathLike[str], log: TextIO | None = None) -> bool:
    """`remove_tree(path)`, with what went wrong as one line on `log` (stderr by default); True when all is gone."""
    errors = remove_tree(path)
    if errors:
        with contextlib.suppress(OSError, ValueError):
            print(f"t5grade: could not remove all of {os.fspath(path)}: {len(errors)} error(s), first: {errors[0]}",
                  file=log or sys.stderr, flush=True)
    return not errors
