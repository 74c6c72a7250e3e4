"""What the grader, its worker and the harvesting cells agree on, written once.

The class grader (`grade`) composes a notebook (`submission`), hands it to a worker process
(`runner`) through a job file, and reads back a result file; the worker starts each kernel
through `sandbox`; inside the kernel the harvesting cells (`harvest`) print one record per
question as display data. Every name, key, status and limit that crosses one of those
boundaries is defined here, and nowhere else:

- the module paths started as processes (`RUNNER_MODULE`, `SANDBOX_MODULE`) and the
  "module:attribute" references of code questions (`resolve`);
- the metadata that marks a harvesting cell (`mark_harvest`, `harvest_question`) and the MIME
  type of its records (`HARVEST_MIME`, owned by harvest.py, which must stay self-contained);
- how a run ended (`RunEnd`), how each cell ended (`CellStatus`), and the status a student
  gets in the gradebook (`Status`, `status_of`);
- the limits of one run (`Limits`), the walls of one kernel (`SandboxPlan`: made by the class
  grader, read by the kernel's launcher in another process) and the job file (`Job`: written
  with `asdict`, read by one loader).
"""
from __future__ import annotations

import importlib
import json
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path

from .harvest import MIME as HARVEST_MIME

__all__ = ["RUNNER_MODULE", "SANDBOX_MODULE", "KERNEL_MODULE", "EXIT_ENAME", "HARVEST_MIME", "GRADER_KEY",
           "resolve", "mark_harvest", "harvest_question", "RunEnd", "CellStatus", "Status", "status_of",
           "Limits", "SandboxPlan", "Job"]

_PACKAGE = __name__.rpartition(".")[0]
RUNNER_MODULE = f"{_PACKAGE}.run.worker"  # python -m RUNNER_MODULE JOB.json (one job), or --serve (many in turn)
SANDBOX_MODULE = f"{_PACKAGE}.sandbox.launcher"  # python -m SANDBOX_MODULE CONFIG CONNECTION_FILE: the kernel launcher
KERNEL_MODULE = f"{_PACKAGE}.sandbox.kernel"  # python -m KERNEL_MODULE -f CONNECTION_FILE: what the launcher execs
EXIT_ENAME = "ExitCalled"  # the error a cell ends with when it called exit() or quit() (see kernel.py)
KERNEL_BROKEN_ENAME = "KernelBroken"  # what the worker gives the cell after which the kernel stopped answering
GRADER_KEY = "t5grade"  # cell.metadata[GRADER_KEY] = {"harvest": question id} on a harvesting cell


def resolve(reference: str):
    """The object a "module:attribute.path" reference names (a code question's reference)."""
    module, _, path = reference.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def mark_harvest(cell, question_id: str) -> None:
    """Mark a cell of the run notebook as the harvesting cell of one question."""
    cell.metadata[GRADER_KEY] = {"harvest": question_id}


def harvest_question(cell) -> str | None:
    """The question a harvesting cell reads, or None for every other cell."""
    marker = cell.metadata.get(GRADER_KEY)
    return marker.get("harvest") if isinstance(marker, dict) else None


class _Words(str, Enum):
    """An enum whose members are their words, in JSON, CSV and f-strings alike."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class RunEnd(_Words):
    """How the worker's run of one notebook ended (the result file's "ended")."""

    COMPLETED = "completed"
    TIME_LIMIT = "time limit"  # the whole-notebook budget ran out; later cells were skipped
    STUCK = "stuck"  # a cell ignored the interrupt
    KERNEL_DIED = "kernel died"
    KERNEL_BROKEN = "kernel broken"  # the notebook broke its kernel's messaging: the worker could not go on
    STARTUP_FAILED = "startup failed"
    WORKER_ERROR = "worker error"  # nbclient or the worker failed after the kernel started


class CellStatus(_Words):
    """How one cell ended, as the worker reports it."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    STUCK = "stuck"
    DIED = "died"
    SKIPPED = "skipped"


FAILED_CELL = (CellStatus.ERROR, CellStatus.TIMEOUT, CellStatus.DIED, CellStatus.STUCK)


class Status(_Words):
    """A submission's status in the gradebook."""

    GRADED = "graded"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too large"
    TIME_LIMIT = "time limit"
    STUCK = "stuck"
    KERNEL_DIED = "kernel died"
    KERNEL_BROKEN = "kernel broken"
    GRADER_ERROR = "grader error"


_STATUS_OF_END = {RunEnd.COMPLETED: Status.GRADED, RunEnd.TIME_LIMIT: Status.TIME_LIMIT, RunEnd.STUCK: Status.STUCK,
                  RunEnd.KERNEL_DIED: Status.KERNEL_DIED, RunEnd.KERNEL_BROKEN: Status.KERNEL_BROKEN,
                  RunEnd.STARTUP_FAILED: Status.GRADER_ERROR,
                  RunEnd.WORKER_ERROR: Status.GRADER_ERROR}


def status_of(ended) -> Status:
    """The gradebook status for a run that ended so; anything unknown is the grader's error."""
    try:
        return _STATUS_OF_END[RunEnd(ended)]
    except ValueError:
        return Status.GRADER_ERROR


def _limit(default, help: str):
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Limits:
    """Every limit of one run, in seconds, bytes and megabytes."""

    cell_timeout: float = _limit(30.0, "seconds one cell may run")
    # everything in the kernel: the student's cells and reading the answers
    notebook_timeout: float = _limit(150.0, "seconds for the whole notebook, the reading of the answers included")
    harvest_timeout: float = _limit(30.0, "seconds per reading cell, kept at the end of the notebook's budget")
    startup_timeout: float = _limit(60.0, "seconds for a kernel to start")
    stuck_grace: float = _limit(5.0, "seconds a cell that ignores its interrupt gets before the kernel is killed")
    output_limit: int = _limit(100_000, "characters of output kept per cell")
    total_output_limit: int = _limit(1_000_000, "characters of output kept for all the student's cells together")
    harvest_limit: int = _limit(2_000_000, "characters of one harvested record")
    memory_mb: int = _limit(2048, "memory of a whole submission: all its processes (and, with a cgroup, its files)")
    max_notebook_mb: int = _limit(20, "largest notebook file read")
    max_processes: int = _limit(256, "processes of one submission")
    disk_mb: int = _limit(256, "files, shared memory and locks of a whole submission together (its private tmpfs)")
    max_file_mb: int = _limit(64, "largest file one process of a submission may write (RLIMIT_FSIZE)")
    output_grace: float = _limit(10.0, "seconds for the last output past the notebook's budget and the stuck grace, "
                                       "before the grader kills the run from outside")
    cpu_grace: int = _limit(5, "CPU seconds a kernel may use past the outside kill, so that the kill comes first")
    max_result_mb: int = _limit(50, "largest result file the grader reads back from a worker")
    slow_cases: int = _limit(3, "cases of one code question that may run out of time before the rest are skipped")

    @classmethod
    def from_dict(cls, data: dict) -> Limits:
        """The limits a dict names (a Job, autograder.json); unknown keys are ignored, missing ones default."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def hard_limit(self) -> float:
        """When the grader kills a run from outside, whatever the worker is doing.

        The notebook limit covers everything done in the kernel, the reading of the answers
        included; on top come the kernel's start, one grace period for a cell that ignores its
        interrupt, and a few seconds for the last output (`output_grace`).
        """
        return self.startup_timeout + self.notebook_timeout + self.stuck_grace + self.output_grace

    def cpu_seconds(self) -> int:
        """The kernel's CPU-time limit (RLIMIT_CPU): a little past `hard_limit`, which must strike first."""
        return int(self.hard_limit()) + self.cpu_grace


@dataclass(frozen=True)
class SandboxPlan:
    """The walls of one isolated kernel (see `t5lesson.grading.sandbox.namespaces`).

    The class grader makes one per submission; it travels in the job file as a plain dict
    (`to_json`) through the worker to the kernel's launcher, which reads it back (`from_json`)
    and hands it to `namespaces.enter`.
    """

    home: str  # the kernel's home folder (bound in from the scratch tmpfs)
    scratch: str  # an empty folder to mount the kernel's one writable tmpfs on (its new root is built in it)
    disk_bytes: int  # size of that tmpfs: every file, shared memory and lock of the submission
    hide: tuple[str, ...] = ()  # folders never shown; one inside a kept path is covered by an empty tmpfs
    keep: tuple[str, ...] = ()  # read-only in the kernel's root, beside the system: Python and the course package
    writable_keep: tuple[str, ...] = ()  # paths of `keep` bound writable (the kernel's socket folder)
    uid: int | None = None  # as root: the kernel's own user id (its home is chowned to it); else None

    def to_json(self) -> dict:
        """A plain dict for the job file (lists, not tuples)."""
        return {name: list(v) if isinstance(v, tuple) else v for name, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict) -> SandboxPlan:
        """The plan `to_json` wrote; unknown keys are ignored, missing optional ones default."""
        known = {f.name for f in fields(cls)}
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**given)


@dataclass(frozen=True)
class Job:
    """What the grader hands one worker: the notebook to run, where to write, the limits, the sandbox."""

    notebook: str
    result: str
    private_dir: str
    limits: Limits = Limits()
    sandbox: dict = field(default_factory=dict)  # sandbox.launch's config, passed through as is

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> Job:
        data = json.loads(Path(path).read_text())
        limits = Limits.from_dict(data.get("limits", {}))
        return cls(data["notebook"], data["result"], data["private_dir"], limits, data.get("sandbox", {}))
