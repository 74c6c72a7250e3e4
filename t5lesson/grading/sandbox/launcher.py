"""Start a student's kernel with limits, behind a wall: `python -m ...sandbox.launcher CONFIG CONNECTION_FILE`.

The worker's kernelspec runs this module (or the zygote forks it, `launch(forked=True)`): it applies the
run's `LaunchConfig` to itself (resource limits, the cgroup, the namespaces of
`sandbox.namespaces`, the kernel's own user id, no capability, the system-call filter of
`sandbox.seccomp`, a bare environment and home), then becomes the grading kernel
(`sandbox.kernel`). What a kernel can still do is said, honestly, in docs/grading.md,
"Isolation, honestly".
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import psutil

from ..protocol import KERNEL_MODULE, SANDBOX_MODULE, LaunchConfig
from . import namespaces, seccomp

WALLED = "T5LESSON_WALLED"  # set for a launcher that bubblewrap started: the class's walls are up
KEEP_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
            "JPY_PARENT_PID")


def _limit(which: int, value: int | None) -> None:
    if value is None:
        return
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):  # a limit above the hard limit stays at the hard limit
        hard = resource.getrlimit(which)[1]
        resource.setrlimit(which, (min(value, hard) if hard != resource.RLIM_INFINITY else value, hard))


def _write_pid(config: LaunchConfig) -> None:
    """This process's id, the leader of the group the grader kills (bubblewrap's, where it started one)."""
    if config.pid_file:
        Path(config.pid_file).write_text(str(os.getpid()), encoding="utf-8")


def _sockets(connection: str) -> list[str]:
    """The paths of the Unix sockets the kernel binds (ZeroMQ's ipc transport: IP-PORT), from its connection file."""
    try:
        info = json.loads(connection)
        if info.get("transport") != "ipc":
            return []
        return [f"{info['ip']}-{int(info[key])}" for key in sorted(info) if key.endswith("_port")]
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


def kept_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The variables of `base` that a kernel keeps: PATH, locale and a few settings (no tokens, no paths)."""
    return {k: v for k, v in base.items() if k in KEEP_ENV or k.startswith("LC_")}


def kernel_environment(base: Mapping[str, str], home: str) -> dict[str, str]:
    """What a kernel's environment holds: `kept_environment(base)`, its own home and fixed settings."""
    return {**kept_environment(base),
            "HOME": home, "IPYTHONDIR": os.path.join(home, ".ipython"), "MPLCONFIGDIR": os.path.join(home, ".mpl"),
            "JUPYTER_RUNTIME_DIR": home, "JUPYTER_DATA_DIR": home, "JUPYTER_CONFIG_DIR": home,
            "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "TMPDIR": "/tmp"}


def launch(config: LaunchConfig, connection_file: str, forked: bool = False) -> None:
    """Apply the sandbox described by `config` to this process, then exec the kernel; or, `forked` from the zygote
    (which has imported the kernel's modules), run it here until it stops, setting what exec would give (a fresh
    environment, the home first on sys.path, no bytecode)."""
    home, plan = config.home, config.isolation
    uid = plan.uid if plan else None
    connection = Path(connection_file).read_text(encoding="utf-8")
    seccomp.available()  # loads libseccomp while the installation is still ours to read
    if not os.environ.get(WALLED):  # else bubblewrap's process wrote it
        _write_pid(config)
    for folder in config.cgroup:  # as root: this process and all it starts count against the submission's cgroup
        Path(folder, "cgroup.procs").write_text(str(os.getpid()))
    if plan:  # from here on: the kernel-to-be, process 1 of its PID namespace, in its own root
        namespaces.enter(plan, sockets=_sockets(connection))
    own = os.path.join(home, "connection.json")
    with open(os.open(own, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        f.write(connection)
    if uid is not None:
        os.chown(own, uid, uid)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_AS, config.memory_bytes)
    _limit(resource.RLIMIT_CPU, config.cpu_seconds)
    _limit(resource.RLIMIT_FSIZE, config.file_bytes)
    if uid is not None:
        _limit(resource.RLIMIT_NPROC, config.max_processes)
    elif plan and config.max_processes:  # the user's own processes count too: allow that many more
        mine = sum(1 for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == os.getuid())
        _limit(resource.RLIMIT_NPROC, mine + config.max_processes)
    if plan:
        namespaces.become(uid)
    os.chdir(home)
    env = kernel_environment(os.environ, home)
    argv = ["-f", own, "--HistoryManager.enabled=False"]
    if not forked:
        os.execve(sys.executable, [sys.executable, "-m", KERNEL_MODULE, *argv], env)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter starts
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = True
    sys.path[0] = home  # what `python -m` puts first: the working folder
    from . import kernel

    sys.argv = [kernel.__file__, *argv]
    kernel.main(argv)


def main() -> None:
    """The kernelspec's command: CONFIG.json CONNECTION_FILE."""
    argv, config = sys.argv[1:], LaunchConfig.read(sys.argv[1])
    plan = config.isolation
    if plan and not os.environ.get(WALLED):  # start again inside the class's bubblewrap, seeing the run folders used
        _write_pid(config)
        folders = namespaces.holding(plan.hide, [config.home, config.pid_file, *plan.writable_keep, *argv])
        keep = [p for p in plan.keep if p not in plan.writable_keep]
        command = namespaces.command(keep, plan.hide, folders, [sys.executable, "-m", SANDBOX_MODULE, *argv])
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the kernel's (it restores SIGINT), not bwrap's
        os.execvpe(command[0], command, {**os.environ, WALLED: "1"})
    launch(config, argv[1])


if __name__ == "__main__":
    main()
