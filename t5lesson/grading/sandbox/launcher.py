"""Start a student's kernel with limits, behind a wall.

`python -m t5lesson.grading.sandbox.launcher CONFIG CONNECTION_FILE`:

The grader's kernelspec runs this module; it applies the limits and the isolation, then
*replaces itself* (exec) with the grading kernel (`t5lesson.grading.sandbox.kernel`, ipykernel).

Always (any user):
- resource limits: address space and CPU seconds per process, size of one written file, no
  core files; the memory of the whole submission is bounded too (a cgroup, or the worker's
  watch on the process tree: `t5lesson.grading.sandbox.resources`);
- a fresh, empty working directory and HOME, and an environment with nothing but PATH,
  locale and a few thread settings (no tokens, no paths of the grader's).

With isolation (`config["isolation"]`, the grader's default; as root or as a normal user, see
`t5lesson.grading.sandbox.namespaces`):
- private mount, IPC, network and PID namespaces, and a root of its own that holds only what a
  kernel needs (an allowlist): the system's programs and libraries, a few files of /etc, the
  Python environment and the course package, all read-only; one size-limited tmpfs for /tmp,
  /var/tmp, /dev/shm, /run/lock and the home; the kernel's socket folder bound in;
- this process stays outside as the kernel's supervisor, and the kernel runs as process 1 of
  its PID namespace: when either dies, everything the submission started dies;
- as root, the kernel drops to a user id of its own (one per submission, no name, no home),
  and a cgroup (where one can be made) bounds its memory, shared memory included, and its
  number of processes; as a normal user, it keeps that user's id inside a user namespace;
  either way it keeps no capability.

What a kernel can still do, honestly: read what its root shows, all of it world-readable on the
machine too: /usr (programs, libraries, documentation), the files of /etc in `namespaces.ETC`
(the users' names in passwd and group among them), /sys/devices/system (CPUs and memory nodes),
the Python environment (the interpreter, its standard library, site-packages) and the course
package `t5lesson/` (the exercises' public cases and the recipes of the hidden cases, not the
numbers drawn for a run); write to its own stdout and stderr, which are the worker's log; use
the CPU until its limits; and, with the other limits, nothing that outlives its run. Nothing
else of the machine is there: no home folder, no other checkout of the course, no submission,
no report, no solution. Without isolation (`--isolation none`) the kernel runs as the grader's
own user, with only the limits.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path

from ..protocol import KERNEL_MODULE, SandboxPlan
from . import namespaces as isolation
from .namespaces import needed_paths

__all__ = ["probe", "launch", "run_here", "kept_environment", "kernel_environment", "kill_user_processes",
           "remove_user_files", "needed_paths"]

KEEP_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
            "JPY_PARENT_PID")
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")


def _limit(which, value) -> None:
    if value is None:
        return
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):  # a limit above the hard limit stays at the hard limit
        soft, hard = resource.getrlimit(which)
        resource.setrlimit(which, (min(value, hard) if hard != resource.RLIM_INFINITY else value, hard))


def _count_processes(uid: int) -> int:
    return len(_processes_of(uid))


def _enter(config: dict, connection_file: str) -> tuple[list[str], dict]:
    """Apply the sandbox described by `config` to this process; return the kernel's (argv, environment)."""
    home = config["home"]
    with open(connection_file, encoding="utf-8") as f:
        connection = f.read()
    if config.get("pid_file"):
        with open(config["pid_file"], "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    plan = SandboxPlan.from_json(config["isolation"]) if config.get("isolation") else None
    uid = plan.uid if plan else None
    if config.get("cgroup"):  # as root: this process and all it starts count against the submission's cgroup
        from .resources import Cgroup

        Cgroup([Path(p) for p in config["cgroup"]], 0).join()
    if plan:
        isolation.enter(plan)  # from here on: the kernel-to-be, process 1 of its PID namespace, in its own root
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
    elif plan and config.get("max_processes"):  # the user's own processes count too: allow that many more
        _limit(resource.RLIMIT_NPROC, _count_processes(os.getuid()) + int(config["max_processes"]))
    if plan:
        isolation.die_with_parent()
        isolation.drop_capabilities()
    os.chdir(home)
    return [own, "--HistoryManager.enabled=False"], kernel_environment(os.environ, home)


def kept_environment(base) -> dict:
    """The variables of `base` that a kernel keeps: PATH, locale and a few settings (no tokens, no paths)."""
    return {k: v for k, v in base.items() if k in KEEP_ENV or k.startswith("LC_")}


def kernel_environment(base, home: str) -> dict:
    """What a kernel's environment holds: `kept_environment(base)`, its own home and fixed settings."""
    env = kept_environment(base)
    env.update({
        "HOME": home, "IPYTHONDIR": os.path.join(home, ".ipython"), "MPLCONFIGDIR": os.path.join(home, ".mpl"),
        "JUPYTER_RUNTIME_DIR": home, "JUPYTER_DATA_DIR": home, "JUPYTER_CONFIG_DIR": home,
        "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "TMPDIR": "/tmp",
    })
    return env


def launch(config: dict, connection_file: str) -> None:
    """Apply the sandbox described by `config` to this process, then exec the kernel."""
    (own, *options), env = _enter(config, connection_file)
    argv = [sys.executable, "-m", KERNEL_MODULE, "-f", own, *options]
    os.execve(sys.executable, argv, env)


def run_here(config: dict, connection_file: str) -> None:
    """Apply the sandbox to this process, then run the kernel in it (until it stops).

    For a process forked from an interpreter that has already imported the kernel's modules
    (`t5lesson.grading.sandbox.zygote`): what `launch` gets from exec (a fresh environment, the
    home as working folder and first entry of sys.path, no bytecode written) is set here instead.
    """
    (own, *options), env = _enter(config, connection_file)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter starts
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = True
    sys.path[0] = env["HOME"]  # what `python -m` puts first: the working folder
    from . import kernel

    sys.argv = [kernel.__file__, "-f", own, *options]
    kernel.main(sys.argv[1:])


def probe(uid: int | None = None) -> str | None:
    """None if kernels can be isolated here (as root: with user id `uid`), else why and what to do."""
    return isolation.probe(uid if os.geteuid() == 0 else None)


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


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[:1] == [b"Z"]
    except OSError:
        return True  # gone already


def kill_user_processes(uid: int, rounds: int = 5) -> None:
    """SIGKILL every process owned by `uid` (a sandbox user id), repeating while some remain."""
    import time

    for _ in range(rounds):
        pids = [pid for pid in _processes_of(uid) if not _zombie(pid)]  # a zombie is dead already: no wait for it
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
    """`python -m t5lesson.grading.sandbox.launcher CONFIG.json CONNECTION_FILE`: the kernelspec's command."""
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as f:
        launch(json.load(f), argv[1])


if __name__ == "__main__":
    main()
