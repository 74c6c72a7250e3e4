"""What a walled kernel costs to start, three ways, side by side in one run; and the grading rate with and without
the fork server, and with and without the worker pool.

    python benchmarks/kernel_start.py                 # 8 kernels each way, then 40 submissions graded twice
    python benchmarks/kernel_start.py --kernels 16 --count 100

Kernel start is the time from asking for a kernel to its first kernel_info reply, and the CPU
seconds its processes used by then (user + system), median of --kernels starts, one at a time:
- fork server: the zygote (`sandbox.zygote`), inside the class's bubblewrap, forks a launcher
  that makes its own namespaces (`sandbox.namespaces`) and runs the kernel: no interpreter
  start, no import;
- bwrap, cold: `bwrap` with the same walls (read-only system and Python, a private /tmp, no
  network, the seccomp filter) around `python -m t5lesson.grading.sandbox.kernel`;
- bwrap, warm pool: the same kernels started ahead; what is left per submission is the hand-over
  (connecting and a first reply). The CPU of starting them is still spent, only earlier.
Then the class benchmark's folder (benchmarks/grade_class.py, --exercise) is graded with the
instructor's command, alternating: as today; with the fork server switched off (each kernel's
launcher a new interpreter, the cost a kernel per bwrap pays); and with the worker pool switched
off (a new `python -m t5lesson.grading.run.worker JOB.json` per submission, the fork server on).
Both switches are benchmark-only patches (`PATCHES`). A warm pool of kernels cannot beat the
second where the cores are busy: it moves the same CPU seconds earlier, it does not remove them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_class import _class  # noqa: E402

from t5lesson.grading.protocol import KERNEL_MODULE, LaunchConfig, Walls  # noqa: E402
from t5lesson.grading.run.execute import worker_env  # noqa: E402
from t5lesson.grading.sandbox import launcher, namespaces, seccomp, zygote  # noqa: E402
from t5lesson.grading.sandbox.resources import kill_group, remove_quietly  # noqa: E402
from t5lesson.grading.sandbox.walls import uids  # noqa: E402

CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1: the CPU of a process tree, killed or orphaned ones included
NO_FORK_SERVER = ("import sys; from t5lesson.grading.sandbox import zygote; "
                  "zygote.Zygote.__enter__ = lambda self: self; zygote.Zygote.close = lambda self: None; "
                  "from t5lesson.grade import main; sys.exit(main(sys.argv[1:]))")
NO_POOL = ("import sys, contextlib; from t5lesson.grading.run import execute; "
           "execute.WorkerPool = lambda *a: contextlib.nullcontext(None); "
           "from t5lesson.grade import main; sys.exit(main(sys.argv[1:]))")
PATCHES = {"grader": None, "no fork server": NO_FORK_SERVER, "no pool": NO_POOL}
MODES = {"grader": "the grader (fork server in bwrap, worker pool)",
         "no fork server": "one bwrap per kernel, cold (pool kept)",
         "no pool": "a new worker process per submission"}


class Slot:
    """One kernel's folders: home, sockets, connection file; as root, with `own_uid`, the kernel's user id
    (bwrap's kernels here keep the grader's id, without any capability)."""

    def __init__(self, base: Path, i: int, own_uid: bool = False):
        self.folder = base / f"k{i}"
        self.home, self.ipc, self.scratch = self.folder / "home", self.folder / "ipc", self.folder / "scratch"
        for path in (self.folder, self.home, self.ipc, self.scratch):
            path.mkdir(mode=0o700)
        os.chmod(self.folder, 0o755)
        self.uid = uids(i + 1)[i] if own_uid and os.geteuid() == 0 else None
        if self.uid is not None:
            for path in (self.home, self.ipc):
                os.chown(path, self.uid, self.uid)
        self.connection = str(self.folder / "connection.json")
        write_connection_file(self.connection, transport="ipc", ip=str(self.ipc / "k"))
        os.chmod(self.connection, 0o644)

    def ready(self, timeout: float = 60.0) -> float:
        """Connect and wait for the kernel's first reply; the monotonic time it came."""
        client = BlockingKernelClient(connection_file=self.connection)
        client.load_connection_file()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=timeout)
        finally:
            client.stop_channels()
        return time.monotonic()


def _cpu(pid: int) -> float:
    """User + system seconds of a process and everything below it."""
    try:
        top = psutil.Process(pid)
        total = 0.0
        for process in [top, *top.children(recursive=True)]:
            times = process.cpu_times()
            total += times.user + times.system
        return total
    except psutil.Error:
        return float("nan")


def _launch_config(slot: Slot) -> Path:
    walls = Walls(keep=tuple(namespaces.needed_paths()))
    plan = walls.plan(uid=slot.uid, home=str(slot.home), disk_bytes=256 << 20,
                      ipc_dir=str(slot.ipc))
    path = slot.folder / "sandbox.json"
    LaunchConfig(home=str(slot.home), ipc_dir=str(slot.ipc), isolation=plan).write(path)
    return path


def fork_server(base: Path, count: int) -> list[tuple[float, float]]:
    """(seconds, CPU seconds) of each kernel forked by today's zygote."""
    found = []
    env = launcher.kernel_environment(worker_env(base), str(base / "zygote"))
    walls = Walls(keep=tuple(namespaces.needed_paths()))
    with zygote.Zygote(base / "zygote", [], env, walls=walls, writable=[base]) as parent:
        for i in range(count):
            slot = Slot(base, i, own_uid=True)
            config = _launch_config(slot)
            start = time.monotonic()
            with open(slot.folder / "log", "wb") as log:
                kernel = zygote.spawn(parent.socket, [str(config), slot.connection],
                                      launcher.kept_environment(os.environ), str(slot.folder),
                                      (0, log.fileno(), log.fileno()))
            end = slot.ready()
            found.append((end - start, _cpu(kernel.pid)))
            kill_group(kernel.pid)
            kernel.wait(10)
    return found


def bwrap_argv(slot: Slot, seccomp_fd: int) -> list[str]:
    """A kernel inside bubblewrap with the grader's walls (the benchmark's version of them)."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(256 << 20), "--tmpfs", "/tmp"]
    for path in ("/usr", "/etc/ld.so.cache", "/etc/passwd", "/etc/localtime", "/sys/devices/system/cpu"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for link in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
    for path in namespaces.needed_paths():
        argv += ["--ro-bind", path, path]
    argv += ["--bind", str(slot.ipc), str(slot.ipc), "--ro-bind", slot.connection, slot.connection,
             "--perms", "0700", "--size", str(64 << 20), "--tmpfs", str(slot.home), "--chdir", str(slot.home),
             "--seccomp", str(seccomp_fd)]
    return [*argv, sys.executable, "-m", KERNEL_MODULE, "-f", slot.connection, "--HistoryManager.enabled=False"]


def start_bwrap(slot: Slot) -> subprocess.Popen:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as file:
        seccomp.build().export_bpf(file)
    env = launcher.kernel_environment(worker_env(slot.folder), str(slot.home))
    with open(slot.folder / "log", "wb") as log:
        return subprocess.Popen(bwrap_argv(slot, read_end), env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, pass_fds=(read_end,), start_new_session=True)


def bwrap_cold(base: Path, count: int) -> list[tuple[float, float]]:
    found = []
    for i in range(count):
        slot = Slot(base, 100 + i)
        start = time.monotonic()
        process = start_bwrap(slot)
        end = slot.ready()
        found.append((end - start, _cpu(process.pid)))
        kill_group(process.pid)
        process.wait()
    return found


def bwrap_pool(base: Path, count: int) -> list[tuple[float, float]]:
    """Start `count` kernels ahead (two at a time, as a pool refilling beside two grading jobs), then hand each over."""
    slots = [Slot(base, 200 + i) for i in range(count)]
    processes = []
    for i, slot in enumerate(slots):
        processes.append(start_bwrap(slot))
        if i % 2:
            time.sleep(1.0)
    time.sleep(3.0)
    found = []
    for slot, process in zip(slots, processes, strict=True):
        start = time.monotonic()
        end = slot.ready()
        found.append((end - start, _cpu(process.pid)))
    for process in processes:
        kill_group(process.pid)
        process.wait()
    return found


def _line(name: str, found: list[tuple[float, float]]) -> str:
    seconds = statistics.median(s for s, _ in found)
    cpu = statistics.median(c for _, c in found)
    return f"  {name:<30} start {seconds * 1000:7.0f} ms   CPU {cpu * 1000:6.0f} ms   (median of {len(found)})"


def _grade(folder: Path, out: Path, mode: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the grader and every process below it) of one `t5grade grade`."""
    args = ["grade", str(folder), "--out", str(out), "--quiet"]
    patch = PATCHES[mode]
    command = [sys.executable, "-m", "t5lesson.grade", *args] if patch is None else \
        [sys.executable, "-c", patch, *args]
    group = CPUACCT / f"t5bench-{os.getpid()}"
    group.mkdir(exist_ok=True)
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
    if done.returncode != 0:
        raise SystemExit(f"the grader failed:\n{done.stderr}")
    rows = (out / "gradebook.csv").read_text().splitlines()[1:]
    assert len(rows) == len(list(folder.iterdir())), rows
    seconds = time.monotonic() - start
    used = int((group / "cpuacct.usage").read_text()) / 1e9
    group.rmdir()
    return seconds, used


def rates(tmp: Path, count: int, exercise: str, repeat: int) -> list[str]:
    """The class folder graded by the grader and by each of its simpler replacements (`MODES`), in turn."""
    folder = tmp / "class"
    _class(folder, count, exercise)
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    for k in range(repeat):
        for mode in list(MODES)[:: 1 if k % 2 == 0 else -1]:
            times[mode].append(_grade(folder, tmp / f"out{k}{mode}", mode))
    rate = {mode: count * 60 / min(w for w, _ in t) for mode, t in times.items()}
    cpu = {mode: min(c for _, c in t) / count for mode, t in times.items()}
    cores = len(os.sched_getaffinity(0))
    lines = [f"  grading {count} submissions of exercise {exercise}, {repeat} turns, best of each "
             f"(CPU: of the grader and all below it, per submission; ceiling: cores x 60 / CPU):"]
    for mode, name in MODES.items():
        walls = ", ".join(f"{w:.1f} s" for w, _ in times[mode])
        lines.append(f"    {name:<44} {rate[mode]:6.1f} per minute ({walls}), "
                     f"CPU {cpu[mode]:.2f} s, ceiling {cores * 60 / cpu[mode]:.0f} per minute; "
                     f"{rate[mode] / rate['grader']:.0%} of the grader's")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=8)
    parser.add_argument("--count", type=int, default=40, help="submissions graded each way (0: skip)")
    parser.add_argument("--exercise", default="01")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    if shutil.which("bwrap") is None:
        raise SystemExit("bubblewrap is missing: apt install bubblewrap")
    if args.count and (os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists()):
        raise SystemExit("the grading rates need root and a cgroup v1 cpuacct hierarchy (to count CPU); --count 0")
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} cores, load average {os.getloadavg()[0]:.1f}, as {'root' if os.geteuid() == 0 else 'a user'}")
    base = Path(tempfile.mkdtemp(prefix="t5start-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        print("kernel start, request to first reply:")
        print(_line("fork server in bwrap (the grader)", fork_server(base, args.kernels)))
        print(_line("bwrap, cold", bwrap_cold(base, args.kernels)))
        print(_line("bwrap, warm pool (hand-over)", bwrap_pool(base, args.kernels)))
        if args.count:
            for line in rates(base, args.count, args.exercise, args.repeat):
                print(line)
        print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        remove_quietly(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
