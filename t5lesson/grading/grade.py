"""Grade a class: `python -m t5lesson.grading.grade SUBMISSIONS_DIR --out REPORT_DIR`.

For every notebook under SUBMISSIONS_DIR (a student's id is its path without `.ipynb`):
1. read its bytes once (the folder is never written) and prepare the notebook to run
   (`t5lesson.grading.submission`: provided cells restored, answer cells taken from the submission,
   one harvesting cell per question added);
2. run it in a worker process (`t5lesson.grading.runner`) with a fresh kernel started through
   `t5lesson.grading.sandbox`: per-cell and whole-notebook time limits, an output cap, a memory limit,
   and, when the grader is root, its own user id and a mount namespace that hides the
   submissions, the report folder and the solutions. The grader kills the worker, the kernel
   and everything the kernel started if the run outlives its hard limit;
3. score the answers *here*, from the plain records the kernel printed (`t5lesson.grading.questions`):
   nothing the student's code returns is trusted beyond being their answer.
Submissions run in parallel (one per core by default) and each line of progress shows one
finished submission. The reports are written at the end, atomically, by this process:
gradebook.csv, free_text.csv, summary.md and feedback/<student>.md (`t5lesson.grading.report`).

Every failure has a verdict and none stops the batch: an unreadable file, a damaged
structure, a missing variable, a cell that raises, a loop that never ends (even one that
ignores interrupts), a kernel that dies, floods of output, attempts to read or write outside.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

import nbformat

from . import bank, sandbox
from .course import HIDDEN, PACKAGE_PARENT, CourseError, course_root
from .notebook_format import exercise_id_of, make_exercise
from .protocol import FAILED_CELL, RUNNER_MODULE, CellStatus, Job, Limits, Status, status_of
from .questions import ERROR, NOT_ATTEMPTED, Outcome, clean_record
from .report import Graded, write_reports
from .submission import Prepared, prepare

UID_BASE = 2_100_000_000


# --------------------------------------------------------------------------- running one


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _run_worker(prep: Prepared, limits: Limits, work: Path, uid: int | None, hide: list[str],
                questions: int) -> tuple[dict | None, float]:
    """Run one prepared notebook; return the worker's result (None if it had to be killed)."""
    job_dir = Path(tempfile.mkdtemp(dir=work / "jobs"))
    home = Path(tempfile.mkdtemp(dir=work / "scratch"))
    if uid is not None:
        os.chown(home, uid, uid)
    os.chmod(home, 0o700)
    (job_dir / "run.ipynb").write_text(nbformat.writes(prep.notebook), encoding="utf-8")
    pid_file = job_dir / "kernel.pid"
    Job(notebook=str(job_dir / "run.ipynb"), result=str(job_dir / "result.json"), private_dir=str(job_dir),
        limits=limits, sandbox={
            "home": str(home), "uid": uid, "hide": hide, "pid_file": str(pid_file),
            "memory_bytes": limits.memory_mb * 2 ** 20,
            "cpu_seconds": int(limits.hard_limit(questions)) + 5,
            "file_bytes": 64 * 2 ** 20, "max_processes": limits.max_processes,
        }).write(job_dir / "job.json")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(job_dir), PYDEVD_DISABLE_FILE_VALIDATION="1",
               JUPYTER_PLATFORM_DIRS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p))
    start = time.monotonic()
    with open(job_dir / "worker.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, str(job_dir / "job.json")],
                                cwd=job_dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
        try:
            proc.wait(timeout=limits.hard_limit(questions))
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill_group(proc.pid)
            proc.wait()
            if uid is not None:
                sandbox.kill_user_processes(uid)
                sandbox.remove_user_files(uid)
            elif pid_file.exists():
                try:
                    kernel = int(pid_file.read_text())
                    if os.getpgid(kernel) == kernel:
                        _kill_group(kernel)
                except (ValueError, OSError):
                    pass
    seconds = time.monotonic() - start
    result = None
    target = job_dir / "result.json"
    if target.exists() and target.stat().st_size < 50 * 2 ** 20:
        try:
            result = json.loads(target.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            result = None
    if not os.environ.get("T5LESSON_GRADE_KEEP"):  # keep the run folders to debug the grader itself
        shutil.rmtree(job_dir, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return (result if isinstance(result, dict) else None), seconds


# --------------------------------------------------------------------------- scoring


def _read_harvest(text, nonce: str, question_id: str):
    """The record of one question from the harvesting cell's output, or None if unusable."""
    if not isinstance(text, str):
        return None
    try:
        payload = json.loads(text)
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
        if status == CellStatus.ERROR:
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
        notes.append(f"{skipped} cell(s) were not run: the notebook used up its {limits.notebook_timeout:g} s.")
    return notes


def score(exercise, prep: Prepared, result: dict | None, nonce: str,
          limits: Limits) -> tuple[Status, list[Outcome], list[str]]:
    """(status, one Outcome per question, notes) for one run, computed in the grader's process."""
    notes = list(prep.notes)
    if result is None:
        status = Status.TIME_LIMIT
        auto = sum(1 for q in exercise.questions if q.auto_scored)
        why = f"the notebook was stopped after its hard limit of {limits.hard_limit(auto):g} s"
        notes.append(f"The run was stopped from outside: {why}.")
        cells, harvest = {}, {}
    else:
        cells = {c["index"]: c for c in result.get("cells", [])
                 if isinstance(c, dict) and isinstance(c.get("index"), int)}
        harvest = result.get("harvest", {}) if isinstance(result.get("harvest"), dict) else {}
        status = status_of(result.get("ended"))
        notes += _cell_notes(prep, cells, limits)
        if status == Status.GRADER_ERROR:
            notes.append(f"The grader could not run this notebook: {result.get('detail', '')}. "
                         "Please tell your instructor.")
        why = {Status.STUCK: "a cell never stopped, so the answers could not be read",
               Status.KERNEL_DIED: "the kernel died before the answers could be read",
               Status.GRADER_ERROR: "the notebook could not be run"}.get(status, "")

    outcomes = []
    for q in exercise.questions:
        if not q.auto_scored:
            outcomes.append(q.score({"text": prep.free_text.get(q.id, "")}))
            continue
        record = _read_harvest(harvest.get(q.id), nonce, q.id)
        if record is None:
            reading = cells.get(prep.harvest_cell.get(q.id, -1))
            reason = why or "your answer could not be read back"
            if reading is not None and reading.get("status") in (CellStatus.ERROR, CellStatus.TIMEOUT):
                reason = (f"your answer could not be read back ({_cell_error(reading, 'the grader')}); "
                          "did the notebook replace a built-in?")
            outcomes.append(q.outcome(ERROR, 0, reason + "."))
            continue
        outcome = q.score(record)
        answer = cells.get(prep.answer_cell.get(q.id, -1))
        failed = answer is not None and answer.get("status") in FAILED_CELL
        if outcome.status == NOT_ATTEMPTED and failed:
            origin = prep.origin[prep.answer_cell[q.id]]
            what = _cell_error(answer, origin) if answer["status"] == CellStatus.ERROR else f"{origin} did not finish"
            outcome = q.outcome(ERROR, 0, f"{what}.")
        outcomes.append(outcome)
    return status, outcomes, notes


# --------------------------------------------------------------------------- the class


def find_submissions(folder: Path) -> list[Path]:
    """Every *.ipynb under the folder, skipping hidden folders, checkpoints and symlinks."""
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        parts = path.relative_to(folder).parts
        if any(p.startswith(".") for p in parts) or path.is_symlink() or not path.is_file():
            continue
        found.append(path)
    return found


def _infer_exercise(datas: list[bytes]) -> str | None:
    counts = Counter()
    for data in datas:
        try:
            doc = json.loads(data)
            exercise_id = exercise_id_of(doc) if isinstance(doc, dict) else None
        except (ValueError, UnicodeDecodeError, AttributeError):
            continue
        if exercise_id in bank.exercise_ids():
            counts[exercise_id] += 1
    if counts:
        return counts.most_common(1)[0][0]
    ids = bank.exercise_ids()
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


def _uids(count: int) -> list[int]:
    base = UID_BASE + (os.getpid() % 20_000) * 1_000
    return [base + (i % 1_000) for i in range(count)]


def grade_folder(submissions: Path, out: Path, *, exercise_id: str | None = None, template: Path | None = None,
                 course: Path | None = None,
                 limits: Limits = Limits(), jobs: int | None = None, isolation: str = "auto",
                 hide: tuple[str, ...] = (), progress=None) -> list[Graded]:
    """Grade every submission under `submissions`; write the reports under `out`; return the verdicts."""
    submissions, out = submissions.resolve(), out.resolve()
    if out == submissions or submissions in out.parents:
        raise ValueError("the report folder must not be inside the submissions folder")
    files = find_submissions(submissions)
    datas = {}
    for path in files:
        size = path.stat().st_size
        datas[path] = None if size > limits.max_notebook_mb * 2 ** 20 else path.read_bytes()
    exercise_id = exercise_id or _infer_exercise([d for d in datas.values() if d is not None])
    if exercise_id is None:
        raise ValueError("cannot tell which exercise this is; pass --exercise")
    exercise = bank.get(exercise_id)
    root = course_root(course)  # also with --template: its solutions/ and tests/ must be hidden
    template_nb = load_template(exercise, template, root)
    auto = sum(1 for q in exercise.questions if q.auto_scored)

    uids = _uids(len(files))
    reason = sandbox.probe(uids[0]) if isolation in ("auto", "full") and files else "not requested"
    if isolation == "full" and reason:
        raise RuntimeError(f"full isolation is not available: {reason}")
    full = isolation != "none" and reason is None
    work = Path(tempfile.mkdtemp(prefix="t5grade-"))
    os.chmod(work, 0o711)
    (work / "jobs").mkdir(mode=0o700)
    (work / "scratch").mkdir(mode=0o711)
    hidden = [str(submissions), str(work / "jobs")] + [str(p) for p in (out,) if p.exists()]
    hidden += [str(root / name) for name in HIDDEN]
    hidden += [str(Path(h).resolve()) for h in hide]
    hidden = [h for h in dict.fromkeys(hidden) if os.path.isdir(h)]

    def one(index: int, path: Path) -> Graded:
        student = path.relative_to(submissions).with_suffix("").as_posix()
        data = datas[path]
        if data is None:
            prep = Prepared(problem=f"the file is larger than {limits.max_notebook_mb} MB")
            status = Status.TOO_LARGE
        else:
            nonce = secrets.token_hex(16)
            prep = prepare(data, template_nb, exercise, nonce)
            status = Status.UNREADABLE if prep.problem else ""
        if prep.problem:
            outcomes = [q.outcome(ERROR, 0, f"nothing could be graded: {prep.problem}.") for q in exercise.questions]
            return Graded(student, path.name, status, outcomes, [f"Your file could not be graded: {prep.problem}."])
        result, seconds = _run_worker(prep, limits, work, uids[index] if full else None,
                                      hidden if full else [], auto)
        status, outcomes, notes = score(exercise, prep, result, nonce, limits)
        return Graded(student, path.name, status, outcomes, notes, prep.free_text, seconds)

    graded: list[Graded] = []
    try:
        with ThreadPoolExecutor(max_workers=jobs or _cores()) as pool:
            futures = [pool.submit(one, i, p) for i, p in enumerate(files)]
            for done, future in enumerate(as_completed(futures), 1):
                g = future.result()
                graded.append(g)
                if progress:
                    progress(done, len(files), g, exercise)
    finally:
        if not os.environ.get("T5LESSON_GRADE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    settings = {key: value for key, value in asdict(limits).items()}
    settings.update(exercise=exercise.id, isolation="full" if full else f"none ({reason})")
    write_reports(out, exercise, graded, settings)
    return graded


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _print_progress(done: int, total: int, g: Graded, exercise) -> None:
    width = len(str(total))
    points = f"{g.total:g}/{exercise.auto_points:g}"
    print(f"[{done:>{width}}/{total}] {g.student}: {points} {g.status} ({g.seconds:.1f} s)",
          file=sys.stderr, flush=True)


def main(argv=None) -> int:
    sys.modules.setdefault("rfc3987_syntax", None)  # a slow optional import of jsonschema; see runner.py
    parser = argparse.ArgumentParser(prog="python -m t5lesson.grading.grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (never modified)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the reports")
    parser.add_argument("--exercise", help="exercise id (default: read from the notebooks' metadata)")
    parser.add_argument("--template", type=Path, help="the exercise notebook handed out (default: exercises/ID.ipynb)")
    parser.add_argument("--course", type=Path, help="the course folder with exercises/ and solutions/ (default: the "
                        "repository this package runs from; required after a non-editable install)")
    parser.add_argument("--jobs", type=int, default=None, help="submissions run at once (default: one per core)")
    parser.add_argument("--cell-timeout", type=float, default=Limits.cell_timeout)
    parser.add_argument("--notebook-timeout", type=float, default=Limits.notebook_timeout)
    parser.add_argument("--harvest-timeout", type=float, default=Limits.harvest_timeout)
    parser.add_argument("--output-limit", type=int, default=Limits.output_limit, help="characters kept per cell")
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    parser.add_argument("--isolation", choices=("auto", "full", "none"), default="auto",
                        help="full: own user id and hidden folders (needs root); auto: full when possible")
    parser.add_argument("--hide", action="append", default=[], help="another folder the kernels must not see")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    limits = Limits(cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                    harvest_timeout=args.harvest_timeout, output_limit=args.output_limit, memory_mb=args.memory_mb)
    start = time.monotonic()
    try:
        graded = grade_folder(args.submissions, args.out, exercise_id=args.exercise, template=args.template,
                              course=args.course,
                              limits=limits, jobs=args.jobs, isolation=args.isolation, hide=tuple(args.hide),
                              progress=None if args.quiet else _print_progress)
    except (ValueError, RuntimeError, KeyError, CourseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"graded {len(graded)} submissions in {time.monotonic() - start:.1f} s; reports in {args.out}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
