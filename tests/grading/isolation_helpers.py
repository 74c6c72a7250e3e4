"""Which isolation the grading tests can ask for on this machine, and running the grader as a normal user.

`ISOLATION` is "auto" where the grader can isolate kernels here (as root, or as a normal user
with unprivileged user namespaces), else "none": the tests that do not depend on isolation then
still run everywhere, and those that do skip with the reason in `WHY_NOT`.

`normal_user()` and `run_as()` let a test started as root run the grader as a normal user (CI
runs as root; T5LESSON_REQUIRE_ISOLATION=1 makes those tests required there). Python may sit
in a folder a normal user cannot enter (here under /root): `run_as` opens just the way to it in
a private mount namespace, as the grader's own sandbox does, before it drops to the user.
"""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from t5lesson.grading.batch import _uids
from t5lesson.grading.sandbox import launcher as sandbox

WHY_NOT = sandbox.probe(_uids(1)[0])
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
    def become():
        sandbox._private_namespace()
        sandbox.expose(sandbox.needed_paths() + reach)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=become, capture_output=True, text=True,
                          timeout=timeout)


def python() -> str:
    return sys.executable


def processes_running(*argv: str) -> list[int]:
    """Pids of the processes whose command line starts with argv (e.g. "sleep", "987")."""
    want = [a.encode() for a in argv]
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if command[:len(want)] == want:
                found.append(int(entry))
    return found
