"""Run one composed notebook in a worker process (`run_worker`), and clean up after it whatever happened.

The batch's private folders (`work_area`) and its run step (`run_step`: pooled workers, `WorkerPool`,
their kernels forked from one zygote) are here too. See docs/grading.md, "How a submission is run".
"""
from __future__ import annotations

import functools
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, cast

from ..authoring.notebook_format import writes
from ..course import PACKAGE_PARENT
from ..errors import GradingError
from ..protocol import RUNNER_MODULE, Job, LaunchConfig, Limits, RunEnd, RunResult, Walls
from ..records import loads
from ..sandbox import launcher, zygote
from ..sandbox.resources import Cgroup, kill_group, remove_quietly
from .compose import Notebook, Prepared

SOCKET_PATH_MAX = 107 - len("/tmpXXXXXXXX/k-65535")  # a Unix socket's path is at most 107 bytes
# (prepared notebook, limits, work folder, the kernel's uid, the class's walls) -> (result or None, seconds)
RunStep = Callable[[Prepared, Limits, Path, "int | None", "Walls | None"], "tuple[RunResult | None, float]"]


def worker_env(job_dir: Path) -> dict[str, str]:
    """A worker's environment: the grader's, with its runtime folder private and the course importable."""
    return dict(os.environ, JUPYTER_RUNTIME_DIR=str(job_dir), PYDEVD_DISABLE_FILE_VALIDATION="1",
                JUPYTER_PLATFORM_DIRS="1",
                PYTHONPATH=os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p))


def _remove(*folders: Path | None) -> None:
    """Remove run folders, whatever a kernel left in them (unless T5LESSON_GRADE_KEEP is set, to debug the
    grader); an error is logged to stderr, never raised: the batch and its reports come first."""
    if os.environ.get("T5LESSON_GRADE_KEEP"):
        return
    for folder in filter(None, folders):
        try:
            remove_quietly(folder)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            print(f"t5grade: could not remove {folder}: {type(exc).__name__}", file=sys.stderr)


def _socket_folder() -> Path:
    """A private folder for the kernels' socket folders, with a path short enough for Unix sockets."""
    for base in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if os.path.isdir(base) and len(os.fsencode(base)) + len("/t5ipc-XXXXXXXX") <= SOCKET_PATH_MAX:
            try:
                folder = Path(tempfile.mkdtemp(prefix="t5ipc-", dir=base))
            except OSError:
                continue
            os.chmod(folder, 0o711)
            return folder
    raise GradingError("no folder with a path short enough for the kernels' sockets (set TMPDIR to a short path)")


@contextmanager
def work_area() -> Generator[tuple[Path, Path]]:
    """(work folder, socket folder): the batch's private folders, removed at the end."""
    work = Path(tempfile.mkdtemp(prefix="t5grade-"))
    ipc_root = None
    try:
        os.chmod(work, 0o711)
        (work / "jobs").mkdir(mode=0o700)
        (work / "scratch").mkdir(mode=0o711)
        ipc_root = _socket_folder()
        (work / "ipc").symlink_to(ipc_root)
        yield work, ipc_root
    finally:
        _remove(work, ipc_root)


def _read_result(target: Path, limits: Limits) -> RunResult | None:
    """The result file the worker wrote, read once and within bounds; None when there is none to read."""
    if not target.exists() or target.stat().st_size >= limits.max_result_mb * 2 ** 20:
        return None
    try:
        data: object = loads(target.read_text(encoding="utf-8"), max_depth=Limits.RESULT_DEPTH, constants=True)
    except (ValueError, UnicodeDecodeError):
        return None
    return RunResult.from_json(cast(dict[str, Any], data)) if isinstance(data, dict) else None


MAX_JOBS = 200  # jobs one pooled worker runs before it is replaced


class _Worker:
    def __init__(self, env: dict[str, str], log: Path):
        jobs_read, self._jobs = os.pipe()
        self._done, done_write = os.pipe()
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", RUNNER_MODULE, "--serve", str(jobs_read), str(done_write)],
                cwd=log.parent, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                pass_fds=(jobs_read, done_write), start_new_session=True)
        os.close(jobs_read)
        os.close(done_write)
        self.jobs_run = 0

    def run(self, job: Path, timeout: float) -> bool:
        """True when the worker said it finished `job` within `timeout` seconds (once more at most)."""
        self.jobs_run += 1
        try:
            os.write(self._jobs, os.fsencode(str(job)) + b"\n")
        except OSError:
            return False
        answer = b""
        while not answer.endswith(b"\n"):
            if not select.select([self._done], [], [], timeout)[0]:
                return False
            more = os.read(self._done, 256)
            if not more:
                return False
            answer += more
        return True

    def close(self) -> None:
        """Stop the worker and everything in its process group."""
        for fd in (self._jobs, self._done):
            with suppress(OSError):
                os.close(fd)
        kill_group(self.process.pid)
        self.process.wait()


class WorkerPool:
    """One long-lived worker per grading thread (`python -m ...run.worker --serve JOBS DONE`), which keeps its
    imported modules between jobs; every job still gets a fresh kernel. A worker is replaced when a job outlives
    its hard limit, when a run ends in any other way than completed (or out of time), or after `MAX_JOBS` jobs,
    so that a notebook that broke the worker cannot touch the next one (docs/grading.md, "Speed").
    `with WorkerPool(env, folder) as pool: pool.run(job, ...)`."""

    def __init__(self, env: dict[str, str], folder: Path):
        self.env, self.folder = env, Path(folder)
        self._local = threading.local()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    def run(self, job_dir: Path, limits: Limits) -> RunResult | None:
        """Run the job in `job_dir` in this thread's worker (replaced as the class says); its result, or None."""
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None or worker.process.poll() is not None:
            with self._lock:
                worker = _Worker(self.env, self.folder / f"worker-{len(self._all)}.log")
                self._all.append(worker)
            self._local.worker = worker
        answered = worker.run(job_dir / "job.json", limits.hard_limit())
        result = _read_result(job_dir / "result.json", limits) if answered else None
        if result is None or result.ended not in (RunEnd.COMPLETED, RunEnd.TIME_LIMIT) or worker.jobs_run >= MAX_JOBS:
            worker.close()
            self._local.worker = None
            with self._lock:
                self._all.remove(worker)
        return result

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()


def _execute(job_dir: Path, limits: Limits, pool: WorkerPool | None) -> RunResult | None:
    """Run the job in `job_dir` in one of `pool`'s workers, else a new process, killed with its process
    group if it outlives the run's hard limit; its result, or None."""
    if pool is not None:
        return pool.run(job_dir, limits)
    with open(job_dir / "worker.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, str(job_dir / "job.json")], cwd=job_dir,
                                env=worker_env(job_dir), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
        try:
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=limits.hard_limit())
        finally:
            kill_group(proc.pid)
            proc.wait()
    return _read_result(job_dir / "result.json", limits)


def run_worker(prep: Prepared, limits: Limits, work: Path, uid: int | None, walls: Walls | None,
               zygote: str | None = None, pool: WorkerPool | None = None) -> tuple[RunResult | None, float]:
    """Run one prepared notebook; return the worker's result (None if it had to be killed) and the seconds.

    `uid` is the kernel's own user id when the grader is root; `zygote` the batch's zygote socket
    (None: each launcher a new process); `pool` the batch's workers (None: a new worker process).
    """
    job_dir = Path(tempfile.mkdtemp(dir=work / "jobs"))
    home = Path(tempfile.mkdtemp(dir=work / "scratch"))
    # the kernel's sockets: only it and the grader get in; work/ipc links to a folder with a short path
    ipc_dir = Path(os.path.realpath(tempfile.mkdtemp(dir=work / "ipc")))
    if uid is not None:
        os.chown(home, uid, uid)
        os.chown(ipc_dir, uid, uid)
    os.chmod(home, 0o700)
    (job_dir / "run.ipynb").write_text(writes(prep.notebook), encoding="utf-8")
    memory, pid_file = limits.memory_mb * 2 ** 20, job_dir / "kernel.pid"
    cgroup = Cgroup.create(f"t5grade-{job_dir.name}", memory, limits.max_processes)
    plan = walls and walls.plan(uid=uid, home=str(home), disk_bytes=limits.disk_mb * 2 ** 20, ipc_dir=str(ipc_dir))
    config = LaunchConfig(  # what the kernel's launcher applies to itself: the limits, the cgroup, the walls
        home=str(home), pid_file=str(pid_file), ipc_dir=str(ipc_dir), memory_bytes=memory,
        cpu_seconds=limits.cpu_seconds(), file_bytes=limits.max_file_mb * 2 ** 20, max_processes=limits.max_processes,
        cgroup=tuple(str(p) for p in cgroup.paths) if cgroup else (), watch_memory=None if cgroup else memory,
        zygote=zygote or "", isolation=plan)
    Job(notebook=str(job_dir / "run.ipynb"), result=str(job_dir / "result.json"), private_dir=str(job_dir),
        limits=limits, sandbox=config).write(job_dir / "job.json")
    start = time.monotonic()
    try:
        result = _execute(job_dir, limits, pool)
    finally:
        # the kernel's supervisor's group: with isolation, its whole PID namespace goes with it
        with suppress(ValueError, OSError):
            kernel = int(pid_file.read_text())
            if os.getpgid(kernel) == kernel:
                kill_group(kernel)
        over_memory = cgroup is not None and cgroup.went_over_memory()
        if cgroup is not None:
            cgroup.remove()
    seconds = time.monotonic() - start
    if result is not None and over_memory:
        result.memory_exceeded = True
    _remove(job_dir, home, ipc_dir)
    return result, seconds


@contextmanager
def run_step(run: RunStep | None, work: Path, template: Notebook, walls: Walls | None = None) -> Generator[RunStep]:
    """The run step of a batch: `run` as given, else pooled workers whose kernels fork from one zygote
    that has imported what the exercise's notebook imports, inside the class's `walls` (bubblewrap)."""
    if run is not None:
        yield run
        return
    modules = zygote.modules_imported(c.source for c in template.cells if c.cell_type == "code")
    env = launcher.kernel_environment(worker_env(work), str(work / "zygote"))
    parent = zygote.Zygote(work / "zygote", modules, env, walls=walls, writable=[work, work / "ipc"])
    with parent, WorkerPool(worker_env(work), work / "jobs") as pool:
        yield functools.partial(run_worker, zygote=parent.socket, pool=pool)
