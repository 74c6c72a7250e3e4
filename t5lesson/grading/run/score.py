"""Score one run in the grader's process, from the worker's result and the records the kernel printed.

Nothing the student's code returned is trusted beyond being their answer: each record is parsed
within the run's bounds (`Limits`), cleaned (`records.clean_record`) and scored by its question;
every cell that failed, every limit hit, becomes a note of the feedback. See docs/grading.md,
"How a submission is run", step 5.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, cast

from ..exercise import Exercise
from ..protocol import EXIT_ENAME, FAILED_CELL, KERNEL_BROKEN_ENAME, CellResult, CellStatus, Limits, RunResult
from ..questions.kinds import Question
from ..records import clean_record, loads
from ..reports.files import inert
from ..sandbox.resources import harvest_reserve
from ..verdict import ERROR, NOT_ATTEMPTED, PARTIAL, Outcome, Status, status_of
from .compose import Prepared

Record = dict[str, Any]  # a cleaned record (`records.clean_record`): plain values only
Records = dict[str, "Record | None"]  # question id -> its record, None when it could not be read

_WHY_UNREAD = {Status.STUCK: "a cell never stopped, so the answers could not be read",
               Status.KERNEL_DIED: "the kernel died before all the answers could be read",
               Status.KERNEL_BROKEN: "the notebook broke its kernel's messaging, so the answers could not be read",
               Status.GRADER_ERROR: "the notebook could not be run"}


def read_record(text: object, nonce: str, question_id: str, limits: Limits) -> Record | None:
    """The record of one question from the harvesting cell's output, or None if unusable."""
    if not isinstance(text, str):
        return None
    try:  # bounded: the text came out of the student's kernel
        found: object = loads(text, max_depth=Limits.HARVEST_DEPTH, max_nodes=limits.harvest_nodes(),
                              max_chars=limits.harvest_limit)
    except ValueError:
        return None
    payload = cast(dict[str, object], found) if isinstance(found, dict) else {}
    if payload.get("nonce") != nonce or payload.get("id") != question_id:
        return None
    record: Record = clean_record(payload.get("record"))
    record["tampering"] = _tampering(payload)
    return record


_SAFE = re.compile(r"[^A-Za-z0-9_.,:;()<> -]")


def _tampering(payload: dict[str, object]) -> list[str]:
    """What the reading cell saw run around it (`harvest.audit`), as sentences: hooks, a blocking
    undone mid-read, or no audit at all (a record the grader's reading code did not write)."""
    audit, record = payload.get("audit"), payload.get("record")
    hooks = cast(list[object], audit) if isinstance(audit, list) else [None]
    if not all(isinstance(h, str) for h in hooks):
        return ["its record lacks the grader's own check, so it did not come from the grader's reading cell"]
    ran = ", ".join(_SAFE.sub("?", str(h)[:120]) for h in hooks[:20])
    found = [f"around the grader's reading cell ran {ran}"] if hooks else []
    if isinstance(record, dict) and cast(dict[str, object], record).get("unblocked") is True:
        found.append("the blocking of the reference was undone while the answer was read")
    return found


def _capped(outcome: Outcome, flags: list[str]) -> Outcome:
    """At most a third of the question's points when something reached into its reading."""
    points = min(outcome.points, round(outcome.max_points / 3, 2))
    why = "; ".join(flags[:3])
    return replace(outcome, points=points, status=PARTIAL if points < outcome.points else outcome.status,
                   message=f"{outcome.message} The grader's reading of this answer was tampered with ({why}): "
                           "at most a third of its points; your instructor sees this.")


def _cell_error(cell: CellResult, origin: str) -> str:
    """'ZeroDivisionError: division by zero in cell 21 (the answer cell of q6), line 1'."""
    evalue = f": {cell.evalue}" if cell.evalue else ""
    inside = f", in {cell.function}" if cell.function and cell.function not in ("<module>", "") else ""
    line = f", line {cell.line}{inside}" if cell.line else ""
    return f"{'Error' if cell.ename is None else cell.ename}{evalue} in {origin}{line}"


def _cell_notes(prep: Prepared, cells: dict[int, CellResult], limits: Limits) -> list[str]:
    """A note for each of the student's cells that did not end as cells should or printed too much, and
    one for the cells skipped."""
    notes: list[str] = []
    skipped = 0
    harvesting = set(prep.harvest_cell.values())
    for index in sorted(cells):
        cell, origin = cells[index], prep.origin.get(index, f"cell {index + 1}")
        if index in harvesting:
            continue
        if cell.status == CellStatus.ERROR and cell.ename == EXIT_ENAME:
            notes.append(f"{origin.capitalize()} called exit() or quit(): the rest of that cell did not run; "
                         "the cells after it ran as usual.")
        elif cell.status == CellStatus.ERROR and cell.ename == KERNEL_BROKEN_ENAME:
            notes.append(f"After {origin}, the grader could no longer talk to the kernel ({cell.evalue}): "
                         "the notebook broke the kernel's messaging (its session, sockets or output). "
                         "Nothing after it could run.")
        elif cell.status == CellStatus.ERROR:
            notes.append(f"Error: {_cell_error(cell, origin)}.")
        elif cell.status == CellStatus.TIMEOUT:
            notes.append(f"{origin.capitalize()} ran past the limit of {limits.cell_timeout:g} s per cell "
                         "and was interrupted.")
        elif cell.status == CellStatus.STUCK:
            notes.append(f"{origin.capitalize()} ran past its time limit and did not stop when interrupted; "
                         "nothing after it could run.")
        elif cell.status == CellStatus.DIED:
            notes.append(f"The kernel died while running {origin} (os._exit, a crash, or too much memory); "
                         "nothing after it could run.")
        skipped += cell.status == CellStatus.SKIPPED
        if cell.truncated:
            notes.append(f"{origin.capitalize()} printed {cell.output_bytes:,} characters; output beyond "
                         f"{limits.output_limit // 1000} kB per cell (or 1 MB in all) was dropped.")
    if skipped:
        notes.append(f"{skipped} cell(s) were not run: the notebook used up its {limits.notebook_timeout:g} s "
                     f"(the last {harvest_reserve(limits):g} s of which are kept for reading the answers).")
    return notes


def _stopped(limits: Limits) -> str:
    return f"the notebook was stopped after its hard limit of {limits.hard_limit():g} s"


def _run_status(prep: Prepared, result: RunResult | None, limits: Limits,
                notes: list[str]) -> tuple[Status, dict[int, CellResult], dict[str, str]]:
    """(status, cells by index, harvested texts by question) of one run; adds its notes to `notes`."""
    if result is None:
        notes.append(f"The run was stopped from outside: {_stopped(limits)}.")
        return Status.TIME_LIMIT, {}, {}
    cells, status = {c.index: c for c in result.cells}, status_of(result.ended)
    # after a kernel died or broke, what was read before the end depends on timing: none of it counts
    harvest = {} if status in (Status.KERNEL_DIED, Status.KERNEL_BROKEN) else result.harvest
    reading = [cells[i].status if i in cells else None for i in prep.harvest_cell.values()]
    if status == Status.GRADED and reading and not harvest and all(r == CellStatus.OK for r in reading):
        status = Status.KERNEL_BROKEN  # every reading cell ran, and not one answer came out
        notes.append("The grader's cells ran but no answer came back: the notebook broke the kernel's output "
                     "(closed its channel, or replaced how it displays data).")
    notes += _cell_notes(prep, cells, limits)
    if result.memory_exceeded:
        notes.append(f"The notebook went over its memory limit of {limits.memory_mb} MB (all its processes "
                     "together) and was stopped.")
    if status == Status.GRADER_ERROR:
        notes.append(f"The grader could not run this notebook: {result.detail[:300]}. "
                     "Please tell your instructor.")
    return status, cells, harvest


def _outcome(q: Question, prep: Prepared, cells: dict[int, CellResult], record: Record | None, why: str) -> Outcome:
    """The outcome of an auto-scored question from its record, else why the record could not be read back;
    an unattempted answer whose cell failed says why."""
    if record is None:
        reading = cells.get(prep.harvest_cell.get(q.id, -1))
        reason = why or "your answer could not be read back"
        if reading is not None and reading.status in (CellStatus.ERROR, CellStatus.TIMEOUT):
            # the error's name only: its text may come from the learner's code, called on a hidden case
            shown = replace(reading, evalue="")
            reason = (f"your answer could not be read back ({_cell_error(shown, 'the grader')}); "
                      "did the notebook replace a built-in?")
        return q.outcome(ERROR, 0, reason + ".")
    outcome = q.score(record)
    answer = cells.get(prep.answer_cell.get(q.id, -1))
    if outcome.status != NOT_ATTEMPTED or answer is None or answer.status not in FAILED_CELL:
        return outcome
    origin = prep.origin[prep.answer_cell[q.id]]
    what = _cell_error(answer, origin) if answer.status == CellStatus.ERROR else f"{origin} did not finish"
    return q.outcome(ERROR, 0, f"{what}.")


def score(exercise: Exercise, prep: Prepared, result: RunResult | None, limits: Limits,
          records: Records) -> tuple[Status, list[Outcome], list[str], dict[str, list[str]]]:
    """(status, one Outcome per question, notes, findings for the instructor) for one run, computed in
    the grader's process from its records as `harvested` decodes them. The findings: what reached into
    the reading of each answer that counted (a second record printed in its reading cell, what its
    record's audit found), which caps its points, and edited check cells."""
    notes = list(prep.notes)
    status, cells, harvest = _run_status(prep, result, limits, notes)
    why = _stopped(limits) if result is None else _WHY_UNREAD.get(status, "")
    extra = set(result.extra_records) if result is not None else set[str]()
    outcomes: list[Outcome] = []
    flags: dict[str, list[str]] = {}
    for q in exercise.questions:
        record = records.get(q.id) if q.id in harvest else None
        if q.auto_scored:
            outcome = _outcome(q, prep, cells, record, why)
        else:
            outcome = q.score({"text": prep.free_text.get(q.id, "")})
        found = ["its reading cell printed more than one record"] if q.id in extra else []
        found += [str(f) for f in record.get("tampering", [])] if record is not None else []
        if found:
            flags[q.id], outcome = found, _capped(outcome, found)
        outcomes.append(outcome)
    for question in prep.edited_checks:
        flags.setdefault(question, []).append("its check cell was edited and ran code of the student's")
    # error texts, answers and names in them came from the kernel: inert, one line each, from here on
    return status, [replace(o, message=inert(o.message)) for o in outcomes], [inert(note) for note in notes], flags


def harvested(exercise: Exercise, result: RunResult | None, nonce: str, limits: Limits) -> Records:
    """{question id: its record, or None} for every auto-scored question, each decoded once."""
    harvest = result.harvest if result is not None else {}
    return {q.id: read_record(harvest.get(q.id), nonce, q.id, limits) for q in exercise.questions if q.auto_scored}
