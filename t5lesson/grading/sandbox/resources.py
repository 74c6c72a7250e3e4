"""Limits that hold for a whole submission, not per process, and the clean-up after a kernel.

Memory (shared memory included) and processes are bounded by a cgroup per submission where the
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

ROOT = Path("/sys/fs/cgroup")


class Cgroup:
    """One submission's cgroup(s): memory (with swap where it is accounted) and processes, in cgroup v2
    (one folder) or v1 (a folder in each controller's hierarchy, as on machines that have only v1)."""

    def __init__(self, paths: list[Path], version: int):
        self.paths, self.version = paths, version

    @classmethod
    def create(cls, name: str, memory_bytes: int, max_processes: int) -> Cgroup | None:
        """A new cgroup with these limits, or None where none can be made (not root, no controller)."""
        if os.geteuid() != 0:
            return None
        own = _own_cgroups()
        if "memory" in own and (ROOT / "memory" / "memory.limit_in_bytes").exists():  # v1: a hierarchy each
            version = 1
            limits = {"memory": {"memory.limit_in_bytes": memory_bytes, "memory.memsw.limit_in_bytes": memory_bytes},
                      "pids": {"pids.max": max_processes}}
            settings = {ROOT / c / own[c].lstrip("/") / name: v for c, v in limits.items()
                        if c in own and (ROOT / c).is_dir()}
        elif "" in own and (ROOT / "cgroup.controllers").exists():  # v2: one, where memory is delegated to it
            version = 2
            settings = {ROOT / own[""].lstrip("/") / name: {"memory.max": memory_bytes, "memory.swap.max": 0,
                                                             "pids.max": max_processes}}
        else:
            return None
        made = cls([], version)
        try:
            for path, values in settings.items():
                path.mkdir()
                made.paths.append(path)
                for k, (file, value) in enumerate(values.items()):
                    if k == 0 or (path / file).exists():  # the first is required; swap and v2's pids where accounted
                        (path / file).write_text(str(value))
        except OSError:
            made.remove()
            return None
        return made

    @classmethod
    def available(cls) -> bool:
        """Can a cgroup with a memory limit be made here (made and removed at once to find out)?"""
        group = cls.create(f"t5grade-probe-{os.getpid()}", 2 ** 30, 64)
        if group is not None:
            group.remove()
        return group is not None

    def went_over_memory(self) -> bool:
        """Did the memory limit kill a process of the submission?"""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        for path in self.paths:
            try:
                pairs = [line.split() for line in (path / name).read_text().splitlines()]
            except OSError:
                continue
            counts = {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
            return counts.get("oom_kill", 0) > 0 or counts.get("max", 0) > 0
        return False

    def remove(self) -> None:
        """Kill every process in the cgroup(s), then remove them."""
        for path in reversed(self.paths):
            for _ in range(40):
                try:
                    for pid in (path / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(pid), signal.SIGKILL)
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _own_cgroups() -> dict[str, str]:
    """{controller or "" for v2: path} of this process, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            found.update(dict.fromkeys(controllers.split(",") if controllers else [""], path))
    return found


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
