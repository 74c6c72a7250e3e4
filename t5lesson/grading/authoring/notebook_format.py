"""The exercise notebook format: solutions/ is the source, exercises/ is made from it.

A solution notebook's cells carry `metadata["t5lesson"]` (`CellInfo`: the cell's name, its role,
its question); solutions sit between nbgrader's markers and become stubs in exercises/
(`make_exercise`). `validate` fails when the notebook and the bank disagree on the id, the title
or a question heading (`QUESTION_HEADING`, the one grammar of `## Question N (P points): title`).
See docs/grading.md, "Two sources, each fact in one of them".
"""
from __future__ import annotations

import ast
import copy
import re
import textwrap
from pathlib import Path
from typing import Any, TypedDict, cast

import nbformat
from nbformat import NotebookNode

from ..errors import GradingError
from ..exercise import Exercise
from ..questions.kinds import FreeText

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
ANSWER_STUB = "None  # YOUR ANSWER HERE"
WORKING_STUB = "None  # your working, not graded"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class SourceError(GradingError, ValueError):
    """A solution notebook breaks the format (unmatched markers, unknown question, ...)."""


class CellInfo(TypedDict, total=False):
    """A cell's `metadata["t5lesson"]`."""
    cell: str  # its stable name
    role: str  # given (the default), answer or check
    question: str  # the question id of an answer or check cell


def read(path: Path) -> NotebookNode:
    """A notebook file, as nbformat 4 (nbformat's own functions are untyped)."""
    return cast(NotebookNode, nbformat.read(path, as_version=4))  # pyright: ignore[reportUnknownMemberType] (untyped)


def writes(nb: object) -> str:
    """The notebook as text, in nbformat's canonical layout."""
    return nbformat.writes(nb)  # pyright: ignore[reportUnknownMemberType] (untyped library)


def _fields(node: object) -> dict[str, Any]:
    """A notebook or a cell as the dict it is at run time (nbformat's NotebookNode, or plain JSON)."""
    return cast("dict[str, Any]", node) if isinstance(node, dict) else {}


def _t5lesson(node: object) -> dict[str, Any]:
    """A notebook's or a cell's `metadata["t5lesson"]` ({} when it has none or it is not a dict)."""
    metadata = _fields(_fields(node).get("metadata"))
    return _fields(metadata.get("t5lesson"))


def cell_info(cell: object) -> CellInfo:
    """The cell's t5lesson metadata."""
    return cast(CellInfo, _t5lesson(cell))


def cell_key(cell: object) -> str | None:
    """The stable name of a cell: its t5lesson name, else its nbformat id."""
    name = cell_info(cell).get("cell")
    if isinstance(name, str):
        return name
    found = _fields(cell).get("id")
    return found if isinstance(found, str) else None


def exercise_id_of(nb: object) -> str | None:
    found = _t5lesson(nb).get("exercise")
    return found if isinstance(found, str) else None


def _blank_region(lines: list[str], indent: str, graded: str | None = None) -> list[str]:
    """A region that only assigns names (a quiz answer) keeps its names, as stubs; any other is the code stub."""
    try:
        body = ast.parse(textwrap.dedent("\n".join(lines))).body
    except SyntaxError:
        body = []
    if body and all(isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets) for n in body):
        names = dict.fromkeys(t.id for n in body if isinstance(n, ast.Assign) for t in n.targets
                              if isinstance(t, ast.Name))
        return [f"{indent}{name} = {ANSWER_STUB if graded in (None, name) else WORKING_STUB}" for name in names]
    return [indent + line for line in CODE_STUB]


def strip_solutions(source: str, where: str = "cell", graded: str | None = None) -> str:
    """Replace every BEGIN/END SOLUTION region of a code cell's source by its stub.

    graded: the question's answer name; other names a quiz region assigns get the working stub.
    """
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    for number, line in enumerate(source.split("\n"), 1):
        marker = line.strip()
        if marker == BEGIN:
            if region is not None:
                raise SourceError(f"{where}, line {number}: {BEGIN} inside another solution region")
            region, indent = [], line[:len(line) - len(line.lstrip())]
        elif marker == END:
            if region is None:
                raise SourceError(f"{where}, line {number}: {END} without {BEGIN}")
            out.extend(_blank_region(region, indent, graded))
            region = None
        elif region is not None:
            region.append(line)
        else:
            out.append(line)
    if region is not None:
        raise SourceError(f"{where}: {BEGIN} is never closed")
    return "\n".join(out)


def validate(nb: NotebookNode, exercise: Exercise, where: str = "notebook") -> None:
    """Check that a solution notebook and its exercise-bank entry agree with each other."""
    if exercise_id_of(nb) != exercise.id:
        raise SourceError(f"{where}: metadata names exercise {exercise_id_of(nb)!r}, expected {exercise.id!r}")
    keys = [cell_key(c) for c in nb.cells]
    if None in keys or len(set(keys)) != len(keys):
        raise SourceError(f"{where}: every cell needs a unique name (t5lesson.cell or an id)")
    answers: dict[str | None, list[NotebookNode]] = {}  # None: an answer cell that names no question
    for cell in nb.cells:
        info = cell_info(cell)
        if info.get("role", "given") not in ("given", "answer", "check"):
            raise SourceError(f"{where}, cell {cell_key(cell)}: unknown role {info.get('role')!r}")
        if info.get("role") == "answer":
            answers.setdefault(info.get("question"), []).append(cell)
        elif cell.cell_type == "code" and BEGIN in cell.source:
            raise SourceError(f"{where}, cell {cell_key(cell)}: solution markers outside an answer cell")
    for question in exercise.questions:
        cells = answers.pop(question.id, [])
        wanted = "markdown" if isinstance(question, FreeText) else "code"
        if len(cells) != 1 or cells[0].cell_type != wanted:
            raise SourceError(f"{where}: question {question.id} needs exactly one {wanted} answer cell")
        if isinstance(question, FreeText) and cell_key(cells[0]) != question.name:
            raise SourceError(f"{where}: the answer cell of {question.id} must be named {question.name!r}")
    if answers:
        raise SourceError(f"{where}: answer cells for unknown questions {sorted(map(str, answers))}")
    _validate_shown_facts(nb, exercise, where)


QUESTION_HEADING = re.compile(r"^## Question (\d+) \((\d+(?:\.\d+)?) points?(, marked by your instructor)?\): (.+)$",
                              re.MULTILINE)  # number, points, "marked by your instructor" or "", the title
CHECKER_CALL = re.compile(r"""checker\(["']([^"']+)["']\)""")


def _validate_shown_facts(nb: NotebookNode, exercise: Exercise, where: str) -> None:
    """The title, the question headings and points, and the checker's id agree with the bank."""
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    title = re.search(r"^# (.+)$", markdown, re.MULTILINE)
    if title is None or title.group(1).strip() != exercise.title:
        shown = title.group(1).strip() if title else None
        raise SourceError(f"{where}: the title heading is {shown!r}; the bank's title is {exercise.title!r}")
    headings: list[tuple[str, str, str, str]] = QUESTION_HEADING.findall(markdown)
    if len(headings) != len(exercise.questions):
        raise SourceError(f"{where}: {len(headings)} question headings for {len(exercise.questions)} questions")
    pairs = zip(exercise.questions, headings, strict=True)
    for position, (question, (number, points, marked, _)) in enumerate(pairs, 1):
        by_hand = not question.auto_scored
        if int(number) != position or float(points) != question.points or bool(marked) != by_hand:
            raise SourceError(f"{where}: the heading of question {number} says {points} points"
                              f"{', marked by the instructor' if marked else ''}; the bank's {question.id} has "
                              f"{question.points:g} points{', marked by the instructor' if by_hand else ''}")
    ids = {m for c in nb.cells if c.cell_type == "code" for m in CHECKER_CALL.findall(c.source)}
    if ids - {exercise.id}:
        raise SourceError(f"{where}: checker() is called with {sorted(ids)}, expected {exercise.id!r}")


def make_exercise(solution_nb: NotebookNode, exercise: Exercise, where: str = "notebook") -> NotebookNode:
    """The student version of a solution notebook (a new object; the input is not changed), with only
    what a notebook needs, so generated files are byte-for-byte reproducible."""
    validate(solution_nb, exercise, where)
    nb = copy.deepcopy(solution_nb)
    nb.metadata = NotebookNode({"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"},
                                "t5lesson": nb.metadata.get("t5lesson", {})})
    nb.nbformat, nb.nbformat_minor = 4, 5
    for cell in nb.cells:
        cell.metadata = NotebookNode({k: cell.metadata[k] for k in ("t5lesson", "tags") if k in cell.metadata})
        cell.id = cell_key(cell)  # never None: `validate` names every cell
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if "attachments" in cell and not cell.attachments:
            cell.pop("attachments")
        info = cell_info(cell)
        if info.get("role") == "answer":
            question = exercise[info.get("question", "")]
            cell.source = question.placeholder if isinstance(question, FreeText) else \
                strip_solutions(cell.source, f"{where}, cell {cell_key(cell)}", question.name)
    return nb
