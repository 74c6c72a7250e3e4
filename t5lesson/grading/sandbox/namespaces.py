"""Namespaces for one student's kernel: what it can see, write and reach. Linux only.

`enter(plan)` runs in the kernel's launcher (`t5lesson.grading.sandbox.launcher`) before it becomes the
kernel. It works the same as root and as a normal user:

- as root, the launcher unshares a mount, IPC, network and PID namespace, and later drops to a
  user id of its own (one per submission);
- as a normal user, it first unshares a *user* namespace (unprivileged user namespaces: Debian,
  Ubuntu and Fedora allow them by default) in which it maps only its own user id, so the
  kernel keeps the grader's user id but gains no privilege outside.

In that private world:
- every mount of the machine is read-only (except /proc, /sys and /dev), so the kernel can
  write nowhere but in its own scratch space;
- /tmp, /var/tmp, /dev/shm, /run/lock (/var/lock) and the kernel's home are folders of *one*
  tmpfs of `disk_bytes`: a submission's files, shared memory and locks together are bounded
  by it, and all of it vanishes with the kernel;
- System V IPC and POSIX message queues are private (IPC namespace) and vanish with it;
- the network is a namespace of its own with nothing in it (not even a loopback that is up):
  the kernel talks to the grader over Unix sockets in one folder bound in for it (ZeroMQ's
  `ipc` transport), and cannot reach any other kernel's sockets or ports;
- the kernel is process 1 of a PID namespace: it sees and signals only its own processes, and
  when it dies every process it started dies with it;
- the folders in `hide` are covered by empty read-only tmpfs mounts: every top-level folder that
  is not the system's (`outside_allowlist`: /home, /root, /srv, /opt, /work, /var/lib, ...), so
  no other checkout, home or data is seen, and inside what is bound back the submissions, the
  report, the solutions, the grader's run folder (and as a normal user the user's home); the
  paths in `keep` (the interpreter, its virtual environment, the course package folder alone, the
  kernel's socket folder) are bound back.
A kernel cannot undo any of this: it has no capability left (it runs as a plain user id), and
mounts inherited into a namespace it might create are locked together.

`probe()` says whether this works on this machine, and if not, why and what to do.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

from ..course import PACKAGE_PARENT
from ..protocol import SandboxPlan

__all__ = ["probe", "enter", "WRITABLE", "supervise", "die_with_parent", "expose", "needed_paths"]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x08000000
CLONE_NEWNET, CLONE_NEWPID = 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG = 1
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # world-writable on Debian
SPECIAL = ("/proc", "/sys", "/dev")  # left as they are (writes there need privileges or are devices)
# Sizes of the grader's own tmpfs mounts, not limits of a submission: a cover is empty and read-only
# to the kernel (or root's, mode 0711), and the probe writes one small file.
COVER_SIZE, EXPOSE_COVER_SIZE, PROBE_DISK_BYTES = "256k", "64k", 1 << 20
_FLAG_OF_OPTION = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                   "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data, what: str) -> None:
    enc = (lambda x: None if x is None else os.fsencode(x))
    _check(_libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), what)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _unshare(as_root: bool) -> None:
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID
    uid, gid = os.getuid(), os.getgid()
    if not as_root:
        flags |= CLONE_NEWUSER
    _check(_libc().unshare(flags), "unshare")
    if not as_root:  # map our own ids only: inside, we are who we were, with no power outside
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None, "make / private")


def _mounts() -> list[tuple[str, int]]:
    """(mount point, flags to keep when remounting) of every mount, in mount order."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape")
            flags = 0
            for option in fields[5].split(","):
                flags |= _FLAG_OF_OPTION.get(option, 0)
            found.append((point, flags))
    return found


def _read_only_everywhere() -> None:
    """Remount every mount read-only, except /proc, /sys and /dev (and what is under them)."""
    for point, flags in _mounts():
        if any(point == s or point.startswith(s + "/") for s in SPECIAL) and point != "/dev/shm":
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, None, f"read-only {point}")
        except OSError:
            if point == "/":
                raise
            # a mount hidden under another one, or one we may not touch: it is covered anyway


_ST_TO_MS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC, os.ST_NOATIME: MS_NOATIME,
             os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}


def _flags_of(path: str) -> int:
    """The per-mount flags of the mount holding `path` (a remount must keep them in a user namespace)."""
    flag = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if flag & st)


def _same(path: str, fd: int) -> bool:
    try:
        a, b = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _make_path(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            open(path, "w").close()


def _cover(folder: str, mode: str = "0755") -> None:
    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={COVER_SIZE},mode={mode}", f"cover {folder}")


def _writable_folders() -> list[str]:
    """The world-writable folders of WRITABLE that exist here, each once (/var/lock links to /run/lock)."""
    writable = []
    for path in WRITABLE:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in writable:
            writable.append(real)
    return writable


def _uncovers(path: str, writable: list[str]) -> bool:
    """Binding `path` back would undo a private folder (/tmp, say, where sys.path names it)."""
    return any(w == path or w.startswith(path.rstrip("/") + "/") for w in writable)


def _hold(path: str) -> int:
    """A handle on `path` that still reaches it after something is mounted over it."""
    return os.open(path, os.O_PATH | os.O_CLOEXEC)


def _bind(fd: int, target: str, what: str) -> None:
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND, None, what)


def _private_scratch(plan: SandboxPlan, writable: list[str]) -> dict[str, int]:
    """One tmpfs for everything the kernel may write, mounted on its (hidden) scratch folder.

    It gets a folder for each world-writable place and one for the home; they are returned held
    open (place they will serve -> handle), since binding /tmp may hide the scratch folder.
    """
    size = int(plan.disk_bytes)
    _mount("tmpfs", plan.scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=0755", "scratch tmpfs")
    places = {}
    for i, path in enumerate(writable):
        places[path] = os.path.join(plan.scratch, f"w{i}")
        os.mkdir(places[path])
        os.chmod(places[path], 0o1777)
    own_home = os.path.join(plan.scratch, "home")
    os.mkdir(own_home, 0o700)
    if plan.uid is not None:
        os.chown(own_home, plan.uid, plan.uid)
    held = {path: _hold(place) for path, place in places.items()}
    held[plan.home] = _hold(own_home)
    return held


def _cover_hidden(hide: list[str]) -> list[str]:
    """Lay an empty tmpfs over every folder to hide; return those covered."""
    covered = []
    for folder in hide:
        if os.path.isdir(folder):
            _cover(folder)
            covered.append(folder)
    return covered


def _bind_back(kept: dict[str, int], writable_keep) -> None:
    """What was covered on the way and is needed, bound back read-only (or writable, if so kept).

    Shortest path first, so a path inside another kept one lands on top of it. Every handle is closed.
    """
    for path in sorted(kept, key=len):
        fd = kept[path]
        if not _same(path, fd) or path in writable_keep:
            _make_path(path, os.path.isdir(f"/proc/self/fd/{fd}"))
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None, f"keep {path}")
            read_only = 0 if path in writable_keep else MS_RDONLY  # a bind copies the source's flags
            _mount(None, path, None, MS_REMOUNT | MS_BIND | read_only | _flags_of(path), None, f"keep {path}")
        os.close(fd)


def _cover_again(hide: list[str], keep: list[str]) -> list[str]:
    """A hidden folder inside one bound back (solutions/ in the course) is covered again; return those."""
    covered = []
    for folder in hide:
        inside_keep = any(k.startswith(folder.rstrip("/") + "/") for k in keep)
        if os.path.isdir(folder) and not inside_keep and os.listdir(folder):
            _cover(folder)
            covered.append(folder)
    return covered


def _seal(covered: list[str]) -> None:
    """The covers themselves read-only, now that what they hold is in place."""
    for folder in covered:
        try:
            _mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None,
                   f"read-only cover {folder}")
        except OSError:
            pass


def enter(plan: SandboxPlan) -> None:
    """Build the kernel's private world (see module doc). Called as root or as a normal user."""
    writable = _writable_folders()
    hide = [p for p in dict.fromkeys(plan.hide) if os.path.isdir(p)]
    keep = [p for p in dict.fromkeys(plan.keep) if os.path.exists(p) and not _uncovers(p, writable)]

    _unshare(os.geteuid() == 0)
    kept = {path: _hold(path) for path in keep}  # held before anything is laid over them
    _read_only_everywhere()
    held = _private_scratch(plan, writable)
    for path in writable:
        _bind(held[path], path, f"private {path}")
    covered = _cover_hidden(hide)
    _bind_back(kept, plan.writable_keep)
    if plan.uid is not None:  # as root, for another user id: open closed folders on the way to Python
        expose(needed_paths() + keep)
    covered += _cover_again(hide, keep)
    _make_path(plan.home, True)
    _bind(held[plan.home], plan.home, "home")
    for fd in held.values():
        os.close(fd)
    _seal(covered)


_PARENT_PIPE: list[int] = []


def supervise() -> None:
    """Fork the kernel-to-be as process 1 of the new PID namespace; this process stays outside.

    Returns in the child. The parent ignores SIGINT (jupyter_client signals the whole process
    group, so the kernel gets it anyway), turns SIGTERM into SIGKILL for the child, and exits
    with the child's status. Call `die_with_parent` in the child once its user id is final.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        _PARENT_PIPE.append(read_end)
        try:  # a /proc of this namespace: the kernel sees its own processes only
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "proc")
        except OSError:
            pass
        return
    os.close(read_end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def die_with_parent() -> None:
    """In the child: die when the supervisor dies (and so does everything in the namespace).

    Set after the last change of user id (which clears it); if the supervisor is already gone,
    its end of the pipe is closed, and the child stops here.
    """
    import select

    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for fd in _PARENT_PIPE:
        if select.select([fd], [], [], 0)[0]:  # readable means EOF: the supervisor died
            os._exit(1)
        os.close(fd)
    _PARENT_PIPE.clear()


def _private_namespace() -> None:
    """Give this process its own mount namespace, whose mounts never propagate back."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")


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
            data = f"size={EXPOSE_COVER_SIZE},mode=0711".encode()
            _check(libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, data), f"cover {folder}")
            for child, fd in fds.items():
                target = os.path.join(folder, child)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(target)
                else:
                    open(target, "w").close()
                source = os.fsencode(f"/proc/self/fd/{fd}")
                _check(libc.mount(source, os.fsencode(target), None, MS_BIND | MS_REC, None), f"expose {target}")
                os.close(fd)


# The top-level folders a kernel sees (read-only), all of them the system's own: everything else at
# the top (/home, /root, /srv, /opt, /mnt, /media, a /work of checkouts, ...) is covered, and under
# /var only /var/tmp (private to the kernel) and the /var/lock and /var/run links are left.
SYSTEM_TOP = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "sys", "dev", "tmp", "run")
VAR_KEPT = ("tmp", "lock", "run")


def outside_allowlist() -> list[str]:
    """The folders the kernel must not see because they are not the system's: every top-level folder
    but SYSTEM_TOP, and /var's but VAR_KEPT (links are left: covering one would cover its target).
    `needed_paths` inside them are bound back, so the interpreter and the course package stay."""
    found = []
    for parent, kept in (("/", SYSTEM_TOP + ("var",)), ("/var", VAR_KEPT)):
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            continue
        for name in names:
            path = os.path.join(parent, name)
            if name not in kept and os.path.isdir(path) and not os.path.islink(path):
                found.append(path)
    return found


def needed_paths() -> list[str]:
    """What the kernel must reach: the interpreter, its libraries and this package, and no more.

    The folder holding the package (a course checkout, named on sys.path by PYTHONPATH or an
    editable install) is replaced by the package folder itself, so the checkout's other folders
    (its solutions, a virtual environment's neighbours) are not bound back with it.
    """
    parent, package = str(PACKAGE_PARENT), str(PACKAGE_PARENT / "t5lesson")
    paths = [os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.exec_prefix, package]
    paths += [package if os.path.realpath(p) == os.path.realpath(parent) else p for p in sys.path if p]
    return list(dict.fromkeys(p for p in paths if os.path.exists(p)))


def probe(uid: int | None = None) -> str | None:
    """None if `enter` works here (checked in a child process that starts Python), else why and what to do."""
    if not sys.platform.startswith("linux"):
        return "kernel isolation needs Linux namespaces"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="t5probe-") as tmp:
        secret = os.path.join(tmp, "hidden")
        os.mkdir(secret)
        scratch, home = os.path.join(tmp, "scratch"), os.path.join(tmp, "home")
        os.mkdir(scratch, 0o700)
        os.mkdir(home, 0o700)
        # keep what a kernel needs: the interpreter and this package may live under /tmp, which goes private
        plan = SandboxPlan(home=home, scratch=scratch, disk_bytes=PROBE_DISK_BYTES, hide=(secret,),
                           keep=tuple(needed_paths()), uid=uid)
        open(os.path.join(secret, "file"), "w").close()
        check = (f"import os, sys; assert not os.path.isdir({secret!r}) or not os.listdir({secret!r}); "
                 f"os.chdir({home!r}); "
                 "open('x', 'w').write('x'); sys.exit(0 if os.getpid() == 1 else 5)")
        pid = os.fork()
        if pid == 0:
            try:
                enter(plan)
                supervise()
                if uid is not None:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                die_with_parent()
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", check])
            except BaseException:
                os._exit(3)
        _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return None
    if os.geteuid() == 0:
        return "mount, PID and network namespaces are not available here, even as root"
    return ("unprivileged user namespaces are not available here (on Debian and Ubuntu: sysctl "
            "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
            "kernel.apparmor_restrict_unprivileged_userns=0), so kernels cannot be isolated without root")
