"""A graded kernel's system calls on the deny-list fail with EPERM, as root and as a normal user.

One submission tries, in a cell of its own, to make a user namespace (unshare), to trace its
parent (ptrace), to read the kernel keyring (keyctl), to mount a tmpfs and to start io_uring;
the error it raises lists what each call answered. It is graded by root (in this process) and by
a normal user (the instructor's command, through useradd), and both must see EPERM for all
five; the rest of the notebook still earns full marks. The same filter, written as BPF, is also
loaded by `bwrap --seccomp`. Skips where kernels cannot be isolated (or bubblewrap is missing),
but not where CI sets T5LESSON_REQUIRE_ISOLATION=1.
"""
from __future__ import annotations

import csv
import errno
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from isolation_helpers import REQUIRED, WHY_NOT, grade_as, normal_user_for_test

from t5lesson.grade import grade_folder
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.protocol import Limits
from t5lesson.grading.sandbox import namespaces, seccomp

from synthetic_class import FULL_MARKS, add_after, full, write

LIMITS = Limits(cell_timeout=20, notebook_timeout=60, harvest_timeout=10, startup_timeout=30)
CALLS = ("unshare", "ptrace", "keyctl", "mount", "io_uring_setup")
PROBER = '''
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NUMBER = {"keyctl": 250, "io_uring_setup": 425}  # x86-64 numbers: no wrapper in the C library
def answer(call):
    ctypes.set_errno(0)
    result = call()
    return "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
tried = {
    "unshare": answer(lambda: libc.unshare(0x10000000)),
    "ptrace": answer(lambda: libc.ptrace(16, os.getppid(), 0, 0)),
    "keyctl": answer(lambda: libc.syscall(NUMBER["keyctl"], 0, -3, 0)),
    "mount": answer(lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
    "io_uring_setup": answer(lambda: libc.syscall(NUMBER["io_uring_setup"], 8, ctypes.create_string_buffer(120))),
}
raise RuntimeError("system calls: " + " ".join(f"{k}={v}" for k, v in tried.items()))
'''
REFUSED = "system calls: " + " ".join(f"{name}=EPERM" for name in CALLS)


def _need_isolation():
    if os.uname().machine != "x86_64":
        pytest.skip("the probe uses x86-64 system call numbers")
    if WHY_NOT is not None:
        if REQUIRED:
            pytest.fail(f"T5LESSON_REQUIRE_ISOLATION=1 but kernels cannot be isolated here: {WHY_NOT}")
        pytest.skip(f"kernels cannot be isolated here: {WHY_NOT}")


def _total(report: Path) -> str:
    [row] = csv.DictReader(io.StringIO((report / "gradebook.csv").read_text()))
    return row["total"]


def _class(folder: Path) -> None:
    folder.mkdir(parents=True)
    nb = full()
    add_after(nb, "setup", PROBER)
    write(nb, folder / "prober.ipynb")


def test_the_filter_lists_dockers_default_denials():
    assert {"ptrace", "mount", "umount2", "unshare", "setns", "keyctl", "add_key", "request_key", "bpf",
            "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
            "init_module", "finit_module", "delete_module", "pivot_root", "swapon", "swapoff", "reboot",
            "open_by_handle_at", "name_to_handle_at"} <= set(seccomp.DENIED)


def test_without_the_filter_the_grader_says_what_to_install(monkeypatch):
    monkeypatch.setattr(seccomp, "_library", lambda: None)
    why = namespaces.probe()
    assert why is not None and "apt install libseccomp2; pip install pyseccomp" in why, why


def test_bubblewrap_loads_the_exported_filter():
    """The filter, written as BPF, is loaded by `bwrap --seccomp FD`: a process started that way is refused unshare."""
    if shutil.which("bwrap") is None:
        if REQUIRED:
            pytest.fail("bubblewrap is missing (apt install bubblewrap)")
        pytest.skip("bubblewrap is missing (apt install bubblewrap)")
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as file:
        seccomp.build().export_bpf(file)
    probe = "import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.unshare(0), ctypes.get_errno())"
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent",
            "--seccomp", str(read_end), sys.executable, "-c", probe]
    done = subprocess.run(argv, pass_fds=(read_end,), capture_output=True, text=True, timeout=60)
    os.close(read_end)
    if done.returncode != 0 and "Operation not permitted" in done.stderr and not REQUIRED:
        pytest.skip(f"bubblewrap cannot make namespaces here: {done.stderr.strip()}")
    assert done.stdout.split() == ["-1", str(errno.EPERM)], done.stderr


def test_a_denied_call_is_refused_in_a_kernel_graded_by_root(tmp_path):
    _need_isolation()
    if os.geteuid() != 0:
        pytest.skip("this run is the root one; the normal user's test covers this user")
    folder = tmp_path / "subs"
    _class(folder)
    [graded] = grade_folder(folder, tmp_path / "report", limits=LIMITS, jobs=1)
    notes = " ".join(graded.notes + [o.line() for o in graded.outcomes])
    assert REFUSED in notes, notes
    assert _total(tmp_path / "report") == FULL_MARKS


def test_a_denied_call_is_refused_in_a_kernel_graded_by_a_normal_user():
    _need_isolation()
    user = normal_user_for_test()
    root = Path(tempfile.mkdtemp(prefix="t5seccomp-"))
    try:
        folder, report = root / "subs", root / "report"
        _class(folder)
        done = grade_as(user, root, folder, report, LIMITS, package=PACKAGE_PARENT)
        assert done.returncode == 0, done.stderr
        assert "user namespaces" in (report / "summary.md").read_text()
        feedback = (report / "feedback" / "prober.md").read_text().replace("\n", " ")
        assert REFUSED in feedback, feedback
        assert _total(report) == FULL_MARKS
    finally:
        shutil.rmtree(root, ignore_errors=True)
