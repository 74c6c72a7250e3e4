"""Run one composed notebook in a worker process, and clean up after it whatever happened.

`run_worker` writes the job (the notebook, the limits, the kernel's `LaunchConfig`), runs it in
one of the batch's long-lived workers (`run.pool`) or a new worker process, kills whatever
outlives the run's hard limit, and reads back the `RunResult`. `run_step` is the batch's run
step: these workers, their kernels forked from one zygote (`sandbox.zygote`). See
docs/grading.md, "How a submission is run".
"""
from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import nbformat

from ..course import PACKAGE_PARENT
from ..protocol import RUNNER_MODULE, Job, LaunchConfig, Limits, RunEnd, RunResult, Walls
from ..records import loads
from ..sandbox import launcher, zygote
from ..sandbox.resources import Cgroup, kill_group, remove_quietly
from .compose import Prepared
from .pool import WorkerPool
from .work import keep_run_folders

__all__ = ["run_worker", "run_step", "worker_env"]


def worker_env(job_dir: Path) -> dict:
    """A worker's environment: the grader's, with its runtime folder private and the course importable."""
    return dict(os.environ, JUPYTER_RUNTIME_DIR=str(job_dir), PYDEVD_DISABLE_FILE_VALIDATION="1",
                JUPYTER_PLATFORM_DIRS="1",
                PYTHONPATH=os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p))


def _read_result(target: Path, limits: Limits) -> RunResult | None:
    """The result file the worker wrote, read once and within bounds; None when there is none to read."""
    if not target.exists() or target.stat().st_size >= limits.max_result_mb * 2 ** 20:
        return None
    try:
        data = loads(target.read_text(encoding="utf-8"), max_depth=Limits.RESULT_DEPTH, constants=True)
    except (ValueError, UnicodeDecodeError):
        return None
    return RunResult.from_json(data) if isinstance(data, dict) else None


def _execute(job_dir: Path, limits: Limits, pool: WorkerPool | None) -> RunResult | None:
    """Run the job in `job_dir` in a worker (one of `pool`'s, else a new process); its result, or None.

    A worker that outlives the run's hard limit is killed, with its process group.
    """
    job = job_dir / "job.json"
    if pool is not None:
        found = {}

        def keep() -> bool:  # only a worker whose run ended as runs should may run another notebook
            found["result"] = _read_result(job_dir / "result.json", limits)
            return found["result"] is not None and found["result"].ended in (RunEnd.COMPLETED, RunEnd.TIME_LIMIT)

        pool.run(job, limits.hard_limit(), keep)
        return found.get("result")
    with open(job_dir / "worker.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, str(job)], cwd=job_dir, env=worker_env(job_dir),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        try:
            proc.wait(timeout=limits.hard_limit())
        except subprocess.TimeoutExpired:
            pass
        finally:
            kill_group(proc.pid)
            proc.wait()
    return _read_result(job_dir / "result.json", limits)


def _launch_config(limits: Limits, home: Path, job_dir: Path, ipc_dir: Path, cgroup: Cgroup | None,
                   uid: int | None, walls: Walls | None, zygote_socket: str | None) -> LaunchConfig:
    """What the kernel's launcher applies to itself: the limits, the cgroup, the walls."""
    memory_bytes = limits.memory_mb * 2 ** 20
    plan = None
    if walls is not None:
        plan = walls.plan(uid=uid, home=str(home), disk_bytes=limits.disk_mb * 2 ** 20, ipc_dir=str(ipc_dir))
    return LaunchConfig(home=str(home), pid_file=str(job_dir / "kernel.pid"), ipc_dir=str(ipc_dir),
                        memory_bytes=memory_bytes, cpu_seconds=limits.cpu_seconds(),
                        file_bytes=limits.max_file_mb * 2 ** 20, max_processes=limits.max_processes,
                        cgroup=tuple(str(p) for p in cgroup.paths) if cgroup else (),
                        watch_memory=None if cgroup else memory_bytes, zygote=zygote_socket or "", isolation=plan)


def _kill_kernel(pid_file: Path) -> None:
    """Kill the kernel's supervisor's group: with isolation, its whole PID namespace goes with it."""
    try:
        kernel = int(pid_file.read_text())
        if os.getpgid(kernel) == kernel:
            kill_group(kernel)
    except (ValueError, OSError):
        pass


def run_worker(prep: Prepared, limits: Limits, work: Path, uid: int | None, walls: Walls | None,
               zygote: str | None = None, pool: WorkerPool | None = None) -> tuple[RunResult | None, float]:
    """Run one prepared notebook; return the worker's result (None if it had to be killed) and the seconds.

    `walls` is the isolation shared by every kernel of the class, None without isolation; `uid`
    the kernel's own user id when the grader is root; `zygote` the socket of the batch's kernel
    zygote, None to start each kernel's launcher as a new process; `pool` the batch's long-lived
    workers, None for a new worker process.
    """
    job_dir = Path(tempfile.mkdtemp(dir=work / "jobs"))
    home = Path(tempfile.mkdtemp(dir=work / "scratch"))
    # the kernel's sockets: only it and the grader get in; work/ipc links to a folder with a short path
    ipc_dir = Path(os.path.realpath(tempfile.mkdtemp(dir=work / "ipc")))
    if uid is not None:
        os.chown(home, uid, uid)
        os.chown(ipc_dir, uid, uid)
    os.chmod(home, 0o700)
    (job_dir / "run.ipynb").write_text(nbformat.writes(prep.notebook), encoding="utf-8")
    cgroup = Cgroup.create(f"t5grade-{job_dir.name}", limits.memory_mb * 2 ** 20, limits.max_processes)
    config = _launch_config(limits, home, job_dir, ipc_dir, cgroup, uid, walls, zygote)
    Job(notebook=str(job_dir / "run.ipynb"), result=str(job_dir / "result.json"), private_dir=str(job_dir),
        limits=limits, sandbox=config).write(job_dir / "job.json")
    start = time.monotonic()
    over_memory = False
    try:
        result = _execute(job_dir, limits, pool)
    finally:
        _kill_kernel(Path(config.pid_file))
        if cgroup is not None:
            over_memory = cgroup.went_over_memory()
            cgroup.remove()
    seconds = time.monotonic() - start
    if result is not None and over_memory:
        result = dataclasses.replace(result, memory_exceeded=True)
    _remove_run_folders(job_dir, home, ipc_dir)
    return result, seconds


def _remove_run_folders(*folders: Path) -> None:
    """Remove a run's folders, whatever a kernel left in them; an error is logged (stderr), never raised."""
    if keep_run_folders():
        return
    for folder in folders:
        try:
            remove_quietly(folder)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # whatever a kernel left, the batch goes on
            print(f"t5grade: could not remove {folder}: {type(exc).__name__}", file=sys.stderr)


@contextmanager
def run_step(run: Callable | None, work: Path, template, walls: Walls | None = None):
    """The run step of a batch: `run` as given, else worker processes whose kernels fork from one zygote
    that has imported what the exercise's notebook imports (without one, each kernel starts afresh), inside
    the class's `walls` (bubblewrap) when there are walls."""
    if run is not None:
        yield run
        return
    modules = zygote.modules_imported(c.source for c in template.cells if c.cell_type == "code")
    env = launcher.kernel_environment(worker_env(work), str(work / "zygote"))
    parent = zygote.Zygote(work / "zygote", modules, env, walls=walls, writable=[work, work / "ipc"])
    with parent, WorkerPool(worker_env(work), work / "jobs") as pool:
        yield functools.partial(run_worker, zygote=parent.socket, pool=pool)
