"""A kernel's two walls: the class's bubblewrap, and inside it the kernel's own namespaces. Linux only.

`command(keep, hide, writable, argv)` is `bwrap` with a read-only allowlisted root (the system, the Python
installation, the course package), no network and the run folders bound in, around the zygote or one launcher.
In it, `enter(plan)` gives each kernel its own mount, IPC, network and PID namespaces, one tmpfs of the plan's
size for /tmp, /var/tmp, /dev/shm, /run/lock and its home, the run folders covered (but for its home and socket
folder) and a fresh /proc; `become(uid)` drops to its user id, no capability and the system-call filter.
`probe()` says whether all this works here, and if not, why. See docs/grading.md, "Isolation, honestly".
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import select
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..course import PACKAGE_PARENT
from ..protocol import SandboxPlan
from . import seccomp
from .resources import descendants

WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")  # world-writable on Debian: each kernel's own
SCRATCH = "/run/t5kernel"  # where each kernel mounts its own tmpfs before binding its folders out of it
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # programs and libraries
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf", "/etc/passwd",
       "/etc/group", "/etc/localtime", "/etc/hosts", "/etc/alternatives", "/etc/fonts")
CPU_INFO = ("/sys/devices/system/cpu",)  # online, possible, caches: what thread pools and BLAS may size themselves by
CGROUPS = "/sys/fs/cgroup"  # as root: the launcher joins the submission's cgroup, then unmounts it
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x08000000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 0x4000, 1 << 18
MNT_DETACH, PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, CAPABILITY_VERSION_3 = 2, 1, 38, 0x20080522
# a read-only remount must keep the per-mount flags it found (a user namespace may not clear them)
_ST_TO_MS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: 8, os.ST_NOATIME: 1024,
             os.ST_NODIRATIME: 2048, os.ST_RELATIME: 1 << 21}
COVER_SIZE, PROBE_DISK_BYTES = "64k", 1 << 20  # the grader's own tmpfs mounts, not limits of a submission
SEAL_WAIT = 600.0  # seconds the supervisor waits for the kernel's sockets (the worker gives up sooner)
_PARENT_PIPE: list[int] = []  # in the kernel-to-be: the read end of a pipe its supervisor holds open (`become`)


@functools.cache
def load_libc() -> ctypes.CDLL:
    """libc, with the argument types of the calls made through it (os.unshare is Python 3.12+)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def check(result: int, what: str) -> None:
    """Raise OSError (with errno's words) where a libc call returned non-zero."""
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(x: str | None) -> bytes | None:
        return None if x is None else os.fsencode(x)

    check(load_libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _remount_read_only(target: str, bind: bool = True) -> None:
    flags = sum(ms for st, ms in _ST_TO_MS.items() if os.statvfs(target).f_flag & st)
    mount(None, target, None, MS_REMOUNT | MS_RDONLY | (MS_BIND if bind else 0) | flags)


def _bind(source: str, target: str, read_only: bool) -> None:
    """Bind `source` at `target`, read-only or not (a bind does not keep its source's read-only flag)."""
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        _remount_read_only(target)


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
        args += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind", path, path]
    for path in shown:
        args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if os.geteuid() == 0 and os.path.isdir(CGROUPS):
        args += ["--bind", CGROUPS, CGROUPS]
    for folder in dict.fromkeys(bound):
        args += ["--bind", folder, folder]
    for folder in dict.fromkeys(os.path.realpath(h) for h in hide):  # a hidden folder inside a shown one: covered
        if os.path.isdir(folder) and folder not in shown and inside(folder, shown):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    return [*args, "--remount-ro", "/", *argv]


@functools.cache
def _installation_path() -> tuple[str, ...]:
    """The interpreter's own sys.path, as it starts in isolated mode: the standard library and the site
    folders with what their .pth files add, not the folders a caller put first (PYTHONPATH, a test runner's)."""
    try:
        found = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                               capture_output=True, text=True, timeout=60, check=True)
        return tuple(str(p) for p in json.loads(found.stdout) if p)
    except (OSError, subprocess.SubprocessError, ValueError):
        return tuple(p for p in sys.path if p and inside(p, [sys.prefix, sys.base_prefix]))


def needed_paths() -> list[str]:
    """What a kernel must see of the Python environment (the plan's `keep`), real paths: the interpreter, its
    prefixes and own sys.path (with the user's site folder where it is on sys.path), and the course package; of a
    folder on sys.path that holds the package (a checkout, by PYTHONPATH or an editable install) only `t5lesson/`."""
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    entries = list(_installation_path())
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and user_site in sys.path:
        entries.append(user_site)
    paths = [os.path.realpath(sys.executable), *prefixes, str(PACKAGE_PARENT / "t5lesson")]
    for entry in entries:
        holds_package = os.path.isfile(os.path.join(entry, "t5lesson", "__init__.py"))
        paths.append(os.path.join(entry, "t5lesson") if holds_package and not inside(entry, prefixes) else entry)
    return list(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))


def _lay_way(path: str, is_dir: bool = True) -> None:
    """Make the folders on the way to `path` (and `path` itself), where a fresh tmpfs covers the machine's."""
    umask = os.umask(0o022)  # whatever the umask: a dropped user id must get through
    os.makedirs(path if is_dir else os.path.dirname(path), mode=0o755, exist_ok=True)
    os.umask(umask)
    if not os.path.lexists(path):
        open(path, "w").close()


def _scratch(plan: SandboxPlan, private: list[str]) -> str:
    """The kernel's one tmpfs of `disk_bytes`: a folder of it over each private place (1777); return its home."""
    mount("tmpfs", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(plan.disk_bytes)},mode=0755")
    for i, path in enumerate(private):
        folder = os.path.join(SCRATCH, f"w{i}")
        os.mkdir(folder)
        os.chmod(folder, 0o1777)
        _bind(folder, path, False)
    home = os.path.join(SCRATCH, "home")
    os.mkdir(home, 0o700)
    if plan.uid is not None:
        os.chown(home, plan.uid, plan.uid)
    return home


def _covers(plan: SandboxPlan, private: list[str]) -> list[str]:
    """Cover with a fresh tmpfs the hidden folders this world shows (the grader's run folders, bound in for the
    launcher) outside the private places; return them."""
    found: list[str] = []
    for folder in sorted(dict.fromkeys(os.path.realpath(h) for h in plan.hide), key=len):
        if os.path.isdir(folder) and not inside(folder, private) and not inside(folder, found):
            mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={COVER_SIZE},mode=0755")
            found.append(folder)
    return found


def enter(plan: SandboxPlan, sockets: Sequence[str] = ()) -> None:
    """Make the kernel's own world and move into it (see module doc), inside bubblewrap, with the capabilities
    of its namespaces. Returns in the kernel-to-be, process 1 of its new PID namespace; this process stays
    outside as its supervisor (`_supervise`). Call `become` once the kernel's limits are set."""
    private = list(dict.fromkeys(os.path.realpath(p) for p in WRITABLE if os.path.isdir(p)))
    sockets_folder = [os.path.realpath(p) for p in plan.writable_keep if os.path.isdir(p)]
    kept = [os.path.realpath(p) for p in plan.keep if p not in plan.writable_keep and os.path.exists(p)]
    check(load_libc().unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # opened in the new mount namespace (a bind's source must lie in it), before anything covers them
    handles = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in dict.fromkeys(kept + sockets_folder)}
    home = _scratch(plan, private)
    covers = _covers(plan, private)
    for path, handle in handles.items():  # what a private place or a cover hid, shown again
        if inside(path, private + covers):
            _lay_way(path, os.path.isdir(f"/proc/self/fd/{handle}"))
            _bind(f"/proc/self/fd/{handle}", path, path not in sockets_folder)
        os.close(handle)
    _lay_way(os.path.realpath(plan.home))
    _bind(home, os.path.realpath(plan.home), False)
    for folder in covers:
        _remount_read_only(folder, bind=False)
    for folder in (SCRATCH, CGROUPS):
        if os.path.ismount(folder):
            check(load_libc().umount2(os.fsencode(folder), MNT_DETACH), f"unmount {folder}")
    _supervise(sockets_folder if sockets else [], list(sockets))
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | 8)  # MS_NOEXEC


def _supervise(folders: list[str], sockets: list[str]) -> None:
    """Fork the kernel-to-be as process 1 of the new PID namespace; return in it. The parent ignores SIGINT
    (jupyter_client signals the whole group, the kernel included), turns SIGTERM into SIGKILL for the child,
    seals the socket `folders` once every path of `sockets` is there, and exits with the child's status."""
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
    if status is None:
        status = os.waitpid(pid, 0)[1]  # retried after the SIGTERM handler (PEP 475)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _seal_when_bound(pid: int, folders: list[str], sockets: list[str]) -> int | None:
    """Once the kernel has bound all its sockets, make the socket folders read-only (a socket on a read-only
    mount can still be connected to; nothing can be created there); the kernel's status if it ended first, else
    None. The worker runs no cell before it sees them sealed (`sealed`)."""
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
            _remount_read_only(folder)
    except OSError as exc:  # the worker sees it still writable and stops the run
        print(f"sandbox: {exc}", file=sys.stderr, flush=True)
    return None


def _read_only_mount(pid: int, folder: str) -> bool | None:
    """Is `folder` a read-only mount for the process `pid`? None where it is no mount point there (or no process)."""
    found = None
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                if re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]) == folder:  # a space is \040
                    found = "ro" in fields[5].split(",")
    except OSError:
        return None
    return found


def sealed(pid: int, folder: str) -> bool:
    """Is `folder` a read-only mount for the kernel's supervisor: the process `pid` (forked by the zygote), or
    the first below it that has it mounted (below a launcher that bubblewrap started)?"""
    found = _read_only_mount(pid, folder)
    for process in descendants(pid)[1:] if found is None else ():  # a scan of /proc: only where needed
        found = _read_only_mount(process, folder)
        if found is not None:
            break
    return bool(found)


def become(uid: int | None) -> None:
    """In the kernel-to-be, its limits set: take the kernel's user id (as root), die with the supervisor, keep no
    capability now or after any exec (a kernel forked from the zygote never execs, and would keep those of its
    user namespace: enough to lift a cover), and load the system-call filter."""
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise SystemExit("sandbox: could not drop privileges")
    libc = load_libc()
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after the last change of user id, which clears it
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for fd in _PARENT_PIPE:
        if select.select([fd], [], [], 0)[0]:  # readable means EOF: the supervisor died already
            os._exit(1)
        os.close(fd)
    _PARENT_PIPE.clear()
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    nothing = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits each
    check(libc.capset(header, nothing), "drop capabilities")
    seccomp.build().load()  # for good, in every process it starts too; libseccomp sets no-new-privileges first


def _unseen(plan: SandboxPlan) -> list[str]:
    """Each entry of / and of the course folder outside the allowlist: what a kernel must not see (one that leads
    to a shown path is seen; the writable folders are fresh in the kernel)."""
    system = system_paths()
    shown = [os.path.realpath(p) for p in (*system, *plan.keep, "/proc", "/dev", "/sys", SCRATCH)]
    shown += [p for p in system if os.path.islink(p)]
    fresh = [os.path.realpath(p) for p in WRITABLE] + [p for p in WRITABLE if os.path.islink(p)]
    candidates: list[str] = []
    for folder in ("/", str(PACKAGE_PARENT)):
        try:
            candidates += [os.path.join(folder, name) for name in os.listdir(folder)]
        except OSError:
            continue
    return [c for c in candidates
            if not inside(c, shown) and c not in fresh and not any(inside(s, [c]) for s in shown + fresh)]


_PROBE_CHECK = """
import ctypes, os, sys
def fail(why):
    print(why, flush=True)
    sys.exit(4)
if os.getpid() != 1:
    fail("the kernel is not process 1 of its PID namespace")
seen = [p for p in {unseen!r} if os.path.lexists(p)]
if seen:
    fail("the kernel sees paths outside its allowlist: " + ", ".join(seen[:5]))
if any(os.path.lexists(p) for p in ("/proc/1/root" + {secret!r}, {secret!r})):
    fail("the kernel sees a hidden folder")
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
    """None if kernels can be walled in here (checked in a kernel-to-be inside bubblewrap; as root with user id
    `uid`), else why and what to do."""
    if missing := seccomp.available():
        return missing
    if not sys.platform.startswith("linux"):
        return "kernel isolation needs Linux namespaces"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (on Debian and Ubuntu: apt install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="t5probe-") as tmp:
        secret, home = os.path.join(tmp, "hidden"), os.path.join(tmp, "home")
        os.mkdir(secret)
        os.mkdir(home, 0o755)
        plan = SandboxPlan(home=home, disk_bytes=PROBE_DISK_BYTES, hide=(secret, tmp), keep=tuple(needed_paths()),
                           uid=uid if os.geteuid() == 0 else None)
        source = _PROBE_CHECK.format(unseen=_unseen(plan), secret=secret, home=home,
                                     read_only=os.path.join(os.path.realpath(sys.prefix), "t5probe"))
        argv = command(plan.keep, plan.hide, [tmp], [sys.executable, "-m", __name__, json.dumps(plan.to_json()),
                                                     source])
        done = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT)), capture_output=True,
                              timeout=120)
    why = (done.stdout or done.stderr).decode(errors="replace").strip()[:2000]
    if done.returncode in (0, 4):
        return None if done.returncode == 0 else f"the kernel's wall does not hold here: {why}"
    who = ", even as root" if os.geteuid() == 0 else " as a normal user"
    causes = "docs/grading.md, 'Isolation, honestly', names the known causes: a sysctl on Debian, AppArmor on Ubuntu"
    return f"bubblewrap cannot make the kernels' namespaces here{who} ({causes})" + (f" ({why})" if why else "")


if __name__ == "__main__":  # inside bubblewrap, for the probe: become a kernel-to-be as a launcher does, then check
    plan = SandboxPlan.from_json(json.loads(sys.argv[1]))
    try:
        enter(plan)  # returns in the kernel-to-be; its supervisor exits with its status
        become(plan.uid)
    except OSError as exc:
        print(f"{type(exc).__name__}: {exc}", flush=True)
        sys.exit(3)
    os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", sys.argv[2]])
