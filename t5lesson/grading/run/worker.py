"""Run a prepared notebook in a fresh, sandboxed kernel: `python -m ...run.worker JOB.json`.

The worker executes the notebook the grader composed, cell by cell with nbclient, in a kernel
started through `sandbox.launcher` (or forked from the batch's zygote), and writes a
`RunResult`: how each cell ended and the harvested records as text. It never scores anything.
`--serve JOBS DONE` runs many jobs in turn (`run.execute.WorkerPool`). Its limits, from the inside out, and
nbclient's known pitfall with widgets: docs/grading.md, "The worker's limits".
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from .. import skip_uri_grammar

if __name__ == "__main__":  # a worker is a process of its own: it goes without (before nbformat loads)
    skip_uri_grammar()

import nbformat  # noqa: E402
from jupyter_client.connect import KernelConnectionInfo  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from jupyter_client.provisioning.local_provisioner import LocalProvisioner  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import DeadKernelError  # noqa: E402
from nbformat import NotebookNode  # noqa: E402

from ..errors import GradingError  # noqa: E402
from ..protocol import (  # noqa: E402
    HARVEST_MIME,
    KERNEL_BROKEN_ENAME,
    SANDBOX_MODULE,
    CellResult,
    CellStatus,
    Job,
    RunEnd,
    RunResult,
    harvest_question,
)
from ..sandbox.launcher import kept_environment  # noqa: E402
from ..sandbox.namespaces import sealed  # noqa: E402
from ..sandbox.resources import harvest_reserve, kill_group, tree_memory  # noqa: E402
from ..sandbox.zygote import spawn  # noqa: E402

if TYPE_CHECKING:
    from .compose import Cell, Notebook

KERNEL_NAME = "t5lesson-sandbox"
TIMEOUT_ENAME = "CellTimeoutError"
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error", "update_display_data")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
WHERE = re.compile(r"(?:Cell In\[\d*\]|File <[^>]*>|input-\d+-\w+), line (\d+)(?:, in (\S+?)\(?\)?$)?", re.M)


def _content_size(content: Mapping[str, object]) -> int:
    """Bytes of text an output message carries (cheap: no re-serialisation of big strings)."""
    total = 0
    for value in content.values():
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, dict):
            total += _content_size(cast(dict[str, object], value))
        elif isinstance(value, list):
            total += sum(len(v) if isinstance(v, str) else 16 for v in cast(list[object], value))
    return total


class CappedClient(NotebookClient):
    """nbclient within the run's limits: output beyond the caps is counted, then dropped (a record has a
    cap of its own), and one budget bounds everything done in the kernel, counted from its start: the
    student's cells, then the reading of the answers, which keeps a reserve at the end (`harvest_reserve`)."""

    def __init__(self, nb: Notebook, km: AsyncKernelManager, job: Job):
        super().__init__(
            cast(NotebookNode, nb), km, kernel_name=KERNEL_NAME, timeout_func=self.timeout_for,
            interrupt_on_timeout=True, allow_errors=True, iopub_timeout=2, record_timing=False,
            error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": "the cell ran past its time limit", "traceback": []},
            startup_timeout=int(job.limits.startup_timeout), shutdown_kernel="immediate",
            resources={"metadata": {"path": job.sandbox.home}}, on_cell_executed=self._remember_reply)
        self.limits = job.limits
        self.deadline = self.student_end = float("inf")
        self.bytes_seen: dict[int, int] = {}
        self.truncated: set[int] = set()
        self.student_total = 0
        self.replies: dict[int, dict[str, Any]] = {}

    def _remember_reply(self, cell: NotebookNode, cell_index: int, execute_reply: dict[str, Any] | None) -> None:
        self.replies[cell_index] = execute_reply.get("content", {}) if execute_reply else {}

    def process_message(self, msg: dict[str, Any], cell: NotebookNode, cell_index: int) -> NotebookNode | None:
        if msg["msg_type"] in OUTPUT_TYPES:
            harvest = harvest_question(cast("Cell", cell)) is not None
            if harvest and (msg["msg_type"] != "display_data" or HARVEST_MIME not in msg["content"].get("data", {})):
                return None  # harvesting cells keep only their own records
            size = _content_size(msg["content"])
            self.bytes_seen[cell_index] = seen = self.bytes_seen.get(cell_index, 0) + size
            if not harvest:
                self.student_total += size
            if seen > (self.limits.harvest_limit if harvest else self.limits.output_limit) or (
                    not harvest and self.student_total > self.limits.total_output_limit):
                self.truncated.add(cell_index)
                return None
        return super().process_message(msg, cell, cell_index)

    def start_clock(self) -> None:
        self.deadline = time.monotonic() + self.limits.notebook_timeout
        self.student_end = self.deadline - harvest_reserve(self.limits)

    def end_for(self, harvest: str | None) -> float:
        return self.student_end if harvest is None else self.deadline

    def timeout_for(self, cell: NotebookNode) -> int:
        harvest = harvest_question(cast("Cell", cell))
        per = self.limits.cell_timeout if harvest is None else self.limits.harvest_timeout
        return max(1, int(min(per, self.end_for(harvest) - time.monotonic()) + 0.999))


def _where(traceback: object) -> tuple[str, str]:
    """(line, function) of the innermost frame in the cell, parsed from IPython's traceback."""
    if not isinstance(traceback, list):
        return "", ""
    # bounded: the traceback is the kernel's, as long as it likes; the innermost frames are at the end
    text = ANSI.sub("", "\n".join(t[-5000:] for t in cast(list[object], traceback)[-50:] if isinstance(t, str)))
    found = WHERE.findall(text)
    return found[-1] if found else ("", "")


class SandboxProvisioner(LocalProvisioner):
    """Start the kernelspec's launcher with the run's log as its stdout and stderr, as a new process
    or, given the batch's zygote (`t5lesson.grading.sandbox.zygote`), as a child of the zygote.

    The launcher does the same either way; only the fork is cheaper than a new interpreter.
    """

    zygote = ""
    log_fd = 2

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        self.cwd = kwargs.get("cwd") or os.getcwd()
        if self.zygote:
            # A forked launcher keeps in its memory what it was sent (an exec'd one does not): only the
            # variables that the launcher would keep anyway are sent.
            env: dict[str, str] = kept_environment(kwargs.get("env") or os.environ)
            read_end, write_end = os.pipe()  # the kernel's stdin, as jupyter_client gives it: nobody writes to it
            try:
                self.process = spawn(self.zygote, cmd[-2:], env, self.cwd, (read_end, self.log_fd, self.log_fd))
            except (ConnectionRefusedError, FileNotFoundError):  # no zygote to ask (it died): a new launcher, then
                os.close(write_end)
                self.zygote = ""
            except BaseException:
                os.close(write_end)
                raise
            else:
                self.process._keep.append(write_end)  # pyright: ignore[reportPrivateUsage] (closed with the kernel)
                self.pid = self.pgid = self.process.pid  # the launcher starts a session of its own
                return self.connection_info
            finally:
                os.close(read_end)
        return await super().launch_kernel(cmd, **kwargs, stdout=self.log_fd, stderr=self.log_fd)


def _kernel_manager(job: Job, log_fd: int) -> AsyncKernelManager:
    """The kernel manager of one run: its own kernelspec, sockets and connection file, all private."""
    private = Path(job.private_dir)
    config_path, spec = private / "sandbox.json", private / "kernels" / KERNEL_NAME
    job.sandbox.write(config_path)
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", SANDBOX_MODULE, str(config_path), "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "t5lesson grading sandbox",
                                                  "language": "python", "interrupt_mode": "signal"}))
    # The kernel's channels are Unix sockets in a folder only the grader and this kernel can open
    # (ZeroMQ's ipc transport), and its connection file (with the signing key) stays in the private
    # run folder, which the grader deletes: nothing is left in /tmp, no port is open to other kernels.
    specs = KernelSpecManager(kernel_dirs=[str(spec.parent)])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs, transport="ipc",
                            ip=str(Path(job.sandbox.ipc_dir) / "k"), connection_file=str(private / "connection.json"))
    km.kernel_id = str(uuid.uuid4())
    km.provisioner = SandboxProvisioner(kernel_id=km.kernel_id, kernel_spec=km.kernel_spec, parent=km)
    km.provisioner.zygote, km.provisioner.log_fd = job.sandbox.zygote, log_fd
    return km


async def _run_cell(client: CappedClient, index: int, cell: Cell, result: RunResult) -> bool:
    """Run one cell and record how it ended; False when nothing more can run in this kernel."""
    harvest, limits = harvest_question(cell), client.limits
    start = time.monotonic()
    try:
        await client.async_execute_cell(cast(NotebookNode, cell), index)
    except DeadKernelError:
        result.cells.append(CellResult(index, CellStatus.DIED, round(time.monotonic() - start, 3)))
        result.ended, result.detail = RunEnd.KERNEL_DIED, str(index)
        return False
    reply = client.replies.get(index, {})
    cell_result = CellResult(index, CellStatus.OK, round(time.monotonic() - start, 3), client.bytes_seen.get(index, 0),
                             index in client.truncated)
    if reply.get("status") == "error":
        cell_result.status = CellStatus.TIMEOUT if reply.get("ename") == TIMEOUT_ENAME else CellStatus.ERROR
        cell_result.ename = str(reply.get("ename", ""))[:100]
        cell_result.evalue = str(reply.get("evalue", ""))[:300]
        cell_result.line, cell_result.function = _where(reply.get("traceback", []))
    elif reply.get("status") == "aborted":
        cell_result.status = CellStatus.ERROR
        cell_result.ename, cell_result.evalue = "Aborted", "the kernel aborted this cell"
    result.cells.append(cell_result)
    if harvest:  # a reading cell prints one record; a second one came from something else in the kernel
        outputs = cast(list[dict[str, Any]], getattr(cell, "outputs", []))
        texts = [t for t in (o.get("data", {}).get(HARVEST_MIME) for o in outputs) if isinstance(t, str)]
        if texts and harvest not in result.harvest:
            result.harvest[harvest] = texts[0][: limits.harvest_limit]
        if len(texts) > 1 and harvest not in result.extra_records:
            result.extra_records.append(harvest)
    if cell_result.status != CellStatus.TIMEOUT:
        return True
    with suppress(Exception):  # a kernel that answers kernel_info (queued behind the cell) within the grace goes on
        # nbclient's kc is jupyter_client's async client, whose kernel_info the stubs type as the blocking one's
        await client.kc.kernel_info(reply=True, timeout=limits.stuck_grace)  # pyright: ignore[reportOptionalMemberAccess, reportCallIssue]
        return True
    if await client.km.is_alive():  # pyright: ignore[reportGeneralTypeIssues, reportOptionalMemberAccess] (async km)
        cell_result.status, result.ended = CellStatus.STUCK, RunEnd.STUCK
    else:
        cell_result.status, result.ended = CellStatus.DIED, RunEnd.KERNEL_DIED
    result.detail = str(index)
    return False


async def run(job: Job, log_fd: int = 2) -> RunResult:
    """Execute the job's notebook; return the result record (see module doc). `log_fd` is the kernel's
    stdout and stderr (what the student's code writes there outside IPython)."""
    nb = cast("Notebook", nbformat.read(job.notebook, as_version=4))  # pyright: ignore[reportUnknownMemberType]
    client = CappedClient(nb, _kernel_manager(job, log_fd), job)
    result = RunResult()
    running = None  # the index of the cell being run, once the kernel has started
    watcher = None
    try:
        async with client.async_setup_kernel():
            await _wait_sealed(client.km, job)
            client.start_clock()
            if job.sandbox.watch_memory:  # no cgroup: the worker bounds the kernel's process tree
                watcher = asyncio.ensure_future(_watch_memory(client.km, job, result))
            for index, cell in enumerate(nb.cells):  # the code cells in turn, but those past their part of the budget
                if cell.cell_type != "code":
                    continue
                if time.monotonic() >= client.end_for(harvest_question(cell)):
                    result.cells.append(CellResult(index, CellStatus.SKIPPED))
                    result.ended = RunEnd.TIME_LIMIT
                    continue
                running = index
                if not await _run_cell(client, index, cell, result):
                    break
    except DeadKernelError:
        result.ended = RunEnd.KERNEL_DIED
    except Exception as exc:  # the kernel would not start, or its messages broke: report, never hang
        result.ended, result.detail = RunEnd.STARTUP_FAILED, f"{type(exc).__name__}: {str(exc)[:300]}"
        if running is not None:  # nbclient failed on what the kernel sent while the notebook ran
            result.ended = RunEnd.KERNEL_BROKEN
            result.cells = [c for c in result.cells if c.index != running]
            result.cells.append(CellResult(running, CellStatus.ERROR, ename=KERNEL_BROKEN_ENAME,
                                           evalue=f"{type(exc).__name__}: {str(exc)[:200]}"))
    finally:
        if watcher is not None:
            watcher.cancel()
    if result.memory_exceeded and result.ended == RunEnd.KERNEL_BROKEN:
        result.ended = RunEnd.KERNEL_DIED  # stopped by the memory watch, not broken by the notebook
    return result


class SocketFolderOpen(GradingError, RuntimeError):
    """The kernel's socket folder (on the machine's disk) was not made read-only: no cell may run."""


class _Process(Protocol):
    pid: int

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...


def _process(km: object) -> _Process | None:
    """The kernel's launcher process (a Popen, or a zygote's `ForkedKernel`) once the provisioner started it."""
    return cast("_Process | None", getattr(getattr(km, "provisioner", None), "process", None))


async def _wait_sealed(km: object, job: Job) -> None:
    """With isolation, run no cell before the kernel's supervisor has made its socket folder read-only.

    The folder is bound from the machine's disk, and nothing else bounds what is written there:
    once the kernel has bound its sockets, its supervisor remounts it read-only in the kernel's
    mount namespace (`namespaces._seal_when_bound`); this waits until the kernel's mounts show it.
    """
    plan = job.sandbox.isolation
    if plan is None or not plan.writable_keep:
        return
    process = _process(km)
    folder = os.path.realpath(plan.writable_keep[0])
    deadline = time.monotonic() + job.limits.startup_timeout
    while process is None or not sealed(process.pid, folder):
        if process is None or process.poll() is not None or time.monotonic() > deadline:
            raise SocketFolderOpen("the kernel's socket folder was not made read-only, so no cell was run")
        await asyncio.sleep(0.005)


async def _watch_memory(km: object, job: Job, result: RunResult) -> None:
    """Stop the kernel (its supervisor's process group) when its process tree uses more than `watch_memory` bytes:
    their PSS and the memfd and tmpfs files they hold (but the kernel's own tmpfs, bounded by --disk-mb)."""
    home, limit = job.sandbox.home, job.sandbox.watch_memory or 0
    while True:
        await asyncio.sleep(0.25)
        process = _process(km)
        if process is None or process.poll() is not None:
            continue
        try:  # the device of the kernel's own size-limited tmpfs (its home, seen through its root)
            own: tuple[int, ...] = (os.stat(f"/proc/{process.pid}/root{home}").st_dev,) if home else ()
        except OSError:
            own = ()
        if tree_memory(process.pid, own) > limit:
            result.memory_exceeded = True
            if not kill_group(process.pid):
                process.kill()
            return


def run_job(path: Path) -> None:
    """Run the job file at `path`; its result file appears (atomically) when it is done."""
    job = Job.read(path)
    os.environ["JUPYTER_RUNTIME_DIR"] = job.private_dir
    os.chdir(job.private_dir)
    with open(Path(job.private_dir) / "kernel.log", "ab") as log:
        result = asyncio.run(run(job, log.fileno()))
    partial = Path(job.result).with_suffix(".partial")
    result.write(partial)
    os.replace(partial, job.result)


def serve(jobs_fd: int, done_fd: int) -> None:
    """Run the jobs whose paths come, one a line, on `jobs_fd`; write a line to `done_fd` after each."""
    for fd in (jobs_fd, done_fd):  # no kernel this worker starts may inherit them
        os.set_inheritable(fd, False)
    with os.fdopen(jobs_fd, "rb") as jobs, os.fdopen(done_fd, "wb", buffering=0) as done:
        for line in jobs:
            try:
                run_job(Path(os.fsdecode(line.rstrip(b"\n"))))
                answer = b"done\n"
            except Exception as exc:  # the result file is missing: the grader reports the run as stopped
                print(f"worker: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                answer = b"failed\n"
            done.write(answer)


def main() -> int:
    """`worker JOB.json` runs one job; `worker --serve JOBS DONE` runs many (`run.execute.WorkerPool`)."""
    if sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        run_job(Path(sys.argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
