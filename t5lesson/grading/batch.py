"""Grade a class: `t5grade grade SUBMISSIONS_DIR --out REPORT_DIR`.

For every notebook under SUBMISSIONS_DIR: read it once (`run.intake`), compose the notebook to run
(`run.compose`), run it walled in (`run.execute`, `sandbox.walls`), score it here (`run.score`).
Submissions run in parallel, each line of progress one finished submission; the reports are written
at the end, atomically (`reports.store`). Every failure has a verdict and none stops the batch:
whatever goes wrong in the grader for one submission is that row's "grader error". See
docs/grading.md, "Grading a class".
"""
from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .authoring.notebook_format import exercise_id_of
from .course import course_root
from .errors import InputError, SettingsError
from .exercise import VARIANTS, Catalogue, Exercise, find
from .protocol import Limits, Walls
from .records import loads
from .reports import store
from .run import intake
from .run.compose import Notebook, prepare, read_notebook
from .run.execute import RunStep, run_step, work_area
from .run.score import harvested, score
from .sandbox.resources import Cgroup
from .sandbox.walls import check_isolation, class_walls, uids
from .verdict import ERROR, Graded, RunSettings, Status


class Progress(Protocol):
    """Told of each finished submission (`reports.progress.Progress`; its `begin(total)`, if any, first)."""

    def __call__(self, done: int, total: int, graded: Graded, exercise: Exercise, /) -> None: ...


def _infer_exercise(datas: Iterable[bytes | intake.Unreadable], ids: tuple[str, ...], limits: Limits) -> str | None:
    """The exercise most of the notebooks name in their metadata (unreadable ones are left out)."""
    counts = Counter[str]()
    for data in datas:
        if not isinstance(data, bytes):
            continue
        try:
            doc: object = loads(data.decode("utf-8"), max_depth=Limits.NOTEBOOK_DEPTH,
                                max_nodes=limits.notebook_nodes(), constants=True)
            exercise_id = exercise_id_of(doc)
        except Exception:  # anything odd in one file only means that file does not vote
            continue
        if isinstance(exercise_id, str) and exercise_id in ids:
            counts[exercise_id] += 1
    if counts:
        return counts.most_common(1)[0][0]
    return ids[0] if len(ids) == 1 else None


def load_template(exercise: Exercise, template: Path | None = None, course: Path | None = None) -> Notebook:
    """The student version of the exercise: `template`, else the course's exercises/ID.ipynb (made by
    `t5grade generate`); an InputError when the file is no notebook (a missing one is an OSError)."""
    path = template or course_root(course) / "exercises" / f"{exercise.id}.ipynb"
    try:
        return read_notebook(path)
    except ValueError as exc:  # nbformat's NotJSONError among them
        raise InputError(f"{path} is not a notebook: {exc}") from None


@dataclass
class _Batch:
    """What every submission of one run shares."""

    exercise: Exercise
    template: Notebook
    limits: Limits
    work: Path
    uids: list[int]
    walls: Walls | None  # the isolation shared by every kernel (None: --isolation none)
    as_root: bool
    run: RunStep
    references: threading.Thread | None = None  # computing the expected results; scoring waits for it


def _unreadable(exercise: Exercise, entry: intake.Entry, problem: str, status: Status) -> Graded:
    outcomes = [q.outcome(ERROR, 0, f"nothing could be graded: {problem}.") for q in exercise.questions]
    return Graded(entry.student, entry.relative, status, outcomes, [f"Your file could not be graded: {problem}."])


def submission_key(entry: intake.Entry, data: bytes) -> str:
    """What a submission's hidden cases are picked by (`Exercise.for_student`): its student id and
    its bytes, so a regrade meets the same cases and another student, or an edited notebook, others."""
    return f"{entry.student}|{hashlib.sha256(data).hexdigest()}"


def grade_one(batch: _Batch, index: int, entry: intake.Entry) -> Graded:
    """Read, compose, run and score one submission."""
    exercise, limits = batch.exercise, batch.limits
    data = intake.read(entry, limits.max_notebook_mb * 2 ** 20)
    if isinstance(data, intake.Unreadable):
        if data.too_large:
            return _unreadable(exercise, entry, f"the file is larger than {limits.max_notebook_mb} MB",
                               Status.TOO_LARGE)
        return _unreadable(exercise, entry, data.reason, Status.UNREADABLE)
    key = submission_key(entry, data)
    nonce = secrets.token_hex(16)
    prep = prepare(data, batch.template, exercise.for_student(key), nonce, limits)
    if prep.problem:
        return _unreadable(exercise, entry, prep.problem, Status.TOO_LARGE if prep.too_large else Status.UNREADABLE)
    uid = batch.uids[index] if batch.walls is not None and batch.as_root else None
    result, seconds = batch.run(prep, limits, batch.work, uid, batch.walls)
    if batch.references is not None:
        batch.references.join()
    mine = exercise.for_student(key, expected=True)
    records = harvested(mine, result, nonce, limits)
    status, outcomes, notes, flags = score(mine, prep, result, limits, records)
    return Graded(entry.student, entry.relative, status, outcomes, notes, prep.free_text, seconds, flags=flags)


def _grade_safely(batch: _Batch, index: int, entry: intake.Entry) -> Graded:
    """Grade one submission; whatever goes wrong ends as a "grader error" row, never the batch."""
    start = time.monotonic()
    try:
        return grade_one(batch, index, entry)
    except Exception as exc:
        return grader_error(batch.exercise, entry, exc, time.monotonic() - start)


def _grade_all(batch: _Batch, files: list[intake.Entry], jobs: int | None, progress: Progress | None) -> list[Graded]:
    graded: list[Graded] = []
    begin = getattr(progress, "begin", None)
    if callable(begin):
        begin(len(files))
    with ThreadPoolExecutor(max_workers=jobs or len(os.sched_getaffinity(0))) as pool:
        futures = [pool.submit(_grade_safely, batch, i, entry) for i, entry in enumerate(files)]
        for done, future in enumerate(as_completed(futures), 1):
            graded.append(future.result())
            try:
                if progress is not None:
                    progress(done, len(files), graded[-1], batch.exercise)
            except Exception:  # a progress line must never cost the gradebook
                pass
    return graded


def _expected_in_background(exercise: Exercise) -> threading.Thread:
    """Draw every set of hidden cases and compute their expected results (the reference, in this
    process) while the first kernels start and run; a failure here shows where it is asked again."""
    def compute() -> None:
        try:
            if exercise.pool is not None:  # under the pool's lock: no other thread draws meanwhile
                exercise.pool.warm()
        except Exception:  # scoring asks again, and that row gets the error
            pass
    thread = threading.Thread(target=compute, name="t5grade-references", daemon=True)
    thread.start()
    return thread


def grade_folder(submissions: Path, out: Path, *, catalogue: Catalogue, exercise_id: str | None = None,
                 template: Path | None = None, course: Path | None = None, limits: Limits = Limits(),
                 jobs: int | None = None, isolation: str = "auto", hide: tuple[str, ...] = (),
                 progress: Progress | None = None, run: RunStep | None = None, seed: str | None = None,
                 variants: int = VARIANTS) -> list[Graded]:
    """Grade every submission under `submissions`; write the reports under `out`; return the verdicts.

    `seed` is the instructor's secret the hidden cases are drawn from (`Exercise.drawn`), recorded in the
    reports; None draws a new one. `variants` sets of cases are drawn, and each submission's cases are
    picked among them (`Exercise.for_student`). `run` runs one composed notebook (`run.execute.RunStep`);
    the default is the pooled workers. Tests pass their own.
    """
    submissions, out = submissions.resolve(), out.resolve()
    if out == submissions or submissions in out.parents:
        raise SettingsError("the report folder must not be inside the submissions folder")
    files, skipped = intake.survey(submissions)
    if exercise_id is None:
        max_bytes = limits.max_notebook_mb * 2 ** 20
        exercise_id = _infer_exercise((intake.read(e, max_bytes) for e in files), catalogue.exercise_ids(), limits)
    if exercise_id is None:
        raise SettingsError("cannot tell which exercise this is; pass --exercise")
    seed = secrets.token_hex(8) if seed is None else seed  # a new seed, when none was given (the reports record it)
    exercise = find(catalogue, exercise_id).drawn(seed, variants)
    root = course_root(course)  # also with --template: its solutions/ and tests/ must be hidden
    template_nb = load_template(exercise, template, root)
    kernel_uids = uids(max(1, len(files)))  # an empty folder still probes (and writes an empty report)
    as_root, full = os.geteuid() == 0, isolation != "none"
    check_isolation(isolation, kernel_uids[0])
    settings = RunSettings(limits, exercise.id, seed=exercise.seed,
                           isolation=("full: own user id per kernel" if as_root else "full: user namespaces")
                           if full else "none (--isolation none)",
                           memory=("one cgroup per submission" if as_root and Cgroup.available()
                                   else "the kernel's process tree, watched"))
    with work_area() as (work, ipc_root):
        shown = [str(submissions), str(work), str(ipc_root)] + [str(p) for p in (out,) if p.exists()]
        walls = class_walls(shown, root, hide, as_root) if full else None
        with run_step(run, work, template_nb, walls) as run_one:
            batch = _Batch(exercise, template_nb, limits, work, kernel_uids, walls, as_root, run_one,
                           _expected_in_background(exercise))
            graded = _grade_all(batch, files, jobs, progress)
        # the reports before the work area goes: nothing a kernel left there can cost them
        failed = store.write_all(out, exercise, graded, settings, skipped=skipped)
    if failed:
        raise store.ReportError(failed)
    return graded


def grader_error(exercise: Exercise, entry: intake.Entry, exc: BaseException, seconds: float = 0.0) -> Graded:
    """The row of a submission whose grading failed inside the grader: status "grader error"."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    place = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    message = "the grader failed on this notebook; your instructor has the details."
    outcomes = [q.outcome(ERROR, 0, message) for q in exercise.questions]
    notes = ["The grader could not grade this notebook (an error in the grader, logged for your instructor)."]
    return Graded(entry.student, entry.relative, Status.GRADER_ERROR, outcomes, notes, seconds=seconds,
                  error=f"{detail}{place}")
