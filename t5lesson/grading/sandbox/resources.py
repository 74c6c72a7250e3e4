"""Limits that hold for a whole submission, not per process: memory (with shared memory) and processes.

A kernel may start processes, and each has its own address-space limit (RLIMIT_AS), so those
alone do not bound a submission. Two ways to bound the whole of it:

- a **cgroup** per submission (`Cgroup`), where the grader may make one (as root: a cgroup v1
  `memory` and `pids` hierarchy, or a cgroup v2 one with those controllers delegated). Its
  memory limit counts every process of the submission and the pages of its tmpfs files and
  shared memory (/dev/shm, /tmp: see `t5lesson.grading.sandbox.namespaces`); its pids limit counts
  processes. After the run the grader kills whatever is left in it and removes it;
- otherwise, a **watch** on the kernel's process tree (`tree_memory`): the worker sums the
  proportional set size of the kernel and all its descendants twice a second and stops the
  kernel when the sum passes the limit. Files and shared memory are then bounded by the
  kernel's private tmpfs (`disk_mb`), not by the memory limit.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["Cgroup", "tree_memory", "descendants", "harvest_reserve"]

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
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        try:
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
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
