"""Start a student's kernel with limits, and, where the grader runs as root, behind a wall.

The grader's kernelspec runs `python -m t5lesson.grading.sandbox CONFIG CONNECTION_FILE`; this module
applies the limits and then *replaces itself* (exec) with ipykernel, so the kernel keeps this
process id and jupyter_client can interrupt and kill it as usual.

Always (any user):
- resource limits: address space (memory), CPU seconds, size of a written file, no core files;
- a fresh, empty working directory and HOME, and an environment with nothing but PATH,
  locale and a few thread settings (no tokens, no paths of the grader's).

Only when the grader runs as root and the kernel supports it ("full" isolation):
- a private mount namespace in which the submissions folder, the report folder, the
  solutions and other configured folders are covered by empty read-only tmpfs mounts;
- the kernel then drops to a user id of its own (one per submission, with no name and no
  home), so it can neither read root's private files nor signal, trace or read the memory of
  the grader or of other students' kernels; a limit on its number of processes stops fork bombs.

What a kernel can still do, honestly: read world-readable files outside the hidden folders
(the Python installation, the course package, /etc), write in world-writable places such as
/tmp (the grader deletes what that user id left there), use the CPU until its limits, and see
the process list. It has no network isolation (nothing to reach but the loopback here).
Without root ("none" isolation) the kernel runs as the grader's own user: it can read anything
that user can, including other submissions and the solutions. Grade as root, or on an account
that holds only the submissions, if that matters.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

from .course import PACKAGE_PARENT

__all__ = ["probe", "launch", "kill_user_processes", "remove_user_files"]

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 0x4000, 1 << 18
KEEP_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
            "JPY_PARENT_PID")
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _private_namespace() -> None:
    """Give this process its own mount namespace, whose mounts never propagate back."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")


def hide_paths(paths) -> None:
    """Cover each folder with an empty read-only tmpfs (call after `_private_namespace`)."""
    libc = _libc()
    for path in paths:
        if os.path.isdir(path):
            flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
            _check(libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, b"size=4k,mode=000"), f"hide {path}")


def _blocked(path: str):
    """(folder, child) for the first folder on the way to `path` that other users cannot enter."""
    current = "/"
    for name in path.strip("/").split("/"):
        if not name:
            continue
        if not os.stat(current).st_mode & 0o001:
            return current, name
        current = os.path.join(current, name)
    return None


def expose(paths) -> None:
    """Make `paths` reachable for an unprivileged user, inside this process's mount namespace.

    Python may live in a folder others cannot enter (here: under /root, mode 0700). For each
    such folder on the way to a needed path, an empty tmpfs is laid over it and only the needed
    child is bind-mounted back, so the kernel reaches the interpreter and nothing else there.
    """
    libc = _libc()
    for _ in range(8):  # nested closed folders are opened one level per round
        groups: dict[str, set] = {}
        for path in paths:
            found = _blocked(os.path.realpath(path)) if os.path.exists(path) else None
            if found:
                groups.setdefault(found[0], set()).add(found[1])
        if not groups:
            return
        for folder, children in groups.items():
            fds = {child: os.open(os.path.join(folder, child), os.O_PATH) for child in children}
            _check(libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64k,mode=0711"),
                   f"cover {folder}")
            for child, fd in fds.items():
                target = os.path.join(folder, child)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(target)
                else:
                    open(target, "w").close()
                source = os.fsencode(f"/proc/self/fd/{fd}")
                _check(libc.mount(source, os.fsencode(target), None, MS_BIND | MS_REC, None), f"expose {target}")
                os.close(fd)


def needed_paths() -> list[str]:
    """What the kernel must reach: the interpreter, its libraries and this package."""
    paths = [os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.exec_prefix, str(PACKAGE_PARENT)]
    return list(dict.fromkeys(p for p in paths + [p for p in sys.path if p] if os.path.exists(p)))


def _limit(which, value) -> None:
    if value is None:
        return
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):  # a limit above the hard limit stays at the hard limit
        soft, hard = resource.getrlimit(which)
        resource.setrlimit(which, (min(value, hard) if hard != resource.RLIM_INFINITY else value, hard))


def launch(config: dict, connection_file: str) -> None:
    """Apply the sandbox described by `config` to this process, then exec the kernel."""
    home = config["home"]
    with open(connection_file, encoding="utf-8") as f:
        connection = f.read()
    if config.get("pid_file"):
        with open(config["pid_file"], "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    uid = config.get("uid")
    if uid is not None:
        _private_namespace()
        expose(needed_paths())
        hide_paths(config.get("hide", []))
    own = os.path.join(home, "connection.json")
    with open(own, "w", encoding="utf-8") as f:
        f.write(connection)
    os.chmod(own, 0o600)
    if uid is not None:
        os.chown(own, uid, uid)

    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_AS, config.get("memory_bytes"))
    _limit(resource.RLIMIT_CPU, config.get("cpu_seconds"))
    _limit(resource.RLIMIT_FSIZE, config.get("file_bytes"))
    if uid is not None:
        _limit(resource.RLIMIT_NPROC, config.get("max_processes"))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise SystemExit("sandbox: could not drop privileges")

    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k.startswith("LC_")}
    env.update({
        "HOME": home, "IPYTHONDIR": os.path.join(home, ".ipython"), "MPLCONFIGDIR": os.path.join(home, ".mpl"),
        "JUPYTER_RUNTIME_DIR": home, "JUPYTER_DATA_DIR": home, "JUPYTER_CONFIG_DIR": home,
        "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
    })
    os.chdir(home)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", own, "--HistoryManager.enabled=False"]
    os.execve(sys.executable, argv, env)


def probe(uid: int) -> str | None:
    """None if full isolation works here, else why not.

    A child process does what `launch` will do (private mount namespace, expose the
    interpreter, hide a folder, drop to `uid`) and then starts Python to import ipykernel.
    """
    if os.geteuid() != 0:
        return "the grader does not run as root"
    hidden = os.path.dirname(os.path.abspath(__file__))
    check = f"import os, ipykernel; assert not os.access({hidden!r}, os.R_OK)"
    pid = os.fork()
    if pid == 0:
        try:
            _private_namespace()
            expose(needed_paths())
            hide_paths([hidden])
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.chdir("/")
            os.execv(sys.executable, [sys.executable, "-I", "-c", check])
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return None
    return "mount namespaces or running Python as another user are not possible here"


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def kill_user_processes(uid: int, rounds: int = 5) -> None:
    """SIGKILL every process owned by `uid` (a sandbox user id), repeating while some remain."""
    import signal
    import time

    for _ in range(rounds):
        pids = _processes_of(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def remove_user_files(uid: int) -> None:
    """Delete what a sandbox user id left at the top of the world-writable temp folders."""
    import shutil

    for folder in TEMP_DIRS:
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


def main(argv=None) -> None:
    """`python -m t5lesson.grading.sandbox CONFIG.json CONNECTION_FILE`: the kernelspec's command."""
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as f:
        launch(json.load(f), argv[1])


if __name__ == "__main__":
    main()
