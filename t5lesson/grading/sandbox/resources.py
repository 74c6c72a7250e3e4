"""Limits that hold for a whole submission, not per process, and the clean-up after a kernel.

Memory (shared memory included) and processes are bounded by a cgroup per submission where the
grader may make one (`Cgroup`), else by the worker's watch on the kernel's process tree
(`tree_memory`); see docs/grading.md, "Memory of a whole submission". After a run the grader
kills what is left (`kill_group`, `kill_user_processes`) and removes a sandbox user's files
(`remove_user_files`); every scan of /proc is here. Every run folder is removed by `remove_tree`:
no recursion, no symbolic link followed, no error raised (a kernel may leave any tree behind).
"""
from __future__ import annotations

import ctypes
import functools
import os
import signal
import stat
import sys
import time
from pathlib import Path

from .bubblewrap import WRITABLE

__all__ = ["Cgroup", "tree_memory", "held_shared_memory", "descendants", "harvest_reserve", "kill", "kill_group",
           "processes_of", "kill_user_processes", "remove_user_files", "remove_tree", "remove_quietly"]

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


TMPFS_MAGIC = 0x01021994  # statfs's f_type of tmpfs and shmem (memfd_create's files live there)


@functools.cache
def _statfs():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    return libc.statfs


def _on_tmpfs(path: str) -> bool:
    """Does `path` (here a /proc/PID/fd link, followed) lie on a tmpfs? f_type is statfs's first field."""
    buffer = ctypes.create_string_buffer(256)
    if _statfs()(os.fsencode(path), buffer) != 0:
        return False
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF == TMPFS_MAGIC


def held_shared_memory(pids, exclude_devices=()) -> int:
    """Bytes of the memory-backed files the processes `pids` hold open: every memfd, and every file of a
    tmpfs other than `exclude_devices` (the kernel's own size-limited one). Each file is counted once.

    Such a file's pages are memory, but no process's PSS counts them unless they are mapped.
    """
    sizes: dict[tuple[int, int], int] = {}
    tmpfs: dict[int, bool] = {}  # device -> on a tmpfs? (asked once per device)
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
                if not target.startswith("/"):  # socket:[..], pipe:[..], anon_inode:..
                    continue
                info = os.stat(link)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_dev in exclude_devices:
                continue
            if not target.startswith("/memfd:"):
                if info.st_dev not in tmpfs:
                    tmpfs[info.st_dev] = _on_tmpfs(link)
                if not tmpfs[info.st_dev]:
                    continue
            sizes[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return sum(sizes.values())


def tree_memory(pid: int, exclude_devices=()) -> int:
    """Memory used by a process and all its descendants, in bytes: their PSS, and the memfd and tmpfs
    files they hold open (`held_shared_memory`; `exclude_devices`: the kernel's own tmpfs, bounded apart)."""
    pids = descendants(pid)
    return sum(_memory_of(p) for p in pids) + held_shared_memory(pids, exclude_devices)


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
                    remove_quietly(path)
                else:
                    os.unlink(path)
            except OSError:
                continue


# --------------------------------------------------------------------------- removing a run folder

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Removal:
    """The state of one `remove_tree`: the open folder, the way down to it, what could not be removed.

    Only one folder is open at a time: the way back up is ".." of the open folder, checked
    against the (device, inode) recorded on the way down, so a tree of any depth costs no
    recursion and one file descriptor.
    """

    def __init__(self):
        self.errors: list[str] = []
        self.failed: set[tuple[int, int]] = set()  # folders not entered or not removed: never tried again

    def error(self, what: str, exc: BaseException) -> None:
        if len(self.errors) < 100:
            self.errors.append(f"{what}: {type(exc).__name__}: {exc}")

    def open_folder(self, name: str, parent: int) -> int | None:
        """Open the folder `name` of `parent` without following a link; chmod it (ours) when it is closed to us."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except PermissionError:
            pass
        except OSError as exc:
            self.error(f"open {name}", exc)
            return None
        try:  # a folder made without permissions: open it to ourselves (through an O_PATH descriptor: no link)
            handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            try:
                os.chmod(f"/proc/self/fd/{handle}", 0o700)
            finally:
                os.close(handle)
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            self.error(f"open {name}", exc)
            return None

    def empty_files(self, folder: int) -> list[tuple[str, int]]:
        """Unlink every entry of the open `folder` that is not a folder; return its folders (name, inode)."""
        try:
            with os.scandir(folder) as listing:
                entries = [(e.name, e.inode(), e.is_dir(follow_symlinks=False)) for e in listing]
        except OSError as exc:
            self.error("list a folder", exc)
            return []
        device = os.fstat(folder).st_dev
        folders = []
        for name, inode, is_dir in entries:
            if is_dir:
                if (device, inode) not in self.failed:
                    folders.append((name, inode))
                continue
            self.unlink(name, folder)
        return folders

    def remove(self, remover, name: str, folder: int) -> bool:
        """`remover(name, dir_fd=folder)` (os.unlink or os.rmdir), once more after opening up `folder` when
        refused for permission; True when the entry is gone, else the error is noted."""
        for attempt in (0, 1):
            try:
                remover(name, dir_fd=folder)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if attempt or not isinstance(exc, PermissionError) or not _open_up(folder):
                    self.error(f"{remover.__name__} {name}", exc)
                    return False
        return False

    def unlink(self, name: str, folder: int) -> None:
        self.remove(os.unlink, name, folder)

    def rmdir(self, name: str, parent: int, key: tuple[int, int]) -> None:
        if not self.remove(os.rmdir, name, parent):
            self.failed.add(key)


def _open_up(folder: int) -> bool:
    """Give ourselves write and search on an open folder (where it is ours); False where that fails."""
    try:
        os.fchmod(folder, stat.S_IMODE(os.fstat(folder).st_mode) | 0o700)
        return True
    except OSError:
        return False


def _walk_down_and_up(state: _Removal, top: int, name: str) -> None:
    """Remove the folder `name` of the open folder `top` and everything in it, depth first, without recursion."""
    current = state.open_folder(name, top)
    if current is None:
        return
    info = os.fstat(current)
    way = [(name, (info.st_dev, info.st_ino), state.empty_files(current))]  # (name, key, folders left) per level
    try:
        while way:
            name, key, left = way[-1]
            if left:
                child_name, child_inode = left.pop()
                child = state.open_folder(child_name, current)
                if child is None:  # left in place: its folder's rmdir says so
                    state.failed.add((os.fstat(current).st_dev, child_inode))
                    continue
                os.close(current)
                current = child
                info = os.fstat(current)
                way.append((child_name, (info.st_dev, info.st_ino), state.empty_files(current)))
                continue
            way.pop()
            if way:
                parent = os.open("..", _DIR_FLAGS, dir_fd=current)
                seen = os.fstat(parent)
                if (seen.st_dev, seen.st_ino) != way[-1][1]:  # moved while we were inside: stop here
                    os.close(parent)
                    raise OSError(f"{name}: its folder moved during the removal")
            else:
                parent = top
            os.close(current)
            current = parent
            state.rmdir(name, current, key)
    finally:
        if current != top:
            os.close(current)


def remove_tree(path) -> list[str]:
    """Remove `path` and everything in it; return what could not be removed (at most 100 lines). Never raises.

    A tree of any depth (no recursion), files that vanish meanwhile or cannot be read, folders
    without permissions (opened up where they are ours): a symbolic link is removed, never followed.
    """
    state = _Removal()
    path = os.path.abspath(os.fspath(path))
    parent_path, name = os.path.split(path.rstrip("/"))
    try:  # the way to the folder is the grader's own (a temp folder may be a link); from it on, no link is followed
        top = os.open(parent_path or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except BaseException as exc:
        return [f"open {parent_path}: {type(exc).__name__}: {exc}"]
    try:
        found = os.stat(name, dir_fd=top, follow_symlinks=False)
        if stat.S_ISDIR(found.st_mode):
            _walk_down_and_up(state, top, name)
        else:
            os.unlink(name, dir_fd=top)
    except FileNotFoundError:
        pass
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        state.error(f"remove {path}", exc)
    finally:
        os.close(top)
    return state.errors


def remove_quietly(path, log=None) -> bool:
    """`remove_tree(path)`, with what went wrong as one line on `log` (a file; stderr by default). Never raises
    (but for Ctrl-C); True when everything was removed."""
    try:
        errors = remove_tree(path)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        errors = [f"{type(exc).__name__}: {exc}"]
    if errors:
        try:
            print(f"t5grade: could not remove all of {path}: {len(errors)} error(s), first: {errors[0]}",
                  file=log or sys.stderr, flush=True)
        except BaseException:
            pass
    return not errors
