"""The kernel's system-call filter: Docker's default deny-list, built with libseccomp (through pyseccomp).

A call on the list (namespaces, mounts, ptrace, the keyring, bpf, perf_event_open, userfaultfd,
io_uring, modules, kexec, swap, reboot, clocks, file handles, ...) fails with EPERM; the rest are
allowed. `build().load()` loads it into a kernel-to-be for good. What it refuses and why: docs/grading.md,
"The system-call filter".
"""
from __future__ import annotations

import errno
import functools
import importlib
from types import ModuleType
from typing import Any

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr", "unshare", "setns",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init", "lookup_dcookie",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "nfsservctl",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "syslog", "vhangup", "uselib", "ustat", "sysfs",
    "_sysctl", "vm86", "vm86old",
)
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                   0x00000080)  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
PERSONALITY_FLAGS = (0x0040000, 0x0400000)  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC


@functools.cache
def _library() -> ModuleType | None:
    """pyseccomp (untyped: its names are Any here), or None where it (or libseccomp itself) is missing."""
    try:
        return importlib.import_module("pyseccomp")
    except (ImportError, OSError):
        return None


def available() -> str | None:
    """None when the filter can be built here, else why not and what to install."""
    if _library() is None:
        return "the system-call filter needs libseccomp and pyseccomp (apt install libseccomp2; pip install pyseccomp)"
    return None


def build() -> Any:
    """The filter, as a pyseccomp.SyscallFilter (not loaded; `export_bpf(file)` writes it for `bwrap --seccomp FD`)."""
    seccomp = _library()
    assert seccomp is not None, available()
    refuse = seccomp.ERRNO(errno.EPERM)
    found = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for action, name in [*((refuse, name) for name in DENIED), (seccomp.ERRNO(errno.ENOSYS), "clone3")]:
        try:
            found.add_rule(action, name)
        except (ValueError, RuntimeError, OSError):  # no such call on this architecture
            continue
    for call, flags in (("clone", NAMESPACE_FLAGS), ("personality", PERSONALITY_FLAGS)):
        for flag in flags:
            found.add_rule(refuse, call, seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    return found
