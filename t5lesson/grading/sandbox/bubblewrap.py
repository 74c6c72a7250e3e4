"""The walls every kernel of a class shares, built by bubblewrap (`bwrap`) around the zygote or one launcher.

`command(keep, hide, writable, argv)` is `bwrap` with a root that is an allowlist (the system,
the Python installation and the course package, read-only), no network, and the grader's run
folders `writable` bound in, followed by `argv`. Inside it, each kernel makes its own namespaces
(`namespaces.enter`). See docs/grading.md, "Isolation, honestly".
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # world-writable on Debian: each kernel's own
SCRATCH = "/run/t5kernel"  # where each kernel mounts its own tmpfs before binding its folders out of it
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # programs and libraries
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf", "/etc/passwd",
       "/etc/group", "/etc/localtime", "/etc/hosts", "/etc/alternatives", "/etc/fonts")
CPU_INFO = ("/sys/devices/system/cpu",)  # online, possible, caches: what thread pools and BLAS may size themselves by
CGROUPS = "/sys/fs/cgroup"  # as root: the launcher joins the submission's cgroup, then unmounts it


def system_paths() -> list[str]:
    """The machine's paths every kernel sees read-only (links as links), where they exist."""
    return [p for p in (*SYSTEM, *ETC, *CPU_INFO) if os.path.lexists(p)]


def inside(path: str, folders: Iterable[str]) -> bool:
    """`path` is one of `folders` or lies in one."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def holding(folders: Iterable[str], paths: Iterable[str]) -> list[str]:
    """The `folders` that hold one of `paths` (real paths compared): the run folders a launcher must see."""
    reals = [os.path.realpath(p) for p in paths if p]
    return [f for f in dict.fromkeys(os.path.realpath(f) for f in folders) if any(inside(r, [f]) for r in reals)]


def _ways(targets: list[str]) -> list[str]:
    """`--dir` for each folder on the way to the `targets` that no target holds, open to all (bwrap's own are 0700)."""
    folders = dict.fromkeys(str(p) for target in targets for p in reversed(Path(target).parents[:-1]))
    ways = [f for f in sorted(folders, key=lambda f: f.count("/")) if not inside(f, targets)]
    return [arg for folder in ways for arg in ("--perms", "0755", "--dir", folder)]


def command(keep: Iterable[str], hide: Iterable[str], writable: Iterable[str | os.PathLike[str]],
            argv: Sequence[str]) -> list[str]:
    """`bwrap` with the class's walls around `argv` (see module doc).

    Every process in it keeps the capabilities of its namespaces (each kernel needs them to make
    its own, and drops them all before any student code runs); as a normal user they are those
    of an unprivileged user namespace. It dies with the grader.
    """
    args = ["bwrap", "--die-with-parent", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
    if os.geteuid() != 0:
        args.append("--unshare-user")
    args += ["--cap-add", "ALL"]
    args += ["--tmpfs", "/tmp", "--dir", "/var/tmp", "--dir", "/run/lock", "--symlink", "/run/lock", "/var/lock",
             "--dir", SCRATCH]  # first: a kept or writable folder may lie in /tmp
    shown = list(dict.fromkeys(os.path.realpath(p) for p in keep))
    bound = [os.path.realpath(w) for w in writable]
    args += _ways([p for p in system_paths() if not os.path.islink(p)] + shown + bound)
    for path in system_paths():
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    for path in shown:
        args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if os.geteuid() == 0 and os.path.isdir(CGROUPS):
        args += ["--bind", CGROUPS, CGROUPS]
    for folder in dict.fromkeys(os.path.realpath(w) for w in writable):
        args += ["--bind", folder, folder]
    for folder in dict.fromkeys(os.path.realpath(h) for h in hide):  # a hidden folder inside a shown one: covered
        if os.path.isdir(folder) and folder not in shown and inside(folder, shown):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    return [*args, "--remount-ro", "/", *argv]
