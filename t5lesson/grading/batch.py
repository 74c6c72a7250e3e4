"""Grade a class: `t5grade grade SUBMISSIONS_DIR --out REPORT_DIR`.

For every notebook under SUBMISSIONS_DIR (a student's id is its path without `.ipynb`):
1. read its bytes once (the folder is never written) and prepare the notebook to run
   (`t5lesson.grading.run.compose`: provided cells restored, answer cells taken from the submission,
   one harvesting cell per question added);
2. run it in a worker process (`t5lesson.grading.run.worker`; each grading thread keeps one for many
   submissions, `t5lesson.grading.run.pool`) with a fresh kernel, forked from the batch's zygote
   (`t5lesson.grading.sandbox.zygote`) and walled in by `t5lesson.grading.sandbox.launcher`:
   per-cell and whole-notebook time limits, an output cap, memory and disk limits for the whole
   submission, and its own namespaces (as root or as a normal user:
   `t5lesson.grading.sandbox.namespaces`) that hide the submissions, the report folder and the
   solutions and let it reach no other kernel; where that is impossible the grader refuses
   unless told `--isolation none`. The grader kills the worker, the kernel and everything the
   kernel started if the run outlives its hard limit;
3. score the answers *here*, from the plain records the kernel printed (`t5lesson.grading.questions.kinds`):
   nothing the student's code returns is trusted beyond being their answer.
Submissions run in parallel (one per core by default) and each line of progress shows one
finished submission. The reports are written at the end, atomically, by this process:
gradebook.csv, free_text.csv, summary.md and feedback/<student>.md (`t5lesson.grading.reports.gradebook`).

Every failure has a verdict and none stops the batch: an unreadable file, a damaged
structure, a missing variable, a cell that raises, a loop that never ends (even one that
ignores interrupts), a kernel that dies, floods of output, attempts to read or write outside;
and whatever still goes wrong in the grader for one submission is that row's "grader error".
"""
from __future__ import annotations

import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from .authoring.notebook_format import exercise_id_of, make_exercise
from .course import HIDDEN, PACKAGE_PARENT, course_root
from .exercise import Exercise
from .protocol import (
    EXIT_ENAME,
    FAILED_CELL,
    KERNEL_BROKEN_ENAME,
    RUNNER_MODULE,
    CellStatus,
    Job,
    Limits,
    RunEnd,
    SandboxPlan,
    Status,
    status_of,
)
from .questions import answers
from .questions.kinds import ERROR, NOT_ATTEMPTED, Outcome, clean_record
from .records import loads
from .reports import store as outputs
from .reports.gradebook import Graded
from .run import intake
from .run.compose import MAX_DEPTH, MAX_NODES, Prepared, prepare
from .run.pool import WorkerPool
from .sandbox import launcher as sandbox
from .sandbox import zygote
from .sandbox.resources import Cgroup, harvest_reserve

UID_BASE = 2_100_000_000
HARVEST_DEPTH = 24  # a record is at most ~14 levels deep (record, cases, plain values 6 deep)
HARVEST_NODES = 400_000
HARVEST_CHARS = Limits.harvest_limit


# --------------------------------------------------------------------------- running one


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _worker_env(job_dir: Path) -> dict:
    return dict(os.environ, JUPYTER_RUNTIME_DIR=str(job_dir), PYDEVD_DISABLE_FILE_VALIDATION="1",
                JUPYTER_PLATFORM_DIRS="1",
                PYTHONPATH=os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p))


def _read_result(target: Path, limits: Limits) -> dict | None:
    if not target.exists() or target.stat().st_size >= limits.max_result_mb * 2 ** 20:
        return None
    try:
        result = loads(target.read_text(encoding="utf-8"), max_depth=HARVEST_DEPTH + 4, constants=True)
    except (ValueError, UnicodeDecodeError):
        return None
    return result if isinstance(result, dict) else None


def _execute(job_dir: Path, limits: Limits, pool: WorkerPool | None) -> dict | None:
    """Run the job in `job_dir` in a worker (one of `pool`'s, else a new process); its result, or None.

    A worker that outlives the run's hard limit is killed, with its process group.
    """
    job = job_dir / "job.json"
    if pool is not None:
        found = {}

        def keep() -> bool:  # only a worker whose run ended as runs should may run another notebook
            found["result"] = _read_result(job_dir / "result.json", limits)
            return bool(found["result"]) and found["result"].get("ended") in (RunEnd.COMPLETED, RunEnd.TIME_LIMIT)

        pool.run(job, limits.hard_limit(), keep)
        return found.get("result")
    with open(job_dir / "worker.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, str(job)], cwd=job_dir, env=_worker_env(job_dir),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        try:
            proc.wait(timeout=limits.hard_limit())
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill_group(proc.pid)
            proc.wait()
    return _read_result(job_dir / "result.json", limits)


def run_worker(prep: Prepared, limits: Limits, work: Path, uid: int | None, walls: dict | None,
               zygote: str | None = None, pool: WorkerPool | None = None) -> tuple[dict | None, float]:
    """Run one prepared notebook; return the worker's result (None if it had to be killed).

    `walls` is the isolation shared by every kernel of the class (folders to hide, paths to
    keep; see `t5lesson.grading.sandbox.namespaces`), None without isolation; `uid` the kernel's own
    user id when the grader is root; `zygote` the socket of the batch's kernel zygote
    (`t5lesson.grading.sandbox.zygote`), None to start each kernel's launcher as a new process;
    `pool` the batch's long-lived workers (`t5lesson.grading.run.pool`), None for a new worker process.
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
    pid_file = job_dir / "kernel.pid"
    memory_bytes = limits.memory_mb * 2 ** 20
    cgroup = Cgroup.create(f"t5grade-{job_dir.name}", memory_bytes, limits.max_processes)
    config = {"home": str(home), "pid_file": str(pid_file), "ipc_dir": str(ipc_dir), "memory_bytes": memory_bytes,
              "cpu_seconds": limits.cpu_seconds(), "file_bytes": limits.max_file_mb * 2 ** 20,
              "max_processes": limits.max_processes,
              "cgroup": [str(p) for p in cgroup.paths] if cgroup else None,
              "watch_memory": None if cgroup else memory_bytes, "zygote": zygote}
    if walls is not None:
        (job_dir / "scratch").mkdir(mode=0o700)
        config["isolation"] = SandboxPlan(
            uid=uid, home=str(home), scratch=str(job_dir / "scratch"), disk_bytes=limits.disk_mb * 2 ** 20,
            hide=tuple(walls["hide"]), keep=(*walls["keep"], str(ipc_dir)), writable_keep=(str(ipc_dir),)).to_json()
    Job(notebook=str(job_dir / "run.ipynb"), result=str(job_dir / "result.json"), private_dir=str(job_dir),
        limits=limits, sandbox=config).write(job_dir / "job.json")
    start = time.monotonic()
    over_memory = False
    try:
        result = _execute(job_dir, limits, pool)
    finally:
        if pid_file.exists():  # the kernel's supervisor: with isolation, its whole PID namespace goes with it
            try:
                kernel = int(pid_file.read_text())
                if os.getpgid(kernel) == kernel:
                    _kill_group(kernel)
            except (ValueError, OSError):
                pass
        if cgroup is not None:
            over_memory = cgroup.went_over_memory()
            cgroup.remove()
        if uid is not None:
            sandbox.kill_user_processes(uid)
            sandbox.remove_user_files(uid)
    seconds = time.monotonic() - start
    if isinstance(result, dict) and over_memory:
        result["memory_exceeded"] = True
    if not os.environ.get("T5LESSON_GRADE_KEEP"):  # keep the run folders to debug the grader itself
        shutil.rmtree(job_dir, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(ipc_dir, ignore_errors=True)
    return (result if isinstance(result, dict) else None), seconds


# --------------------------------------------------------------------------- scoring


def _read_harvest(text, nonce: str, question_id: str):
    """The record of one question from the harvesting cell's output, or None if unusable."""
    if not isinstance(text, str):
        return None
    try:  # bounded: the text came out of the student's kernel
        payload = loads(text, max_depth=HARVEST_DEPTH, max_nodes=HARVEST_NODES, max_chars=HARVEST_CHARS)
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("nonce") != nonce or payload.get("id") != question_id:
        return None
    return clean_record(payload.get("record"))


def _cell_error(cell: dict, origin: str) -> str:
    """'ZeroDivisionError: division by zero in cell 21 (the answer cell of q6), line 1'."""
    evalue = f": {cell['evalue']}" if cell.get("evalue") else ""
    function = cell.get("function")
    inside = f", in {function}" if function and function not in ("<module>", "") else ""
    line = f", line {cell['line']}{inside}" if cell.get("line") else ""
    return f"{cell.get('ename', 'Error')}{evalue} in {origin}{line}"


def _cell_notes(prep: Prepared, cells: dict, limits: Limits) -> list[str]:
    notes, skipped = [], 0
    harvesting = set(prep.harvest_cell.values())
    for index in sorted(cells):
        cell, origin = cells[index], prep.origin.get(index, f"cell {index + 1}")
        if index in harvesting:
            continue
        status = cell.get("status")
        if status == CellStatus.ERROR and cell.get("ename") == EXIT_ENAME:
            notes.append(f"{origin.capitalize()} called exit() or quit(): the rest of that cell did not run; "
                         "the cells after it ran as usual.")
        elif status == CellStatus.ERROR and cell.get("ename") == KERNEL_BROKEN_ENAME:
            notes.append(f"After {origin}, the grader could no longer talk to the kernel ({cell.get('evalue', '')}): "
                         "the notebook broke the kernel's messaging (its session, sockets or output). "
                         "Nothing after it could run.")
        elif status == CellStatus.ERROR:
            notes.append(f"Error: {_cell_error(cell, origin)}.")
        elif status == CellStatus.TIMEOUT:
            notes.append(f"{origin.capitalize()} ran past the limit of {limits.cell_timeout:g} s per cell "
                         "and was interrupted.")
        elif status == CellStatus.STUCK:
            notes.append(f"{origin.capitalize()} ran past its time limit and did not stop when interrupted; "
                         "nothing after it could run.")
        elif status == CellStatus.DIED:
            notes.append(f"The kernel died while running {origin} (os._exit, a crash, or too much memory); "
                         "nothing after it could run.")
        elif status == CellStatus.SKIPPED:
            skipped += 1
        if cell.get("truncated"):
            kept = limits.output_limit // 1000
            notes.append(f"{origin.capitalize()} printed {cell.get('output_bytes', 0):,} characters; output beyond "
                         f"{kept} kB per cell (or 1 MB in all) was dropped.")
    if skipped:
        notes.append(f"{skipped} cell(s) were not run: the notebook used up its {limits.notebook_timeout:g} s "
                     f"(the last {harvest_reserve(limits):g} s of which are kept for reading the answers).")
    return notes


_WHY_UNREAD = {Status.STUCK: "a cell never stopped, so the answers could not be read",
               Status.KERNEL_DIED: "the kernel died before all the answers could be read",
               Status.KERNEL_BROKEN: "the notebook broke its kernel's messaging, so the answers could not be read",
               Status.GRADER_ERROR: "the notebook could not be run"}


def _stopped(limits: Limits) -> str:
    return f"the notebook was stopped after its hard limit of {limits.hard_limit():g} s"


def _run_status(prep: Prepared, result: dict | None, limits: Limits, notes: list[str]) -> tuple[Status, dict, dict]:
    """(status, cells by index, harvested texts by question) of one run; adds its notes to `notes`."""
    if result is None:
        notes.append(f"The run was stopped from outside: {_stopped(limits)}.")
        return Status.TIME_LIMIT, {}, {}
    cells = {c["index"]: c for c in result.get("cells", []) if isinstance(c, dict) and isinstance(c.get("index"), int)}
    harvest = result.get("harvest", {}) if isinstance(result.get("harvest"), dict) else {}
    status = status_of(result.get("ended"))
    if status in (Status.KERNEL_DIED, Status.KERNEL_BROKEN):
        harvest = {}  # what was read before the end depends on timing: none of it counts
    reading = [cells.get(i, {}).get("status") for i in prep.harvest_cell.values()]
    if status == Status.GRADED and reading and not harvest and all(r == CellStatus.OK for r in reading):
        status = Status.KERNEL_BROKEN  # every reading cell ran, and not one answer came out
        notes.append("The grader's cells ran but no answer came back: the notebook broke the kernel's output "
                     "(closed its channel, or replaced how it displays data).")
    notes += _cell_notes(prep, cells, limits)
    if result.get("memory_exceeded"):
        notes.append(f"The notebook went over its memory limit of {limits.memory_mb} MB (all its processes "
                     "together) and was stopped.")
    if status == Status.GRADER_ERROR:
        notes.append(f"The grader could not run this notebook: {str(result.get('detail', ''))[:300]}. "
                     "Please tell your instructor.")
    return status, cells, harvest


def _unread(q, prep: Prepared, cells: dict, why: str) -> Outcome:
    """The outcome of a question whose record could not be read back."""
    reading = cells.get(prep.harvest_cell.get(q.id, -1))
    reason = why or "your answer could not be read back"
    if reading is not None and reading.get("status") in (CellStatus.ERROR, CellStatus.TIMEOUT):
        reason = (f"your answer could not be read back ({_cell_error(reading, 'the grader')}); "
                  "did the notebook replace a built-in?")
    return q.outcome(ERROR, 0, reason + ".")


def _scored(q, prep: Prepared, cells: dict, record) -> Outcome:
    """The outcome of a question from its record; an unattempted answer whose cell failed says why."""
    outcome = q.score(record)
    answer = cells.get(prep.answer_cell.get(q.id, -1))
    if outcome.status != NOT_ATTEMPTED or answer is None or answer.get("status") not in FAILED_CELL:
        return outcome
    origin = prep.origin[prep.answer_cell[q.id]]
    what = _cell_error(answer, origin) if answer["status"] == CellStatus.ERROR else f"{origin} did not finish"
    return q.outcome(ERROR, 0, f"{what}.")


def score(exercise, prep: Prepared, result: dict | None, nonce: str, limits: Limits,
          records: dict | None = None) -> tuple[Status, list[Outcome], list[str]]:
    """(status, one Outcome per question, notes) for one run, computed in the grader's process.

    `records` are the run's records as `harvested` decodes them (decoded here when not given).
    """
    notes = list(prep.notes)
    status, cells, harvest = _run_status(prep, result, limits, notes)
    why = _stopped(limits) if result is None else _WHY_UNREAD.get(status, "")
    outcomes = []
    for q in exercise.questions:
        if not q.auto_scored:
            outcomes.append(q.score({"text": prep.free_text.get(q.id, "")}))
            continue
        if q.id not in harvest:
            record = None
        elif records is not None:
            record = records.get(q.id)
        else:
            record = _read_harvest(harvest[q.id], nonce, q.id)
        outcomes.append(_unread(q, prep, cells, why) if record is None else _scored(q, prep, cells, record))
    return status, outcomes, notes


# --------------------------------------------------------------------------- the class


def find_submissions(folder: Path) -> list[Path]:
    """Every submission under the folder (see `intake.survey`: hidden entries, links, FIFOs are skipped)."""
    return [entry.path for entry in intake.survey(folder)[0]]


def harvested(exercise, result: dict | None, nonce: str) -> dict:
    """{question id: its record, or None} for every auto-scored question, each decoded once."""
    harvest = result.get("harvest") if isinstance(result, dict) else None
    harvest = harvest if isinstance(harvest, dict) else {}
    return {q.id: _read_harvest(harvest.get(q.id), nonce, q.id) for q in exercise.questions if q.auto_scored}


def given_answers(exercise, result: dict | None, nonce: str, records: dict | None = None) -> dict:
    """What each auto-scored question was answered, for the class report (`t5lesson.grading.questions.answers`)."""
    return answers.summarise(exercise, harvested(exercise, result, nonce) if records is None else records)


def _infer_exercise(datas, ids: tuple[str, ...]) -> str | None:
    """The exercise most of the notebooks name in their metadata (unreadable ones are left out)."""
    counts = Counter()
    for data in datas:
        if not isinstance(data, bytes):
            continue
        try:
            doc = loads(data.decode("utf-8"), max_depth=MAX_DEPTH, max_nodes=MAX_NODES, constants=True)
            exercise_id = exercise_id_of(doc) if isinstance(doc, dict) else None
        except Exception:  # anything odd in one file only means that file does not vote
            continue
        if isinstance(exercise_id, str) and exercise_id in ids:
            counts[exercise_id] += 1
    if counts:
        return counts.most_common(1)[0][0]
    return ids[0] if len(ids) == 1 else None


def load_template(exercise, template: Path | None = None, course: Path | None = None):
    """The student version of the exercise: `template`, else the course's exercises/, else built from solutions/."""
    if template is not None:
        return nbformat.read(template, as_version=4)
    root = course_root(course)
    handed_out = root / "exercises" / f"{exercise.id}.ipynb"
    if handed_out.exists():
        return nbformat.read(handed_out, as_version=4)
    solution = root / "solutions" / f"{exercise.id}.ipynb"
    return make_exercise(nbformat.read(solution, as_version=4), exercise)


SOCKET_PATH_MAX = 107 - len("/tmpXXXXXXXX/k-65535")  # a Unix socket's path is at most 107 bytes


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
    raise RuntimeError("no folder with a path short enough for the kernels' sockets (set TMPDIR to a short path)")


def _uids(count: int) -> list[int]:
    base = UID_BASE + (os.getpid() % 20_000) * 1_000
    return [base + (i % 1_000) for i in range(count)]


class IsolationUnavailable(RuntimeError):
    """The kernels cannot be isolated here (and isolation was not turned off); the message says why."""


class Verdicts(list):
    """The verdicts of a run, in the order they finished, and the settings the reports name."""

    settings: dict = {}


@dataclass
class _Batch:
    """What every submission of one run shares."""

    exercise: Exercise
    template: object
    limits: Limits
    work: Path
    uids: list[int]
    walls: dict | None  # the isolation shared by every kernel (None: --isolation none)
    as_root: bool
    run: Callable
    references: threading.Thread | None = None  # computing the expected results; scoring waits for it


def shard_of(files: list, shard: tuple[int, int]) -> list:
    """The files of shard K/N: every N-th file of the sorted list, starting at the K-th."""
    k, n = shard
    return list(files[k - 1::n])


def _exercise_of(every, exercise_id, catalogue, max_bytes: int) -> Exercise:
    if exercise_id is None:  # a shard asks the whole folder, so that every shard reads it alike
        exercise_id = _infer_exercise((intake.read(entry, max_bytes) for entry in every), catalogue.exercise_ids())
    if exercise_id is None:
        raise ValueError("cannot tell which exercise this is; pass --exercise")
    return catalogue.get(exercise_id)


def _check_isolation(isolation: str, uid: int) -> None:
    reason = sandbox.probe(uid) if isolation != "none" else None
    if reason:
        raise IsolationUnavailable(
            f"the kernels cannot be isolated here: {reason}. Without isolation a kernel can read the solutions and "
            "the other submissions and write the reports. Grade as root, or where unprivileged user namespaces "
            "are allowed; or, knowing that, pass --isolation none.")


def _inside(path: str, folders) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _walls(shown: list[str], root: Path, hide, as_root: bool) -> dict:
    """What every kernel's root shows of the Python environment (`keep`, never inside a hidden folder) and the
    folders it must never show (`hide`: covered where one lies inside a kept path, a second line of defence)."""
    hidden = shown + [str(root / name) for name in HIDDEN] + [str(Path(h).resolve()) for h in hide]
    hidden = [h for h in dict.fromkeys(hidden) if os.path.isdir(h) and h != "/"]
    keep = [p for p in sandbox.needed_paths() if not _inside(os.path.realpath(p), hidden)]
    if not as_root:  # the kernel keeps the grader's user id: that user's own files are hidden too (Python kept)
        hidden.append(os.path.realpath(os.path.expanduser("~")))
    return {"hide": hidden, "keep": keep}


@contextmanager
def _work_area():
    """(work folder, socket folder): the run's private folders, removed at the end."""
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
        if not os.environ.get("T5LESSON_GRADE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
            if ipc_root is not None:
                shutil.rmtree(ipc_root, ignore_errors=True)


def _unreadable(exercise: Exercise, entry: intake.Entry, problem: str, status: Status) -> Graded:
    outcomes = [q.outcome(ERROR, 0, f"nothing could be graded: {problem}.") for q in exercise.questions]
    return Graded(entry.student, entry.relative, status, outcomes, [f"Your file could not be graded: {problem}."])


def grade_one(batch: _Batch, index: int, entry: intake.Entry) -> Graded:
    """Read, compose, run and score one submission."""
    exercise, limits = batch.exercise, batch.limits
    data = intake.read(entry, limits.max_notebook_mb * 2 ** 20)
    if isinstance(data, intake.Unreadable):
        if data.too_large:
            return _unreadable(exercise, entry, f"the file is larger than {limits.max_notebook_mb} MB",
                               Status.TOO_LARGE)
        return _unreadable(exercise, entry, data.reason, Status.UNREADABLE)
    nonce = secrets.token_hex(16)
    prep = prepare(data, batch.template, exercise, nonce, limits)
    if prep.problem:
        return _unreadable(exercise, entry, prep.problem, Status.UNREADABLE)
    uid = batch.uids[index] if batch.walls is not None and batch.as_root else None
    result, seconds = batch.run(prep, limits, batch.work, uid, batch.walls)
    records = harvested(exercise, result, nonce)
    if batch.references is not None:
        batch.references.join()
    status, outcomes, notes = score(exercise, prep, result, nonce, limits, records=records)
    return Graded(entry.student, entry.relative, status, outcomes, notes, prep.free_text, seconds,
                  answers=given_answers(exercise, result, nonce, records))


def _grade_safely(batch: _Batch, index: int, entry: intake.Entry) -> Graded:
    """Grade one submission; whatever goes wrong ends as a "grader error" row, never the batch."""
    start = time.monotonic()
    try:
        return grade_one(batch, index, entry)
    except Exception as exc:
        return grader_error(batch.exercise, entry, exc, time.monotonic() - start)


def _grade_all(batch: _Batch, files, jobs: int | None, progress) -> list[Graded]:
    graded: list[Graded] = []
    if progress is not None and hasattr(progress, "begin"):
        progress.begin(len(files))
    with ThreadPoolExecutor(max_workers=jobs or _cores()) as pool:
        futures = [pool.submit(_grade_safely, batch, i, entry) for i, entry in enumerate(files)]
        for done, future in enumerate(as_completed(futures), 1):
            graded.append(future.result())
            if progress:
                try:
                    progress(done, len(files), graded[-1], batch.exercise)
                except Exception:  # a progress line must never cost the gradebook
                    pass
    return graded


def _settings(limits: Limits, exercise: Exercise, full: bool, as_root: bool, shard_text: str | None) -> dict:
    settings = dict(asdict(limits))
    walled = "full: own user id per kernel" if as_root else "full: user namespaces"
    settings.update(exercise=exercise.id, isolation=walled if full else "none (--isolation none)",
                    memory=("one cgroup per submission" if as_root and Cgroup.available()
                            else "the kernel's process tree, watched"))
    if shard_text:
        settings["shard"] = shard_text
    settings["seed"] = exercise.seed
    return settings


def _expected_in_background(exercise: Exercise) -> threading.Thread:
    """Compute every code question's expected results (the reference on the drawn cases, in this
    process) while the first kernels start and run; a failure here shows where it is asked again."""
    def compute():
        for q in exercise.questions:
            try:
                getattr(q, "expected", None)
            except Exception:  # scoring asks again, and that row gets the error
                pass
    thread = threading.Thread(target=compute, name="t5grade-references", daemon=True)
    thread.start()
    return thread


def new_seed() -> str:
    """A fresh seed for the hidden cases, when the instructor gave none (the reports record it)."""
    return secrets.token_hex(8)


@contextmanager
def _run_step(run: Callable | None, work: Path, template):
    """The run step of a batch: `run` as given, else worker processes whose kernels fork from one zygote
    that has imported what the exercise's notebook imports (without one, each kernel starts afresh)."""
    if run is not None:
        yield run
        return
    modules = zygote.modules_imported(c.source for c in template.cells if c.cell_type == "code")
    env = sandbox.kernel_environment(_worker_env(work), str(work / "zygote"))
    with zygote.Zygote(work / "zygote", modules, env) as parent, WorkerPool(_worker_env(work), work / "jobs") as pool:
        yield functools.partial(run_worker, zygote=parent.socket, pool=pool)


def grade_folder(submissions: Path, out: Path, *, catalogue, exercise_id: str | None = None,
                 template: Path | None = None, course: Path | None = None, limits: Limits = Limits(),
                 jobs: int | None = None, isolation: str = "auto", hide: tuple[str, ...] = (), progress=None,
                 shard: tuple[int, int] | None = None, run: Callable | None = None,
                 seed: str | None = None) -> Verdicts:
    """Grade every submission under `submissions` (or shard K/N of them: `shard_of`); write
    the reports under `out`; return the verdicts (with `.settings`).

    `seed` is the instructor's secret the hidden cases are drawn from (`Exercise.drawn`); the
    reports record it, so grading again with it gives the same grades. None draws a new one
    (shards must share one, so a shard needs it given).

    `run(prepared, limits, work, uid, walls) -> (result or None, seconds)` runs one composed
    notebook; the default starts a worker process (`run_worker`). Tests pass their own.
    """
    submissions, out = submissions.resolve(), out.resolve()
    if out == submissions or submissions in out.parents:
        raise ValueError("the report folder must not be inside the submissions folder")
    every, skipped = intake.survey(submissions)
    files = shard_of(every, shard) if shard else every
    if seed is None and shard:
        raise ValueError("every shard must draw the same hidden cases: pass the same --seed to each")
    seed = new_seed() if seed is None else seed
    exercise = _exercise_of(every, exercise_id, catalogue, limits.max_notebook_mb * 2 ** 20).drawn(seed)
    root = course_root(course)  # also with --template: its solutions/ and tests/ must be hidden
    template_nb = load_template(exercise, template, root)
    uids = _uids(max(1, len(files)))  # an empty folder or shard still probes (and writes an empty report)
    as_root, full = os.geteuid() == 0, isolation != "none"
    _check_isolation(isolation, uids[0])
    with _work_area() as (work, ipc_root):
        shown = [str(submissions), str(work), str(ipc_root)] + [str(p) for p in (out,) if p.exists()]
        walls = _walls(shown, root, hide, as_root) if full else None
        with _run_step(run, work, template_nb) as run_one:
            batch = _Batch(exercise, template_nb, limits, work, uids, walls, as_root, run_one,
                           _expected_in_background(exercise))
            graded = Verdicts(_grade_all(batch, files, jobs, progress))
    shard_text = f"{shard[0]}/{shard[1]}" if shard else None
    graded.settings = _settings(limits, exercise, full, as_root, shard_text)
    failed = outputs.write_all(out, exercise, graded, graded.settings, shard_text, skipped=skipped,
                               titles=outputs.question_titles(exercise, template_nb))
    if failed:
        raise ReportError(failed)
    return graded


class ReportError(RuntimeError):
    """Some report files could not be written (the gradebook itself always is, or this says so)."""

    def __init__(self, failed: list[str]):
        super().__init__("some reports could not be written: " + "; ".join(failed[:5]))
        self.failed = failed


def grader_error(exercise, entry: intake.Entry, exc: BaseException, seconds: float = 0.0) -> Graded:
    """The row of a submission whose grading failed inside the grader: status "grader error"."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    place = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    message = "the grader failed on this notebook; your instructor has the details."
    outcomes = [q.outcome(ERROR, 0, message) for q in exercise.questions]
    notes = ["The grader could not grade this notebook (an error in the grader, logged for your instructor)."]
    return Graded(entry.student, entry.relative, Status.GRADER_ERROR, outcomes, notes, seconds=seconds,
                  error=f"{detail}{place}")


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
