"""Each kernel's own namespaces, made inside the class's bubblewrap (`sandbox.bubblewrap`). Linux only.

`enter(plan)` runs in the kernel's launcher (a child of the zygote, or a launcher that bwrap
started) before it becomes the kernel: its own mount, IPC, network and PID namespaces; one tmpfs
of the plan's size for /tmp, /var/tmp, /dev/shm, /run/lock and its home; the grader's run
folders covered but for its own home and socket folder; a fresh /proc. `probe()` says whether
this works here, and if not, why. See docs/grading.md, "Isolation, honestly".
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import subprocess
import sys

from ..course import PACKAGE_PARENT
from ..protocol import SandboxPlan
from . import bubblewrap
from .resources import descendants

__all__ = ["probe", "enter", "sealed", "die_with_parent", "drop_capabilities", "needed_paths"]

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
CLONE_NEWNET, CLONE_NEWPID = 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
CAPABILITY_VERSION_3 = 0x20080522

# Sizes of the grader's own tmpfs mounts, not limits of a submission: a cover holds only the way
# to the kernel's own folders, and the probe writes one small file.
COVER_SIZE, PROBE_DISK_BYTES = "64k", 1 << 20
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


def _inside(path: str, folders) -> bool:
    """`path` is one of `folders` or lies in one."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


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
    for path in bubblewrap.WRITABLE:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in writable:
            writable.append(real)
    return writable


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


_ST_TO_MS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC, os.ST_NOATIME: MS_NOATIME,
             os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}


def _flags_of(path: str) -> int:
    """The per-mount flags of the mount holding `path` (a remount must keep them in a user namespace)."""
    flag = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if flag & st)


# --------------------------------------------------------------------------- the kernel's own world


def _bind(source: str, target: str, read_only: bool, what: str) -> None:
    """Bind `source` at `target`, read-only or not (a bind does not keep its source's read-only flag)."""
    _mount(source, target, None, MS_BIND | MS_REC, None, what)
    if read_only:
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags_of(target), None, what)


def _lay_way(path: str, is_dir: bool = True) -> None:
    """Make the folders on the way to `path` (and `path` itself), where a fresh tmpfs covers the machine's."""
    done = "/"
    names = [p for p in path.split("/") if p]
    for k, name in enumerate(names):
        done = os.path.join(done, name)
        if os.path.lexists(done):
            continue
        if k == len(names) - 1 and not is_dir:
            open(done, "w").close()
        else:
            os.mkdir(done)
            os.chmod(done, 0o755)  # whatever the umask: a dropped user id must get through


def _scratch(plan: SandboxPlan, private: list[str]) -> str:
    """The kernel's one tmpfs of `disk_bytes`: a folder of it over each private place (1777); return its home folder."""
    _mount("tmpfs", bubblewrap.SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(plan.disk_bytes)},mode=0755",
           "scratch tmpfs")
    for i, path in enumerate(private):
        folder = os.path.join(bubblewrap.SCRATCH, f"w{i}")
        os.mkdir(folder)
        os.chmod(folder, 0o1777)
        _bind(folder, path, False, f"private {path}")
    home = os.path.join(bubblewrap.SCRATCH, "home")
    os.mkdir(home, 0o700)
    if plan.uid is not None:
        os.chown(home, plan.uid, plan.uid)
    return home


def _covers(plan: SandboxPlan, private: list[str]) -> list[str]:
    """Cover with a fresh tmpfs the hidden folders this world shows (the grader's run folders, bound in for the
    launcher) outside the private places; return them."""
    found: list[str] = []
    for folder in sorted(dict.fromkeys(os.path.realpath(h) for h in plan.hide), key=len):
        if os.path.isdir(folder) and not _inside(folder, private) and not _inside(folder, found):
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={COVER_SIZE},mode=0755", f"cover {folder}")
            found.append(folder)
    return found


def enter(plan: SandboxPlan, sockets=()) -> None:
    """Make the kernel's own world and move into it (see module doc). Called as root or as a normal user,
    inside bubblewrap, with the capabilities of its namespaces.

    Returns in the kernel-to-be: process 1 of its new PID namespace. This process stays outside as
    its supervisor (`_supervise`); once the kernel has bound `sockets` (their paths), the supervisor
    makes the socket folder read-only. Call `die_with_parent`, then `drop_capabilities`, once the
    kernel's user id is final.
    """
    private = _writable_folders()
    sockets_folder = [os.path.realpath(p) for p in plan.writable_keep if os.path.isdir(p)]
    kept = [os.path.realpath(p) for p in plan.keep if p not in plan.writable_keep and os.path.exists(p)]
    _check(load_libc().unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None, "make / private")
    # opened in the new mount namespace (a bind's source must lie in it), before anything covers them
    handles = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in dict.fromkeys(kept + sockets_folder)}
    home = _scratch(plan, private)
    covers = _covers(plan, private)
    for path, handle in handles.items():  # what a private place or a cover hid, shown again
        if _inside(path, private + covers):
            _lay_way(path, os.path.isdir(f"/proc/self/fd/{handle}"))
            _bind(f"/proc/self/fd/{handle}", path, path not in sockets_folder, f"show {path}")
        os.close(handle)
    _lay_way(os.path.realpath(plan.home))
    _bind(home, os.path.realpath(plan.home), False, "home")
    for folder in covers:
        _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None, f"read-only {folder}")
    for folder in (bubblewrap.SCRATCH, bubblewrap.CGROUPS):
        if os.path.ismount(folder):
            _check(load_libc().umount2(os.fsencode(folder), MNT_DETACH), f"unmount {folder}")
    _supervise(sockets_folder if sockets else [], list(sockets))
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "proc")


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


def _read_only_mount(pid: int, folder: str) -> bool | None:
    """Is `folder` a read-only mount for the process `pid`? None where it is no mount point there (or no process)."""
    try:
        found = [read_only for point, read_only, _ in _mounts(pid) if point == folder]
    except OSError:
        return None
    return found[-1] if found else None


def sealed(pid: int, folder: str) -> bool:
    """Is `folder` a read-only mount for the kernel's supervisor: the process `pid` (forked by the zygote), or
    the first below it that has it mounted (below a launcher that bubblewrap started)?"""
    found = _read_only_mount(pid, folder)
    if found is None:
        below = (_read_only_mount(process, folder) for process in descendants(pid)[1:])
        found = next((f for f in below if f is not None), None)
    return bool(found)


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
    system = bubblewrap.system_paths()
    shown = [os.path.realpath(p) for p in (*system, *plan.keep, "/proc", "/dev", "/sys", bubblewrap.SCRATCH)]
    shown += [p for p in system if os.path.islink(p)]
    fresh = [os.path.realpath(p) for p in bubblewrap.WRITABLE] + [p for p in bubblewrap.WRITABLE if os.path.islink(p)]
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
    os.write(REPORT, why.encode())
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




def _probe_inside(plan: SandboxPlan, check: str) -> int:
    """Inside bubblewrap: become a kernel-to-be as a launcher does, then run `check` in Python; its exit status.

    What the check finds wrong it writes to this process's stdout."""
    from . import seccomp

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            enter(plan)
            if plan.uid is not None:
                os.setgroups([])
                os.setgid(plan.uid)
                os.setuid(plan.uid)
            die_with_parent()
            drop_capabilities()
            seccomp.install()
            os.set_inheritable(write_end, True)
            os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", check.replace("REPORT", str(write_end))])
        except BaseException as exc:
            os.write(write_end, f"{type(exc).__name__}: {exc}".encode()[:500])
            os._exit(3)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as report:
        sys.stdout.buffer.write(report.read(2000))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) & 0xFF


def probe(uid: int | None = None) -> str | None:
    """None if kernels can be walled in here (checked in a kernel-to-be inside bubblewrap), else why and what to do."""
    if not sys.platform.startswith("linux"):
        return "kernel isolation needs Linux namespaces"
    missing = bubblewrap.missing()
    if missing:
        return missing
    import tempfile

    with tempfile.TemporaryDirectory(prefix="t5probe-") as tmp:
        secret, home = os.path.join(tmp, "hidden"), os.path.join(tmp, "home")
        os.mkdir(secret)
        os.mkdir(home, 0o755)
        open(os.path.join(secret, "file"), "w").close()
        plan = SandboxPlan(home=home, scratch=tmp, disk_bytes=PROBE_DISK_BYTES, hide=(secret, tmp),
                           keep=tuple(needed_paths()), uid=uid)
        check = _PROBE_CHECK.format(report="REPORT", unseen=_unseen(plan), secret=secret, home=home,
                                    read_only=os.path.join(os.path.realpath(sys.prefix), "t5probe"))
        argv = bubblewrap.command(plan.keep, plan.hide, [tmp], [sys.executable, "-m", __name__,
                                                                json.dumps(plan.to_json()), check])
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT))
        done = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    why = (done.stdout or done.stderr).decode(errors="replace").strip()[:2000]
    if done.returncode == 0:
        return None
    if done.returncode == 4:
        return f"the kernel's wall does not hold here: {why}"
    detail = f" ({why})" if why else ""
    if os.geteuid() == 0:
        return f"bubblewrap cannot make its namespaces here, even as root{detail}"
    return ("bubblewrap cannot make unprivileged user namespaces here (on Debian: sysctl "
            "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04: load the bwrap-userns-restrict AppArmor profile "
            f"of the apparmor-profiles package), so kernels cannot be isolated without root{detail}")


if __name__ == "__main__":  # inside bubblewrap, for the probe: PLAN.json CHECK
    sys.exit(_probe_inside(SandboxPlan.from_json(json.loads(sys.argv[1])), sys.argv[2]))
