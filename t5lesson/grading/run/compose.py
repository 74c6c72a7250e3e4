"""Read a submitted notebook and compose the notebook the grader will actually run.

The file is only read. The run follows the exercise's own order (the template): provided cells
as the template has them, answer cells from the submission by name (a missing one runs blank),
check() cells skipped, the student's extra cells after the cell they followed, then one
harvesting cell per auto-scored question with this run's nonce. See docs/grading.md, "How a
submission is run", step 2.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field

import nbformat
from nbformat.v4 import new_code_cell

from .. import harvest
from ..authoring.notebook_format import cell_info, cell_key, exercise_id_of
from ..exercise import Exercise
from ..protocol import Limits, mark_harvest
from ..questions.kinds import FreeText
from ..records import BoundsError, loads

__all__ = ["Prepared", "parse", "prepare", "harvest_source", "too_many_cells"]

_HARVEST_CODE = inspect.getsource(harvest)  # run from its text in the kernel (see harvest_source)
_HARVEST_CELL = """def __t5lesson_harvest():
    namespace = {{"__name__": "t5lesson_harvest"}}
    exec(compile({code!r}, "<t5lesson-harvest>", "exec"), namespace)
    namespace["emit"]({nonce!r}, {spec!r}, globals())
__t5lesson_harvest()
del __t5lesson_harvest"""


@dataclass
class Prepared:
    """A submission ready to run, or the reason it cannot be (`problem`)."""

    notebook: object = None
    problem: str | None = None
    too_large: bool = False  # the problem is the notebook's size (its status is "too large")
    notes: list[str] = field(default_factory=list)
    free_text: dict[str, str] = field(default_factory=dict)
    answer_cell: dict[str, int] = field(default_factory=dict)  # question -> index in the run notebook
    harvest_cell: dict[str, int] = field(default_factory=dict)  # question -> index of its harvesting cell
    origin: dict[int, str] = field(default_factory=dict)  # index in the run notebook -> words for feedback
    edited_checks: list[str] = field(default_factory=list)  # questions whose check cell held code of the student's


def harvest_source(spec: dict, nonce: str) -> str:
    """The code of one harvesting cell: harvest.py's text, run in a fresh namespace."""
    return _HARVEST_CELL.format(code=_HARVEST_CODE, nonce=nonce, spec=spec)


def _text(source) -> str | None:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    return None


TOO_MANY_CELLS = "the notebook has {cells:,} cells, more than the {limit:,} a submission may have, so it was not run"


class TooLarge(str):
    """A refusal that gives the submission the status "too large", not "unreadable"."""


def too_many_cells(cells: int, limits: Limits) -> str:
    """The refusal of a notebook with more cells than `limits.max_cells` (it counts as too large)."""
    return TooLarge(TOO_MANY_CELLS.format(cells=cells, limit=limits.max_cells))


def parse(data: bytes, limits: Limits = Limits()):
    """(cells, None, exercise id) for a readable notebook, else (None, the reason in words, None)."""
    try:
        doc = loads(data.decode("utf-8"), max_depth=Limits.NOTEBOOK_DEPTH, max_nodes=limits.notebook_nodes(),
                    constants=True)
    except UnicodeDecodeError:
        return None, "the file is not text (not UTF-8), so it is not a notebook", None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        return None, f"the file is not valid JSON ({where}): it is damaged or not a notebook", None
    except BoundsError as exc:
        return None, f"the file is not a notebook Jupyter writes: {exc}", None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        if isinstance(doc, dict) and "worksheets" in doc:
            return None, "the notebook is in the old format 3; open and save it in Jupyter first", None
        return None, "the file is JSON but not a notebook (it has no list of cells)", None
    if len(doc["cells"]) > limits.max_cells:  # before any cell is built: composing costs time per cell
        return None, too_many_cells(len(doc["cells"]), limits), None
    cells = []
    for number, raw in enumerate(doc["cells"], 1):
        source = _text(raw.get("source")) if isinstance(raw, dict) else None
        kind = raw.get("cell_type") if isinstance(raw, dict) else None
        if source is None or kind not in ("code", "markdown", "raw"):
            return None, f"cell {number} of the notebook is damaged (no type or no text)", None
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        cells.append(nbformat.from_dict({"cell_type": kind, "source": source, "metadata": metadata,
                                         "id": raw.get("id") if isinstance(raw.get("id"), str) else None}))
    claimed = exercise_id_of(doc) if isinstance(doc.get("metadata"), dict) else None
    return cells, None, claimed if isinstance(claimed, str) else None


@dataclass
class _Matched:
    """The submission's cells against the template's: each known cell by its key, the added ones by the
    known cell they follow (None: before the first), and the order the known ones came in."""

    by_key: dict[str, tuple[int, object]] = field(default_factory=dict)  # key -> (cell number, cell)
    extras: dict[str | None, list[tuple[int, object]]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def _match(cells, known: set[str], notes: list[str]) -> _Matched:
    """Find every known cell of the submission by its key; a student's own code cells ride behind the last one."""
    found, anchor = _Matched(), None
    for number, cell in enumerate(cells, 1):
        key = cell_key(cell)
        if key in known:
            if key in found.by_key:
                notes.append(f"The cell '{key}' appears twice; the later copy (cell {number}) was used.")
            found.by_key[key] = (number, cell)
            anchor = key
            found.order.append(key)
        elif cell.cell_type == "code" and cell.source.strip():
            found.extras.setdefault(anchor, []).append((number, cell))
    return found


class _RunCells:
    """The run notebook's cells as they are added, each with the words that say where it came from."""

    def __init__(self, out: Prepared):
        self.out, self.cells = out, []

    def add(self, cell, origin: str) -> int:
        """Append a cell; return its index in the run notebook."""
        self.out.origin[len(self.cells)] = origin
        self.cells.append(cell)
        return len(self.cells) - 1

    def add_extras(self, extras) -> None:
        """The code cells the student added here, as they wrote them."""
        for number, cell in extras:
            self.add(new_code_cell(cell.source), f"cell {number} (a cell you added)")


def _answer(run: _RunCells, template_cell, found, q) -> None:
    """An answer cell: free text is read from the file; code runs as submitted, or blank if it is missing."""
    out = run.out
    if isinstance(q, FreeText):
        out.free_text[q.id] = found[1].source if found and found[1].cell_type == "markdown" else ""
        if not found:
            out.notes.append(f"The answer cell of {q.id} was missing.")
    elif found and found[1].cell_type == "code":
        out.answer_cell[q.id] = run.add(new_code_cell(found[1].source), f"cell {found[0]} (the answer cell of {q.id})")
    else:
        out.notes.append(f"The answer cell of {q.id} was missing (or not a code cell); it counts as not attempted.")
        out.answer_cell[q.id] = run.add(new_code_cell(template_cell.source), f"the blank answer cell of {q.id}")


def _check_cell(run: _RunCells, found, question, edited: bool) -> None:
    """A check() cell is skipped, unless the student wrote something else into it: then it runs,
    and the feedback and the instructor's summary say so (code there runs beside the grader's)."""
    if edited:
        run.add(new_code_cell(found[1].source), f"cell {found[0]} (the check cell of {question}, edited)")
        run.out.edited_checks.append(question)
        run.out.notes.append(f"The check cell of {question} (cell {found[0]}) held code of your own, which ran; "
                             "your instructor sees this.")


def _given(run: _RunCells, template_cell, key: str, found, edited: bool) -> None:
    """A provided cell always runs as the template has it; the feedback says if it was lost or changed."""
    if found is None:
        run.out.notes.append(f"The provided cell '{key}' was missing; the original was run.")
    elif edited:
        run.out.notes.append(f"You changed the provided cell '{key}' (cell {found[0]}); the original was run.")
    run.add(new_code_cell(template_cell.source), f"the provided cell '{key}'")


def _compose(run: _RunCells, template_cell, key: str, found, exercise: Exercise) -> None:
    """The run notebook's cells for one template cell, by its role."""
    info = cell_info(template_cell)
    role, question = info.get("role", "given"), info.get("question")
    if role == "answer":
        _answer(run, template_cell, found, exercise[str(question)])
    elif template_cell.cell_type == "code":
        edited = found is not None and found[1].source.strip() != template_cell.source.strip()
        if role == "check":
            _check_cell(run, found, question, edited)
        else:
            _given(run, template_cell, key, found, edited)


def _harvest_spec(q, limits: Limits) -> dict:
    """What the harvesting cell of `q` collects; a code question's with how many slow cases it may have."""
    spec = q.harvest_spec()
    return {**spec, "slow_cases": limits.slow_cases} if spec.get("kind") == "code" else spec


def _add_harvest_cells(run: _RunCells, exercise: Exercise, nonce: str, limits: Limits) -> None:
    """At the end, one harvesting cell per auto-scored question."""
    for q in exercise.questions:
        if q.auto_scored:
            cell = new_code_cell(harvest_source(_harvest_spec(q, limits), nonce))
            mark_harvest(cell, q.id)
            run.out.harvest_cell[q.id] = run.add(cell, f"the grader's reading of {q.id}")


_BLOCKING_CELL = """def __t5lesson_block():
    for name in {load_first!r}:
        try:
            __import__(name)
        except Exception:
            pass  # the provided cell that loads it says what went wrong
    namespace = {{"__name__": "t5lesson_harvest"}}
    exec(compile({code!r}, "<t5lesson-harvest>", "exec"), namespace)
    namespace["block_for_the_run"]({targets!r})
__t5lesson_block()
del __t5lesson_block"""


def run_blocked(exercise: Exercise) -> list[str]:
    """The reference implementations blocked for the whole run: every code question's `blocked`
    targets, but those another question of the exercise is answered with (`open_until_read`)."""
    kept_open = {t for q in exercise.questions for t in getattr(q, "open_until_read", ())}
    targets = (t for q in exercise.questions for t in getattr(q, "blocked", ()))
    return [t for t in dict.fromkeys(targets) if t not in kept_open]


def _add_blocking_cell(run: _RunCells, exercise: Exercise) -> None:
    """First of all, before any cell of the submission: the references blocked (see `run_blocked`)."""
    targets = run_blocked(exercise)
    if targets:
        cell = new_code_cell(_BLOCKING_CELL.format(code=_HARVEST_CODE, targets=targets,
                                                   load_first=list(exercise.load_first)))
        mark_harvest(cell, "")
        run.add(cell, "the grader's first cell")


def _notebook(cells):
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return nb


def _template_key(cell) -> str:
    key = cell_key(cell)
    assert key is not None, "a template cell without a name (notebook_format.validate refuses those)"
    return key


def prepare(data: bytes, template, exercise: Exercise, nonce: str, limits: Limits = Limits()) -> Prepared:
    """Compose the run notebook for one submission (see module doc)."""
    cells, problem, claimed = parse(data, limits)
    if problem:
        return Prepared(problem=str(problem), too_large=isinstance(problem, TooLarge))
    out = Prepared()
    if claimed is not None and claimed != exercise.id:
        out.notes.append(f"This notebook says it is exercise {claimed[:60]!r}; it was graded as {exercise.id!r}.")
    template_keys = [_template_key(c) for c in template.cells]
    found = _match(cells, set(template_keys), out.notes)
    present = [k for k in template_keys if k in found.by_key]
    if [k for k in dict.fromkeys(found.order) if k in found.by_key] != present:
        out.notes.append("Some cells were moved; the notebook was run in the original order of the exercise.")

    run = _RunCells(out)
    _add_blocking_cell(run, exercise)
    run.add_extras(found.extras.get(None, []))
    for template_cell in template.cells:
        key = _template_key(template_cell)
        _compose(run, template_cell, key, found.by_key.get(key), exercise)
        run.add_extras(found.extras.get(key, []))
    _add_harvest_cells(run, exercise, nonce, limits)
    out.notebook = _notebook(run.cells)
    return out
