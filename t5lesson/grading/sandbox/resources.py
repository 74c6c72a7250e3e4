"""Limits that hold for a whole submission, not per process, and the clean-up after a kernel.

Memory (shared memory included) and processes are bounded by a cgroup per submission where the
grader may make one (`Cgroup`), else by the worker's watch on the kernel's process tree
(`tree_memory`); see docs/grading.md, "Memory of a whole submission". After a run the grader
kills what is left (`kill_group`, `kill_user_processes`) and removes a sandbox user's files
(`remove_user_files`); every scan of /proc is here.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from .namespaces import WRITABLE

__all__ = ["Cgroup", "tree_memory", "descendants", "harvest_reserve", "kill", "kill_group", "processes_of",
           "kill_user_processes", "remove_user_files"]

ROOT = Path("/sys/fs/cgroup")


def _own_cgroups() -> dict[str, str]:
    """{controller or "" for v2: path} of this process, from /proc/self/cgroup."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


class Cgroup:
    """One submission's cgroup(s): memory (with swap where it is accounted) and processes."""

    def __init__(self, paths: list[Path], version: int):
        self.paths, self.version = paths, version

    @classmethod
    def create(cls, name: str, memory_bytes: int, max_processes: int) -> Cgroup | None:
        """A new cgroup with these limits, or None where none can be made (not root, no controller)."""
        if os.geteuid() != 0:
            return None
        own = _own_cgroups()
        made = cls._v1(own, name, memory_bytes, max_processes) or cls._v2(own, name, memory_bytes, max_processes)
        return made

    @classmethod
    def _v1(cls, own, name, memory_bytes, max_processes) -> Cgroup | None:
        memory_root = ROOT / "memory"
        if "memory" not in own or not (memory_root / "memory.limit_in_bytes").exists():
            return None
        paths = []
        try:
            memory = memory_root / own["memory"].lstrip("/") / name
            memory.mkdir()
            paths.append(memory)
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                try:
                    _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
                except OSError:
                    pass
            if "pids" in own and (ROOT / "pids").is_dir():
                pids = ROOT / "pids" / own["pids"].lstrip("/") / name
                pids.mkdir()
                paths.append(pids)
                _write(pids / "pids.max", str(max_processes))
        except OSError:
            cls(paths, 1).remove()
            return None
        return cls(paths, 1)

    @classmethod
    def _v2(cls, own, name, memory_bytes, max_processes) -> Cgroup | None:
        if "" not in own or not (ROOT / "cgroup.controllers").exists():
            return None
        parent = ROOT / own[""].lstrip("/")
        try:
            if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                return None
            group = parent / name
            group.mkdir()
        except OSError:
            return None
        try:
            _write(group / "memory.max", str(memory_bytes))
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", "0")
            if (group / "pids.max").exists():
                _write(group / "pids.max", str(max_processes))
        except OSError:
            cls([group], 2).remove()
            return None
        return cls([group], 2)

    @classmethod
    def available(cls) -> bool:
        """Can a cgroup with a memory limit be made here (made and removed at once to find out)?"""
        group = cls.create(f"t5grade-probe-{os.getpid()}", 2 ** 30, 64)
        if group is None:
            return False
        group.remove()
        return True

    def join(self, pid: int = 0) -> None:
        """Move a process (default: this one) into the cgroup(s); its children follow."""
        for path in self.paths:
            _write(path / "cgroup.procs", str(pid or os.getpid()))

    def pids(self) -> list[int]:
        found = set()
        for path in self.paths:
            try:
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(found)

    def went_over_memory(self) -> bool:
        """Did the memory limit kill a process of the submission?"""
        for path in self.paths:
            try:
                if self.version == 1 and (path / "memory.oom_control").exists():
                    control = dict(line.split() for line in (path / "memory.oom_control").read_text().splitlines())
                    return int(control.get("oom_kill", 0)) > 0
                if self.version == 2 and (path / "memory.events").exists():
                    events = dict(line.split() for line in (path / "memory.events").read_text().splitlines())
                    return int(events.get("oom_kill", 0)) > 0 or int(events.get("max", 0)) > 0
            except (OSError, ValueError):
                continue
        return False

    def remove(self, rounds: int = 40) -> None:
        """Kill every process in the cgroup(s), then remove them."""
        for path in reversed(self.paths):
            for _ in range(rounds):
                pids = []
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    pass
                for pid in pids:
                    kill(pid)
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def kill(pid: int) -> None:
    """SIGKILL one process, if it is still there."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def kill_group(pid: int) -> bool:
    """SIGKILL the process group that `pid` leads; False when there was none to kill."""
    try:
        os.killpg(pid, signal.SIGKILL)
        return True
    except OSError:
        return False


def _pids() -> list[int]:
    """Every process id in /proc (the one scan of it: processes come and go while it is read)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command's name (state, ppid, ...), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()
    except OSError:
        return None


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _stat_fields(pid)
        try:
            ppid = int(stat[1])
        except (TypeError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
    return children


def descendants(pid: int) -> list[int]:
    """pid and every process below it."""
    children = _children_map()
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def _memory_of(pid: int) -> int:
    """Proportional set size of a process in bytes (resident size where smaps_rollup is missing)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_memory(pid: int) -> int:
    """Memory used by a process and all its descendants, in bytes."""
    return sum(_memory_of(p) for p in descendants(pid))


def harvest_reserve(limits) -> float:
    """Seconds kept at the end of the notebook's budget for reading the answers.

    `harvest_timeout`, but never more than a quarter of the whole budget: the whole-notebook
    limit bounds everything done in the kernel, the student's cells and the reading together.
    """
    return min(limits.harvest_timeout, limits.notebook_timeout / 4)


def processes_of(uid: int) -> list[int]:
    """The processes owned by `uid`."""
    pids = []
    for pid in _pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                pids.append(pid)
        except OSError:
            continue
    return pids


def _zombie(pid: int) -> bool:
    stat = _stat_fields(pid)
    return stat is None or stat[:1] == [b"Z"]  # gone already, or dead and waiting to be reaped


def kill_user_processes(uid: int, rounds: int = 5) -> None:
    """SIGKILL every process owned by `uid` (a sandbox user id), repeating while some remain."""
    for _ in range(rounds):
        pids = [pid for pid in processes_of(uid) if not _zombie(pid)]  # a zombie is dead already: no wait for it
        if not pids:
            return
        for pid in pids:
            kill(pid)
        time.sleep(0.05)


def remove_user_files(uid: int) -> None:
    """Delete what a sandbox user id left at the top of the world-writable temp folders."""
    for folder in WRITABLE:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_uid != uid:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                continue
