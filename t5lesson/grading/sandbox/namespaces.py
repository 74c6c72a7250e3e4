"""Namespaces for one student's kernel: what it can see, write and reach. Linux only.
Hand-written rather than Docker: isolation with no daemon or image, as root and as a normal user.

`enter(plan)` runs in the kernel's launcher before it becomes the kernel, as root (mount, IPC,
network and PID namespaces, then a user id of its own) or as a normal user (inside a user
namespace that maps only its own id). The root is an allowlist, a tmpfs that `pivot_root` moves
into; nothing else of the machine is reachable. `probe()` says whether this works here, and if
not, why. See docs/grading.md, "Isolation, honestly" and "The kernel's root, piece by piece".
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import platform
import signal
import subprocess
import sys

from ..course import PACKAGE_PARENT
from ..protocol import SandboxPlan

__all__ = ["probe", "enter", "sealed", "WRITABLE", "SYSTEM", "ETC", "DEVICES", "die_with_parent", "drop_capabilities",
           "needed_paths"]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x08000000
CLONE_NEWNET, CLONE_NEWPID = 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
CAPABILITY_VERSION_3 = 0x20080522
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # world-writable on Debian
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # programs and libraries
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf", "/etc/passwd",
       "/etc/group", "/etc/localtime", "/etc/hosts", "/etc/alternatives", "/etc/fonts")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DEVICE_LINKS = {"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1",
                "/dev/stderr": "/proc/self/fd/2"}
CPU_INFO = ("/sys/devices/system/cpu",)  # online, possible, caches: what thread pools and BLAS may size themselves by
# Sizes of the grader's own tmpfs mounts, not limits of a submission: the root holds folders and
# links only, a cover is empty, and the probe writes one small file.
ROOT_SIZE, COVER_SIZE, PROBE_DISK_BYTES = "1m", "64k", 1 << 20
_FLAG_OF_OPTION = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                   "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}


@functools.cache
def load_libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data, what: str) -> None:
    enc = (lambda x: None if x is None else os.fsencode(x))
    _check(load_libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), what)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _unshare(as_root: bool) -> None:
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID
    uid, gid = os.getuid(), os.getgid()
    if not as_root:
        flags |= CLONE_NEWUSER
    _check(load_libc().unshare(flags), "unshare")
    if not as_root:  # map our own ids only: inside, we are who we were, with no power outside
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None, "make / private")


def _inside(path: str, folders) -> bool:
    """`path` is one of `folders` or lies in one."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


# --------------------------------------------------------------------------- what the kernel sees


@functools.cache
def _installation_path() -> tuple[str, ...]:
    """The interpreter's own sys.path: what it has started in isolated mode (no PYTHONPATH, no script folder).

    It holds the standard library and the site folders with what their .pth files add, but not
    the folders a caller put first (the current folder, a test runner's, PYTHONPATH's).
    """
    try:
        found = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                               capture_output=True, text=True, timeout=60, check=True)
        return tuple(p for p in json.loads(found.stdout) if p)
    except (OSError, subprocess.SubprocessError, ValueError):
        return tuple(p for p in sys.path if p and _inside(p, {sys.prefix, sys.base_prefix}))


def needed_paths() -> list[str]:
    """What a kernel must see of the Python environment (the plan's `keep`): real paths, each once.

    The interpreter and its prefixes, the installation's own sys.path entries (with the user's
    site folder where it is on sys.path) and the course package, `t5lesson/`. A folder on sys.path
    that holds the package (a course checkout, put there by PYTHONPATH or an old-style editable
    install) is not shown whole: only its `t5lesson/`. Other PYTHONPATH folders are not shown.
    """
    import site

    package = PACKAGE_PARENT / "t5lesson"
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    entries = list(_installation_path())
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and user_site in sys.path:
        entries.append(user_site)
    paths = [os.path.realpath(sys.executable), *prefixes]
    for entry in entries:
        holds_package = os.path.isfile(os.path.join(entry, "t5lesson", "__init__.py"))
        paths.append(os.path.join(entry, "t5lesson") if holds_package and not _inside(entry, prefixes) else entry)
    paths.append(str(package))
    real = [os.path.realpath(p) for p in paths if os.path.exists(p)]
    return list(dict.fromkeys(real))


def _writable_folders() -> list[str]:
    """The world-writable folders of WRITABLE that exist here, each once (/var/lock links to /run/lock)."""
    writable = []
    for path in WRITABLE:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in writable:
            writable.append(real)
    return writable


def _system_paths() -> list[str]:
    return [p for p in (*SYSTEM, *ETC, *DEVICES, *CPU_INFO) if os.path.lexists(p)]


def _read_only_views(plan: SandboxPlan, private: list[str]) -> list[tuple[str, str]]:
    """(path, real path) of everything shown read-only, shortest first; never one that holds a private folder."""
    wanted = dict.fromkeys([*_system_paths(), *(p for p in plan.keep if p not in plan.writable_keep)])
    views = [(path, os.path.realpath(path)) for path in wanted]
    return sorted(((p, r) for p, r in views if os.path.exists(r) and not any(_inside(f, [r]) for f in private)),
                  key=lambda view: len(view[0]))


def _mounts(pid: int | str = "self") -> list[tuple[str, bool, int]]:
    """(mount point, read-only?, flags to keep when remounting) of every mount, in mount order.

    Mount points are seen from the root of the process `pid`.
    """
    found = []
    with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            point = fields[4]
            if "\\" in point:  # octal escapes: a space is \040
                point = point.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape")
            options = fields[5].split(",")
            flags = 0
            for option in options:
                flags |= _FLAG_OF_OPTION.get(option, 0)
            found.append((point, "ro" in options, flags))
    return found


def _read_only_sources(reals: list[str]) -> None:
    """Make the machine's mounts that hold these paths (or lie inside them) read-only and nosuid, here.

    Only in this mount namespace, and before anything is bound: a bind copies its source's
    flags, so every view of them is read-only from the start, without a remount of its own.
    """
    mounts = _mounts()
    points = [point for point, _, _ in mounts]
    needed = set()
    for real in reals:
        needed.add(max((p for p in points if _inside(real, [p])), key=len))
        needed.update(p for p in points if _inside(p, [real]))
    for point, read_only, flags in mounts:
        if point in needed and not (read_only and flags & MS_NOSUID):
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | flags, None, f"read-only {point}")


_ST_TO_MS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC, os.ST_NOATIME: MS_NOATIME,
             os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}


def _flags_of(path: str) -> int:
    """The per-mount flags of the mount holding `path` (a remount must keep them in a user namespace)."""
    flag = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if flag & st)


# --------------------------------------------------------------------------- building the root


class _Root:
    """The kernel's new root, a small tmpfs mounted at `top`, and the trees of the machine bound into it."""

    def __init__(self, top: str):
        self.top = top
        self.bound: list[str] = []  # real paths of the machine shown here (read-only trees)
        _mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, f"size={ROOT_SIZE},mode=0755", "new root")

    def inside(self, path: str) -> str:
        return self.top + path

    def reach(self, path: str) -> str:
        """Lay the way to `path` in the root as it is on the machine; return where `path` really is.

        The folders on the way become empty folders, the symbolic links on the way the same
        links (`/lib -> usr/lib`), so that every way to a shown path works as on the machine.
        Inside a tree bound from the machine nothing is made: there the way is the machine's already.
        """
        done, rest, hops = "/", [p for p in path.split("/") if p], 0
        while rest:
            name = rest.pop(0)
            if name == ".":
                continue
            if name == "..":
                done = os.path.dirname(done)
                continue
            here = os.path.join(done, name)
            if os.path.islink(here):
                hops += 1
                if hops > 40:
                    raise OSError(f"too many links on the way to {path}")
                target = os.readlink(here)
                if not os.path.lexists(self.inside(here)):
                    os.symlink(target, self.inside(here))
                rest = [p for p in target.split("/") if p] + rest
                done = "/" if target.startswith("/") else done
                continue
            if rest and not os.path.lexists(self.inside(here)):
                self._folder(here)
            done = here
        return done

    def _folder(self, path: str) -> None:
        os.mkdir(self.inside(path))
        os.chmod(self.inside(path), 0o755)  # whatever the umask: a dropped user id must get through

    def mount_point(self, real: str, is_dir: bool) -> str:
        target = self.inside(real)
        if is_dir and not os.path.lexists(target):
            self._folder(real)
        elif not os.path.lexists(target):
            with open(target, "w"):
                pass
        return target

    def show(self, path: str) -> None:
        """Bind `path` of the machine (and lay the way to it) into the root; read-only, as its source is."""
        real = self.reach(path)
        if _inside(real, self.bound):
            return
        target = self.mount_point(real, os.path.isdir(real))
        _mount(real, target, None, MS_BIND | MS_REC, None, f"show {real}")
        self.bound.append(real)

    def bind_writable(self, source: str, path: str) -> str:
        """Bind the folder `source` at `path` in the root, writable; return the mount point."""
        real = self.reach(path)
        target = self.mount_point(real, True)
        _mount(source, target, None, MS_BIND, None, f"writable {real}")
        if os.statvfs(target).f_flag & os.ST_RDONLY:  # its source is one of the machine's mounts made read-only
            _mount(None, target, None, MS_REMOUNT | MS_BIND | _flags_of(target), None, f"writable {real}")
        return real

    def cover(self, folder: str) -> None:
        _mount("tmpfs", self.inside(folder), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
               f"size={COVER_SIZE},mode=0755", f"cover {folder}")

    def seal(self) -> None:
        """The root's own tmpfs read-only, now that every mount point and link is in it."""
        _mount(None, self.top, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None, "read-only root")


def _build(plan: SandboxPlan, private: list[str]) -> tuple[str, list[str]]:
    """The kernel's root, complete but for /proc; return its top and where the socket folder is bound.

    The scratch folder gets the kernel's one tmpfs of `disk_bytes`: a folder of it for each
    private place (1777), one for the home, and one the root's own small tmpfs is mounted on.
    Both tmpfs leave the namespace with the machine's root when the kernel moves in (`_pivot`):
    then only the folders bound into the root show the writable one.
    """
    _mount("tmpfs", plan.scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(plan.disk_bytes)},mode=0755",
           "scratch tmpfs")
    home, top = os.path.join(plan.scratch, "home"), os.path.join(plan.scratch, "root")
    os.mkdir(home, 0o700)
    if plan.uid is not None:
        os.chown(home, plan.uid, plan.uid)
    os.mkdir(top)
    root = _Root(top)
    writable = []
    for i, path in enumerate(private):
        folder = os.path.join(plan.scratch, f"w{i}")
        os.mkdir(folder)
        os.chmod(folder, 0o1777)
        writable.append(root.bind_writable(folder, path))
    for path in WRITABLE:  # the links among them (/var/lock -> /run/lock)
        if os.path.islink(path):
            root.reach(path)
    views = _read_only_views(plan, private)
    _read_only_sources([real for _, real in views])
    for path, _ in views:
        root.show(path)
    sockets = []
    for path in plan.writable_keep:  # the socket folder: writable until the kernel has bound its sockets
        if os.path.isdir(path):
            sockets.append(root.bind_writable(os.path.realpath(path), path))
    writable += sockets
    writable.append(root.bind_writable(home, plan.home))  # last: its way may lie in a private place (/tmp)
    for folder in _second_line(plan, root.bound, writable):
        root.cover(folder)
    for link, target in DEVICE_LINKS.items():
        if not os.path.lexists(root.inside(link)):
            os.symlink(target, root.inside(link))
    root.mount_point("/proc", True)
    root.seal()
    return top, sockets


def _second_line(plan: SandboxPlan, bound: list[str], writable: list[str]) -> list[str]:
    """The hidden folders that lie inside a tree shown from the machine (and hold nothing the kernel needs)."""
    found = []
    for folder in dict.fromkeys(os.path.realpath(h) for h in plan.hide):
        strictly_inside = any(folder.startswith(b.rstrip("/") + "/") for b in bound)
        needed = any(_inside(w, [folder]) for w in writable)
        if strictly_inside and not needed and os.path.isdir(folder):
            found.append(folder)
    return found


def _pivot(top: str) -> None:
    """Make `top` this mount namespace's root and detach the machine's root, with everything on it."""
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"pivot_root: unknown system call number on {platform.machine()}")
    os.chdir(top)
    libc = load_libc()
    _check(libc.syscall(number, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")


def enter(plan: SandboxPlan, sockets=()) -> None:
    """Build the kernel's private world and move into it (see module doc). Called as root or as a normal user.

    Returns in the kernel-to-be: process 1 of the new PID namespace, inside its new root. This
    process stays outside as its supervisor (`_supervise`); once the kernel has bound `sockets`
    (their paths), the supervisor makes the socket folder read-only. Call `die_with_parent` and
    then `drop_capabilities` once the kernel's user id is final.
    """
    private = _writable_folders()
    _unshare(os.geteuid() == 0)
    top, folders = _build(plan, private)
    _supervise(folders if sockets else [], list(sockets))
    # a /proc of this namespace, mounted while the machine's is still in it (a user namespace requires that)
    _mount("proc", os.path.join(top, "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "proc")
    _pivot(top)


# --------------------------------------------------------------------------- the kernel's process


_PARENT_PIPE: list[int] = []


def _supervise(folders: list[str], sockets: list[str]) -> None:
    """Fork the kernel-to-be as process 1 of the new PID namespace; this process stays outside.

    Returns in the child. The parent ignores SIGINT (jupyter_client signals the whole process
    group, so the kernel gets it anyway), turns SIGTERM into SIGKILL for the child, makes the
    socket `folders` read-only once every path of `sockets` is there (`_seal_when_bound`), and
    exits with the child's status. Call `die_with_parent` in the child once its user id is final.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        _PARENT_PIPE.append(read_end)
        return
    os.close(read_end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(pid, signal.SIGKILL))
    status = _seal_when_bound(pid, folders, sockets) if folders else None
    while status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


SEAL_WAIT = 600.0  # seconds the supervisor waits for the kernel's sockets (the worker gives up sooner)


def _seal_when_bound(pid: int, folders: list[str], sockets: list[str]) -> int | None:
    """Once the kernel has bound all its sockets, make the socket folders read-only (a socket on a read-only
    mount can still be connected to); the kernel's status if it ended first, else None.

    This process keeps the capabilities the kernel dropped. No student code runs before the
    worker sees the folder read-only (`sealed`); on a read-only mount nothing can be created.
    """
    import time

    deadline = time.monotonic() + SEAL_WAIT
    while not all(os.path.exists(path) for path in sockets):
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            return status
        if time.monotonic() > deadline:
            print("sandbox: the kernel never bound its sockets; its folder stays open", file=sys.stderr, flush=True)
            return None
        time.sleep(0.002)
    try:
        for folder in folders:
            _mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags_of(folder), None,
                   f"read-only {folder}")
    except OSError as exc:  # the worker sees it still writable and stops the run
        print(f"sandbox: {exc}", file=sys.stderr, flush=True)
    return None


def sealed(pid: int, folder: str) -> bool:
    """Is `folder` a read-only mount for the process `pid` (a kernel's supervisor: its socket folder)?"""
    try:
        found = [read_only for point, read_only, _ in _mounts(pid) if point == folder]
    except OSError:
        return False
    return bool(found) and found[-1]


def die_with_parent() -> None:
    """In the child: die when the supervisor dies (and so does everything in the namespace).

    Set after the last change of user id (which clears it); if the supervisor is already gone,
    its end of the pipe is closed, and the child stops here.
    """
    import select

    load_libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for fd in _PARENT_PIPE:
        if select.select([fd], [], [], 0)[0]:  # readable means EOF: the supervisor died
            os._exit(1)
        os.close(fd)
    _PARENT_PIPE.clear()


def drop_capabilities() -> None:
    """No capability left, now or after any exec (no setuid program can give one back).

    As root the change of user id has cleared them already. As a normal user the kernel holds
    every capability of its own user namespace until it execs, and a kernel forked from the
    zygote never does: with them it could remount its root writable or lift a cover.
    """
    libc = load_libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    nothing = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits each
    _check(libc.capset(header, nothing), "drop capabilities")


# --------------------------------------------------------------------------- the probe


def _unseen(plan: SandboxPlan) -> list[str]:
    """Paths of this machine a kernel must not see: each entry of / and of the course folder outside the allowlist.

    An entry is seen where it is shown, lies in a shown path, or leads to one (then as an empty
    folder); every other one must be missing in the kernel's root. The writable folders are fresh
    in the kernel: they are seen, but nothing of the machine's inside them (a checkout under /tmp
    shows only what the plan keeps).
    """
    shown = [os.path.realpath(p) for p in (*_system_paths(), *plan.keep, "/proc", "/dev", "/sys")]
    shown += [p for p in _system_paths() if os.path.islink(p)]
    fresh = [os.path.realpath(p) for p in WRITABLE] + [p for p in WRITABLE if os.path.islink(p)]
    candidates = []
    for folder in ("/", str(PACKAGE_PARENT)):
        try:
            candidates += [os.path.join(folder, name) for name in os.listdir(folder)]
        except OSError:
            continue
    return [c for c in candidates
            if not _inside(c, shown) and c not in fresh and not any(_inside(s, [c]) for s in shown + fresh)]


_PROBE_CHECK = """
import os, sys
def fail(why):
    os.write({report}, why.encode())
    sys.exit(4)
if os.getpid() != 1:
    fail("the kernel is not process 1 of its PID namespace")
seen = [p for p in {unseen!r} if os.path.lexists(p)]
if seen:
    fail("the kernel sees paths outside its allowlist: " + ", ".join(seen[:5]))
if any(os.path.lexists(p) for p in ("/proc/1/root" + {secret!r}, {secret!r})):
    fail("the kernel sees a hidden folder")
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) == 0 or ctypes.get_errno() != 1:
    fail("the system-call filter does not refuse unshare with EPERM")
effective = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")]
if effective != ["0000000000000000"]:
    fail("the kernel kept capabilities: " + " ".join(effective))
try:
    open({read_only!r}, "w").close()
except OSError:
    pass
else:
    os.unlink({read_only!r})
    fail("the kernel can write into its read-only root")
os.chdir({home!r})
open("x", "w").write("x")
"""


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
        open(os.path.join(secret, "file"), "w").close()
        plan = SandboxPlan(home=home, scratch=scratch, disk_bytes=PROBE_DISK_BYTES, hide=(secret,),
                           keep=tuple(needed_paths()), uid=uid)
        read_end, write_end = os.pipe()
        check = _PROBE_CHECK.format(report=write_end, unseen=_unseen(plan), secret=secret, home=home,
                                    read_only=os.path.join(os.path.realpath(sys.prefix), "t5probe"))
        pid = os.fork()
        if pid == 0:
            try:
                os.close(read_end)
                enter(plan)
                if uid is not None:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                die_with_parent()
                drop_capabilities()
                from . import seccomp

                seccomp.install()
                os.set_inheritable(write_end, True)
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", check])
            except BaseException as exc:
                os.write(write_end, f"{type(exc).__name__}: {exc}".encode()[:500])
                os._exit(3)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as report:
            why = report.read(2000).decode(errors="replace")
        _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return None
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 4:
        return f"the kernel's wall does not hold here: {why}"
    detail = f" ({why})" if why else ""
    if os.geteuid() == 0:
        return f"mount, PID and network namespaces are not available here, even as root{detail}"
    return ("unprivileged user namespaces are not available here (on Debian and Ubuntu: sysctl "
            "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
            f"kernel.apparmor_restrict_unprivileged_userns=0), so kernels cannot be isolated without root{detail}")
