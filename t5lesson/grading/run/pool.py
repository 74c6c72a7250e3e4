"""Worker processes that each run many submissions in turn, one at a time.

One long-lived worker per grading thread (`python -m ...run.worker --serve JOBS DONE`) keeps its
imported modules between jobs (measured: 1.55 times the rate of a new worker per submission);
every job still gets a fresh kernel. A worker is replaced when a job outlives its hard limit, when
a run ends in any other way than completed (or out of time), or after `MAX_JOBS` jobs, so that a
notebook that broke the worker cannot touch the next one. See docs/grading.md, "Speed".
"""
from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from ..protocol import RUNNER_MODULE
from ..sandbox.resources import kill_group

__all__ = ["WorkerPool", "MAX_JOBS"]

MAX_JOBS = 200


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
    """One long-lived worker per grading thread; `with WorkerPool(env, folder) as pool: pool.run(job, ...)`."""

    def __init__(self, env: dict[str, str], folder: Path):
        self.env, self.folder = env, Path(folder)
        self._local = threading.local()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    def run(self, job: Path, timeout: float, keep: Callable[[], bool]) -> bool:
        """Run `job` in this thread's worker; True if it answered within `timeout` seconds.
        `keep()` says, after the answer, whether the worker may run another job."""
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None or worker.process.poll() is not None:
            with self._lock:
                worker = _Worker(self.env, self.folder / f"worker-{len(self._all)}.log")
                self._all.append(worker)
            self._local.worker = worker
        answered = worker.run(job, timeout)
        if not answered or not keep() or worker.jobs_run >= MAX_JOBS:
            worker.close()
            self._local.worker = None
            with self._lock:
                self._all.remove(worker)
        return answered

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()
