"""What the grader, its worker, the kernel's launcher and the harvesting cells agree on, written once.

The class grader (`batch`, `run.execute`) writes a job file (`Job`: the notebook, the `Limits`, the
launcher's `LaunchConfig` with the kernel's `SandboxPlan`, made from the class's `Walls`); the worker
(`run.worker`, `RUNNER_MODULE`) starts the kernel through `sandbox.launcher` (`SANDBOX_MODULE`, or a
fork of `sandbox.zygote`), which becomes `sandbox.kernel` (`KERNEL_MODULE`); the harvesting cells print
records (`HARVEST_MIME`, from the stdlib-only `harvest`); the worker writes back a `RunResult`. Every
name, key, status and limit crossing those boundaries is defined here (docs/grading.md, "How a submission is run").
"""
from __future__ import annotations

import json
import pkgutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, cast

from . import harvest

_PACKAGE = __name__.rpartition(".")[0]
RUNNER_MODULE = f"{_PACKAGE}.run.worker"  # python -m RUNNER_MODULE JOB.json (one job), or --serve (many in turn)
SANDBOX_MODULE = f"{_PACKAGE}.sandbox.launcher"  # python -m SANDBOX_MODULE CONFIG CONNECTION_FILE: the kernel launcher
KERNEL_MODULE = f"{_PACKAGE}.sandbox.kernel"  # python -m KERNEL_MODULE -f CONNECTION_FILE: what the launcher execs
EXIT_ENAME = "ExitCalled"  # the error a cell ends with when it called exit() or quit() (see kernel.py)
KERNEL_BROKEN_ENAME = "KernelBroken"  # what the worker gives the cell after which the kernel stopped answering
HARVEST_MIME = harvest.MIME  # spelled in harvest.py, which runs alone in the kernel and cannot import this
GRADER_KEY = "t5grade"  # cell.metadata[GRADER_KEY] = {"harvest": question id} on a harvesting cell


def resolve(reference: str) -> Any:
    """The object a "module:attribute.path" reference names (a code question's reference)."""
    return pkgutil.resolve_name(reference)


JSON = dict[str, Any]  # a JSON object as json.loads gives it: its values are checked where they are read


class Cell(Protocol):
    """What the protocol reads of a notebook cell (nbformat's, untyped)."""

    metadata: dict[str, Any]


def mark_harvest(cell: Cell, question_id: str) -> None:
    """Mark a cell of the run notebook as the harvesting cell of one question."""
    cell.metadata[GRADER_KEY] = {"harvest": question_id}


def harvest_question(cell: Cell) -> str | None:
    """The question a harvesting cell reads, or None for every other cell."""
    marker = cell.metadata.get(GRADER_KEY)
    question = cast(JSON, marker).get("harvest") if isinstance(marker, dict) else None
    return question if isinstance(question, str) else None


class Words(str, Enum):
    """An enum whose members are their words, in JSON, CSV and f-strings alike."""

    def __str__(self) -> str:  # Enum.__format__ formats str(self)
        return self.value


class RunEnd(Words):
    """How the worker's run of one notebook ended (the result file's "ended")."""

    COMPLETED = "completed"
    TIME_LIMIT = "time limit"  # the whole-notebook budget ran out; later cells were skipped
    STUCK = "stuck"  # a cell ignored the interrupt
    KERNEL_DIED = "kernel died"
    KERNEL_BROKEN = "kernel broken"  # the notebook broke its kernel's messaging: the worker could not go on
    STARTUP_FAILED = "startup failed"


class CellStatus(Words):
    """How one cell ended, as the worker reports it."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    STUCK = "stuck"
    DIED = "died"
    SKIPPED = "skipped"


FAILED_CELL = (CellStatus.ERROR, CellStatus.TIMEOUT, CellStatus.DIED, CellStatus.STUCK)


_T = TypeVar("_T")
_W = TypeVar("_W", bound="_Wire")
_E = TypeVar("_E", bound=Words)


class _Wire:
    """A dataclass that crosses a process boundary as a JSON object (`to_json`, `write`; `from_json`, `read`)."""

    NESTED: ClassVar[dict[str, type[_Wire]]] = {}  # a field that is itself one of these, and its class

    def to_json(self) -> JSON:
        return asdict(cast(Any, self))

    @classmethod
    def from_json(cls: type[_W], data: Mapping[str, Any]) -> _W:
        """What `to_json` wrote; unknown keys are ignored, missing optional ones (and an empty `NESTED` one) default,
        JSON lists are read as tuples and a `NESTED` field by its class."""
        known, nested = {f.name for f in fields(cast(Any, cls))}, cls.NESTED
        return cls(**{k: nested[k].from_json(v) if k in nested else tuple(cast(list[Any], v)) if isinstance(v, list)
                      else v for k, v in data.items() if k in known and (v or k not in nested)})

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json()), encoding="utf-8")

    @classmethod
    def read(cls: type[_W], path: str | Path) -> _W:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def _limit(default: _T, help: str) -> _T:
    """A limit's field, with the words `t5grade`'s flag shows for it."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Limits(_Wire):
    """Every limit of one run, in seconds, bytes and megabytes."""

    cell_timeout: float = _limit(30.0, "seconds one cell may run")
    notebook_timeout: float = _limit(150.0, "seconds for the whole notebook, the reading of the answers included")
    harvest_timeout: float = _limit(30.0, "seconds per reading cell, kept at the end of the notebook's budget")
    startup_timeout: float = _limit(60.0, "seconds for a kernel to start")
    stuck_grace: float = _limit(5.0, "seconds a cell that ignores its interrupt gets before the kernel is killed")
    output_limit: int = _limit(100_000, "characters of output kept per cell")
    total_output_limit: int = _limit(1_000_000, "characters of output kept for all the student's cells together")
    harvest_limit: int = _limit(2_000_000, "characters of one harvested record")
    memory_mb: int = _limit(2048, "memory of a whole submission: all its processes (and, with a cgroup, its files)")
    max_notebook_mb: int = _limit(20, "largest notebook file read")
    # far above any exercise (they have under 100 cells); checked before a cell is built, since
    # composing costs the grader's own process time in proportion to the cells
    max_cells: int = _limit(2000, "cells of one submitted notebook; one with more is refused as too large")
    max_processes: int = _limit(256, "processes of one submission")
    disk_mb: int = _limit(256, "files, shared memory and locks of a whole submission together (its private tmpfs)")
    max_file_mb: int = _limit(64, "largest file one process of a submission may write (RLIMIT_FSIZE)")
    output_grace: float = _limit(10.0, "seconds for the last output past the notebook's budget and the stuck grace, "
                                       "before the grader kills the run from outside")
    cpu_grace: int = _limit(5, "CPU seconds a kernel may use past the outside kill, so that the kill comes first")
    max_result_mb: int = _limit(50, "largest result file the grader reads back from a worker")
    slow_cases: int = _limit(harvest.MAX_SLOW_CASES,
                             "cases of one code question that may run out of time before the rest are skipped")

    # bounds of what the grader parses, from files of the students' and from their kernels
    NOTEBOOK_DEPTH: ClassVar[int] = 64  # nesting of a notebook's JSON; Jupyter's own notebooks stay near 10
    HARVEST_DEPTH: ClassVar[int] = 24  # of one record: at most ~14 levels (record, cases, plain values 6 deep)
    RESULT_DEPTH: ClassVar[int] = HARVEST_DEPTH + 4  # of the worker's result file (it holds no record parsed)

    def notebook_nodes(self) -> int:
        """Values in a notebook's JSON: 100,000 per megabyte of the largest file read."""
        return self.max_notebook_mb * 100_000

    def harvest_nodes(self) -> int:
        """Values in one record: one per five characters of `harvest_limit` (a value takes at least that)."""
        return self.harvest_limit // 5

    def hard_limit(self) -> float:
        """When the grader kills a run from outside: the kernel's start, the notebook's budget (the
        reading of the answers included), one stuck grace and the last output's grace."""
        return self.startup_timeout + self.notebook_timeout + self.stuck_grace + self.output_grace

    def cpu_seconds(self) -> int:
        """The kernel's CPU-time limit (RLIMIT_CPU): a little past `hard_limit`, which must strike first."""
        return int(self.hard_limit()) + self.cpu_grace


@dataclass(frozen=True)
class SandboxPlan(_Wire):
    """The walls of one isolated kernel (see `t5lesson.grading.sandbox.namespaces`): made by the
    class grader per submission, carried in the job file, applied by the kernel's launcher."""

    home: str  # the kernel's home folder (bound in from the scratch tmpfs)
    disk_bytes: int  # size of that tmpfs: every file, shared memory and lock of the submission
    hide: tuple[str, ...] = ()  # folders never shown; one inside a kept path is covered by an empty tmpfs
    keep: tuple[str, ...] = ()  # read-only in the kernel's root, beside the system: Python and the course package
    writable_keep: tuple[str, ...] = ()  # paths of `keep` bound writable (the kernel's socket folder)
    uid: int | None = None  # as root: the kernel's own user id (its home is chowned to it); else None


@dataclass(frozen=True)
class Walls:
    """The isolation every kernel of one class shares: the folders never shown and the paths kept.
    Each kernel's `SandboxPlan` adds its own socket folder to `keep`."""

    hide: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()

    def plan(self, *, uid: int | None, home: str, disk_bytes: int, ipc_dir: str) -> SandboxPlan:
        """The walls of one kernel: these, and its own home, scratch tmpfs and socket folder."""
        return SandboxPlan(uid=uid, home=home, disk_bytes=disk_bytes, hide=self.hide,
                           keep=(*self.keep, ipc_dir), writable_keep=(ipc_dir,))


@dataclass(frozen=True)
class LaunchConfig(_Wire):
    """What the kernel's launcher applies to itself before it becomes the kernel (`sandbox.launcher`):
    made by the class grader, carried in the job file, written by the worker where its kernelspec says."""

    NESTED = {"isolation": SandboxPlan}

    home: str  # the kernel's home and working folder
    pid_file: str = ""  # where the launcher writes its process id (the grader kills its group)
    ipc_dir: str = ""  # the kernel's socket folder (made by the grader)
    memory_bytes: int | None = None  # RLIMIT_AS of every process
    cpu_seconds: int | None = None  # RLIMIT_CPU
    file_bytes: int | None = None  # RLIMIT_FSIZE
    max_processes: int | None = None  # RLIMIT_NPROC (as a normal user: on top of the user's own)
    cgroup: tuple[str, ...] = ()  # as root: the submission's cgroup folders, which the launcher joins
    watch_memory: int | None = None  # without a cgroup: the worker stops a process tree above these bytes
    zygote: str = ""  # the batch's zygote socket ("": each launcher a new process)
    isolation: SandboxPlan | None = None  # the walls (None: --isolation none)


@dataclass(frozen=True)
class Job(_Wire):
    """What the grader hands one worker: the notebook to run, where to write, the limits, the launch."""

    NESTED = {"limits": Limits, "sandbox": LaunchConfig}

    notebook: str
    result: str
    private_dir: str
    limits: Limits = Limits()
    sandbox: LaunchConfig = LaunchConfig(home="")


def _words(kind: type[_E], value: object) -> _E | None:
    """`value` as a member of the enum `kind`, or None when it names none (a worker of another version)."""
    return next((member for member in kind if member == value), None)


def _number(value: object) -> float:
    return value if isinstance(value, (int, float)) else 0.0


def _list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


@dataclass
class CellResult:
    """How one cell of the run ended (the result file's "cells"), as the worker saw it."""

    index: int
    status: CellStatus | None  # None: a status this grader does not know
    seconds: float = 0.0
    output_bytes: int = 0  # characters of output the cell printed, kept or not
    truncated: bool = False  # some of its output was dropped (over the cap)
    ename: str | None = None  # the error's name, for a cell that ended in one
    evalue: str = ""
    line: str = ""  # where in the cell (from IPython's traceback), "" when unknown
    function: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CellResult:
        ename = data.get("ename")
        return cls(data["index"], _words(CellStatus, data.get("status")), _number(data.get("seconds")),
                   int(_number(data.get("output_bytes"))), bool(data.get("truncated")),
                   None if ename is None else str(ename), str(data.get("evalue") or ""),
                   str(data.get("line") or ""), str(data.get("function") or ""))


@dataclass
class RunResult(_Wire):
    """What the worker writes back (result.json): how each cell and the run ended, and the records as text."""

    cells: list[CellResult] = field(default_factory=list[CellResult])
    harvest: dict[str, str] = field(default_factory=dict[str, str])  # question id -> its reading cell's record
    ended: RunEnd | None = RunEnd.COMPLETED  # None: an end this grader does not know (a grader error)
    detail: str = ""  # what stopped the run (the cell's index, or the error)
    memory_exceeded: bool = False  # the memory watch (or the cgroup) stopped it
    extra_records: list[str] = field(default_factory=list[str])  # questions whose reading cell printed two records

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        """The one loader of a result file's JSON: what it cannot read is left out, never trusted."""
        cells = [cast(JSON, c) for c in _list(data.get("cells")) if isinstance(c, dict)]
        harvest: object = data.get("harvest")
        return cls([CellResult.from_json(c) for c in cells if isinstance(c.get("index"), int)],
                   {str(k): v for k, v in cast(JSON, harvest).items() if isinstance(v, str)}
                   if isinstance(harvest, dict) else {},
                   _words(RunEnd, data.get("ended")), str(data.get("detail", "")),
                   bool(data.get("memory_exceeded")),
                   [q[:40] for q in _list(data.get("extra_records"))[:100] if isinstance(q, str)])
