"""Read a submitted notebook and compose the notebook the grader will actually run.

The file is only read. The run follows the exercise's own order (the template): provided cells
as the template has them, answer cells from the submission by name (a missing one runs blank),
check() cells skipped, the student's extra cells after the cell they followed, then one
harvesting cell per auto-scored question with this run's nonce. See docs/grading.md, "How a
submission is run", step 2. nbformat is untyped: `Cell` and `Notebook` say what is used of it.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import nbformat

from .. import harvest, protocol
from ..authoring.notebook_format import cell_info, cell_key, exercise_id_of
from ..exercise import Exercise
from ..protocol import Limits, mark_harvest
from ..questions.kinds import FreeText
from ..records import BoundsError, loads


class Cell(protocol.Cell, Protocol):
    cell_type: str
    source: str


class Notebook(Protocol):
    cells: list[Cell]
    metadata: dict[str, Any]


def read_notebook(path: Path) -> Notebook:
    return cast(Notebook, nbformat.read(path, as_version=4))  # pyright: ignore[reportUnknownMemberType] (untyped)


_HARVEST_CODE = inspect.getsource(harvest)  # run from its text in the kernel, in a fresh namespace
_HARVEST_CELL = """def __t5lesson_harvest():
    namespace = {{"__name__": "t5lesson_harvest"}}
    exec(compile({code!r}, "<t5lesson-harvest>", "exec"), namespace)
    namespace["emit"]({nonce!r}, {spec!r}, globals())
__t5lesson_harvest()
del __t5lesson_harvest"""
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
TOO_MANY_CELLS = "the notebook has {cells:,} cells, more than the {limit:,} a submission may have, so it was not run"
Found = tuple[int, Cell]  # a cell of the submission and its number (from 1)


@dataclass
class Prepared:
    """A submission ready to run, or the reason it cannot be (`problem`)."""

    notebook: Notebook = cast(Notebook, None)  # set unless there is a problem; its cells come from `add`
    problem: str | None = None
    too_large: bool = False  # the problem is the notebook's size (its status is "too large")
    notes: list[str] = field(default_factory=list[str])
    free_text: dict[str, str] = field(default_factory=dict[str, str])
    answer_cell: dict[str, int] = field(default_factory=dict[str, int])  # question -> index in the run notebook
    harvest_cell: dict[str, int] = field(default_factory=dict[str, int])  # question -> index of its reading cell
    origin: dict[int, str] = field(default_factory=dict[int, str])  # index in the run notebook -> words for feedback
    edited_checks: list[str] = field(default_factory=list[str])  # questions whose check cell held the student's code

    def add(self, source: str, origin: str, harvest: str | None = None) -> int:
        """Append a code cell (the reading cell of question `harvest`, if given) and where it came from; its index."""
        cell = cast(Cell, nbformat.v4.new_code_cell(source))  # pyright: ignore[reportUnknownMemberType] (untyped)
        if harvest is not None:
            mark_harvest(cell, harvest)
        self.origin[len(self.notebook.cells)] = origin
        self.notebook.cells.append(cell)
        return len(self.notebook.cells) - 1

    def add_extras(self, extras: Iterable[Found]) -> None:
        """The code cells the student added here, as they wrote them."""
        for number, cell in extras:
            self.add(cell.source, f"cell {number} (a cell you added)")


class TooLarge(str):
    """A refusal that gives the submission the status "too large", not "unreadable"."""


def _cell(raw: object) -> Cell | None:
    """A cell of the submission built anew from its type, text, metadata and id; None when it is damaged."""
    if not isinstance(raw, dict):
        return None
    cell = cast(dict[str, object], raw)
    source, kind, metadata, key = cell.get("source"), cell.get("cell_type"), cell.get("metadata"), cell.get("id")
    if isinstance(source, list) and all(isinstance(s, str) for s in cast(list[object], source)):
        source = "".join(cast(list[str], source))
    if not isinstance(source, str) or kind not in ("code", "markdown", "raw"):
        return None
    return cast(Cell, nbformat.from_dict({  # pyright: ignore[reportUnknownMemberType] (untyped)
        "cell_type": kind, "source": source, "metadata": metadata if isinstance(metadata, dict) else {},
        "id": key if isinstance(key, str) else None}))


def parse(data: bytes, limits: Limits = Limits()) -> tuple[list[Cell] | None, str | None, str | None]:
    """(cells, None, exercise id) for a readable notebook, else (None, the reason in words, None)."""
    try:
        doc: object = loads(data.decode("utf-8"), max_depth=Limits.NOTEBOOK_DEPTH,
                            max_nodes=limits.notebook_nodes(), constants=True)
    except UnicodeDecodeError:
        return None, "the file is not text (not UTF-8), so it is not a notebook", None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        return None, f"the file is not valid JSON ({where}): it is damaged or not a notebook", None
    except BoundsError as exc:
        return None, f"the file is not a notebook Jupyter writes: {exc}", None
    top = cast(dict[str, object], doc) if isinstance(doc, dict) else {}
    raw = cast(list[object], top["cells"]) if isinstance(top.get("cells"), list) else None
    if raw is None:
        if "worksheets" in top:
            return None, "the notebook is in the old format 3; open and save it in Jupyter first", None
        return None, "the file is JSON but not a notebook (it has no list of cells)", None
    if len(raw) > limits.max_cells:  # before any cell is built: composing costs time per cell
        return None, TooLarge(TOO_MANY_CELLS.format(cells=len(raw), limit=limits.max_cells)), None
    cells = [_cell(item) for item in raw]
    if None in cells:
        return None, f"cell {cells.index(None) + 1} of the notebook is damaged (no type or no text)", None
    return cast(list[Cell], cells), None, exercise_id_of(top)


def _match(cells: list[Cell], known: set[str],
           notes: list[str]) -> tuple[dict[str, Found], dict[str | None, list[Found]]]:
    """The submission's cells against the template's: each known cell by its key (in the order they first
    came), the student's own code cells by the known cell they follow (None: before the first)."""
    by_key: dict[str, Found] = {}
    extras: dict[str | None, list[Found]] = {}
    anchor = None
    for number, cell in enumerate(cells, 1):
        key = cell_key(cell)
        if key is not None and key in known:
            if key in by_key:
                notes.append(f"The cell '{key}' appears twice; the later copy (cell {number}) was used.")
            by_key[key] = (number, cell)
            anchor = key
        elif cell.cell_type == "code" and cell.source.strip():
            extras.setdefault(anchor, []).append((number, cell))
    return by_key, extras


def _compose(out: Prepared, template_cell: Cell, key: str, found: Found | None, exercise: Exercise) -> None:
    """The run notebook's cells for one template cell, by its role. An answer cell's free text is read
    from the file; its code runs as submitted, or blank if it is missing. A provided cell always runs as
    the template has it; a check() cell is skipped, unless the student wrote something else into it:
    then it runs, and the feedback and the instructor's summary say so."""
    info = cell_info(template_cell)
    role, question = info.get("role", "given"), str(info.get("question"))
    if role == "answer":
        if isinstance(exercise[question], FreeText):
            out.free_text[question] = found[1].source if found and found[1].cell_type == "markdown" else ""
            if not found:
                out.notes.append(f"The answer cell of {question} was missing.")
        elif found and found[1].cell_type == "code":
            out.answer_cell[question] = out.add(found[1].source, f"cell {found[0]} (the answer cell of {question})")
        else:
            out.notes.append(f"The answer cell of {question} was missing (or not a code cell); it counts as not "
                             "attempted.")
            out.answer_cell[question] = out.add(template_cell.source, f"the blank answer cell of {question}")
        return
    if template_cell.cell_type != "code":
        return
    edited = found is not None and found[1].source.strip() != template_cell.source.strip()
    if role == "check":
        if found is not None and edited:
            out.add(found[1].source, f"cell {found[0]} (the check cell of {question}, edited)")
            out.edited_checks.append(question)
            out.notes.append(f"The check cell of {question} (cell {found[0]}) held code of your own, which ran; "
                             "your instructor sees this.")
        return
    if found is None:
        out.notes.append(f"The provided cell '{key}' was missing; the original was run.")
    elif edited:
        out.notes.append(f"You changed the provided cell '{key}' (cell {found[0]}); the original was run.")
    out.add(template_cell.source, f"the provided cell '{key}'")


def run_blocked(exercise: Exercise) -> list[str]:
    """The reference implementations blocked for the whole run: every code question's `blocked`
    targets, but those another question of the exercise is answered with (`open_until_read`)."""
    kept_open = {t for q in exercise.questions for t in getattr(q, "open_until_read", ())}
    targets = (t for q in exercise.questions for t in getattr(q, "blocked", ()))
    return [t for t in dict.fromkeys(targets) if t not in kept_open]


def _template_key(cell: Cell) -> str:
    key = cell_key(cell)
    assert key is not None, "a template cell without a name (notebook_format.validate refuses those)"
    return key


def prepare(data: bytes, template: Notebook, exercise: Exercise, nonce: str, limits: Limits = Limits()) -> Prepared:
    """Compose the run notebook for one submission (see module doc): first the references blocked
    (`run_blocked`), then the exercise's cells, last one harvesting cell per auto-scored question."""
    cells, problem, claimed = parse(data, limits)
    if cells is None:
        return Prepared(problem=str(problem), too_large=isinstance(problem, TooLarge))
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = Prepared(cast(Notebook, nbformat.v4.new_notebook(  # pyright: ignore[reportUnknownMemberType] (untyped)
        metadata={"kernelspec": kernelspec})))
    if claimed is not None and claimed != exercise.id:
        out.notes.append(f"This notebook says it is exercise {claimed[:60]!r}; it was graded as {exercise.id!r}.")
    template_keys = [_template_key(c) for c in template.cells]
    by_key, extras = _match(cells, set(template_keys), out.notes)
    if list(by_key) != [k for k in template_keys if k in by_key]:
        out.notes.append("Some cells were moved; the notebook was run in the original order of the exercise.")
    blocked = run_blocked(exercise)
    if blocked:
        out.add(_BLOCKING_CELL.format(code=_HARVEST_CODE, targets=blocked, load_first=list(exercise.load_first)),
                "the grader's first cell", harvest="")
    out.add_extras(extras.get(None, []))
    for template_cell, key in zip(template.cells, template_keys, strict=True):
        _compose(out, template_cell, key, by_key.get(key), exercise)
        out.add_extras(extras.get(key, []))
    for q in exercise.questions:
        if q.auto_scored:
            spec: dict[str, object] = q.harvest_spec()
            if spec.get("kind") == "code":  # with how many slow cases a code question may have
                spec = {**spec, "slow_cases": limits.slow_cases}
            source = _HARVEST_CELL.format(code=_HARVEST_CODE, nonce=nonce, spec=spec)  # harvest.py, in a namespace
            out.harvest_cell[q.id] = out.add(source, f"the grader's reading of {q.id}", harvest=q.id)
    return out
