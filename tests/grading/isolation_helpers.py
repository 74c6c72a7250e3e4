"""Which isolation the grading tests can ask for on this machine, and running the grader as a normal user.

`ISOLATION` is "auto" where the grader can isolate kernels here (as root, or as a normal user
with unprivileged user namespaces), else "none": the tests that do not depend on isolation then
still run everywhere, and those that do skip with the reason in `WHY_NOT`.

`normal_user()` and `run_as()` let a test started as root run the grader as a normal user (CI
runs as root; T5LESSON_REQUIRE_ISOLATION=1 makes those tests required there). Python may sit
in a folder a normal user cannot enter (here under /root): `run_as` opens just the way to it in
a private mount namespace (`expose`) before it drops to the user. (The grader's kernels need no
such opening: each sees a root of its own, made of folders it may enter.)
"""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import psutil

from t5lesson.grading.sandbox import namespaces as ns
from t5lesson.grading.sandbox.walls import uids

WHY_NOT = ns.probe(uids(1)[0])
ISOLATION = "auto" if WHY_NOT is None else "none"
ISOLATION_ARGS = [] if WHY_NOT is None else ["--isolation", "none"]  # for the command line
REQUIRED = os.environ.get("T5LESSON_REQUIRE_ISOLATION") == "1"
USER = "t5lesson-grader"


def normal_user() -> tuple[int, int] | str:
    """(uid, gid) of a normal user to grade as (created with useradd when missing), or why there is none."""
    if os.geteuid() != 0:
        return "the tests run as a normal user already"
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                              capture_output=True, text=True)
        if made.returncode != 0:
            return f"useradd failed: {made.stderr.strip()}"
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


def run_as(uid: int, gid: int, argv: list[str], *, cwd: str, env: dict, timeout: float,
           reach: list[str]) -> subprocess.CompletedProcess:
    """Run argv as uid:gid (the caller is root), with the paths in `reach` reachable for that user."""
    needed = ns.needed_paths() + reach  # here: it may start a process, which preexec_fn must not

    def become():
        _private_namespace()
        expose(needed)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=become, capture_output=True, text=True,
                          timeout=timeout)


def _private_namespace() -> None:
    """Give this process its own mount namespace, whose mounts never propagate back."""
    libc = ns.load_libc()
    ns.check(libc.unshare(ns.CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    ns.check(libc.mount(b"none", b"/", None, ns.MS_REC | ns.MS_PRIVATE, None), "make / private")


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

    For each folder on the way to a needed path that others cannot enter (/root, mode 0700), an
    empty tmpfs is laid over it and only the needed child is bind-mounted back.
    """
    libc = ns.load_libc()
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
            data = b"size=64k,mode=0711"
            ns.check(libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", ns.MS_NOSUID | ns.MS_NODEV, data),
                      f"cover {folder}")
            for child, fd in fds.items():
                target = os.path.join(folder, child)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(target)
                else:
                    open(target, "w").close()
                source = os.fsencode(f"/proc/self/fd/{fd}")
                bound = libc.mount(source, os.fsencode(target), None, ns.MS_BIND | ns.MS_REC, None)
                ns.check(bound, f"expose {target}")
                os.close(fd)


def python() -> str:
    return sys.executable


def processes_running(*argv: str) -> list[int]:
    """Pids of the processes whose command line starts with argv (e.g. "sleep", "987")."""
    return [p.pid for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[:len(argv)] == list(argv)]


def grade_as(user: tuple[int, int], root: Path, folder: Path, report: Path, limits, *options: str,
             package: Path) -> subprocess.CompletedProcess:
    """`t5grade grade folder --out report` with `limits`, run as `user` (the caller is root) from `root`,
    which holds both and is handed to that user (its temp folder too)."""
    report.mkdir(exist_ok=True)
    for path in [root, *root.rglob("*")]:
        os.chown(path, *user)
    os.chmod(root, 0o755)
    argv = [sys.executable, "-m", "t5lesson.grade", "grade", str(folder), "--out", str(report), "--jobs", "2",
            "--cell-timeout", str(limits.cell_timeout), "--notebook-timeout", str(limits.notebook_timeout),
            "--harvest-timeout", str(limits.harvest_timeout), "--quiet", *ISOLATION_ARGS, *options]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C.UTF-8",
           "TMPDIR": str(root), "PYTHONPATH": str(package)}
    return run_as(*user, argv, cwd=str(root), env=env, timeout=600, reach=[str(package), str(root)])


def normal_user_for_test() -> tuple[int, int]:
    """(uid, gid) of the normal user a test started as root grades as; the test skips as a normal user
    (its root run is that run), and fails where CI requires isolation and there is no such user."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("the tests run as a normal user already: the root run is that run")
    user = normal_user()
    if isinstance(user, str):
        if REQUIRED:
            pytest.fail(user)
        pytest.skip(user)
    return user
