"""Instant feedback in the notebook: `check("q4")` prints one line, `hint("q4")` one hint.

`check` scores with exactly the grader's code (`questions.kinds` on `harvest`'s plain records), so
"Correct" here means full marks there; it never raises. A free-text answer is read from the
notebook as last saved. See docs/grading.md, "In the notebook: check() and hint()".
"""
from __future__ import annotations

import inspect
import json
import os
import textwrap
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from . import harvest
from .exercise import Exercise
from .questions.kinds import FreeText, Question
from .records import as_dict
from .verdict import INCORRECT, NOT_ATTEMPTED, Outcome

WIDTH = 88  # a printed line fits a 1400 px JupyterLab window; longer ones would wrap mid-word there


def say(text: str) -> None:
    """Print feedback wrapped between words at WIDTH; a wrapped line is indented under its first one."""
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" -")) + 2)
        print(textwrap.fill(line, WIDTH, subsequent_indent=indent, break_long_words=False,
                            break_on_hyphens=False) if line.strip() else line)


class Checker:
    """check() and hint() for one exercise; keeps how many hints each question has shown."""

    def __init__(self, exercise: Exercise):
        self.exercise = exercise
        self._hints_shown: dict[str, int] = {}

    def _question(self, question_id: str) -> Question | None:
        try:
            return self.exercise[question_id]
        except KeyError:
            say(f"{question_id!r} is not a question here; the questions are {', '.join(self.exercise.ids)}.")
            return None

    def outcome(self, question_id: str, *value: object,
                namespace: Mapping[str, object] | None = None) -> Outcome | None:
        """The Outcome for a question (what check prints), or None for an unknown id."""
        question = self._question(question_id)
        if question is None:
            return None
        if isinstance(question, FreeText):
            if value:
                return question.self_check(value[0] if isinstance(value[0], str) else "")
            text = saved_answer(self.exercise.id, question.name, namespace or {})
            if text is None:
                return Outcome(question.id, NOT_ATTEMPTED, 0.0, float(question.points),
                               "check could not find this notebook's saved file. Save it and run check again, "
                               f'or give your answer as text: check("{question.id}", """...""").')
            return question.self_check(text)
        namespace = {question.name: value[0]} if value else namespace or {}
        return question.score(harvest.collect(question.harvest_spec(), namespace))

    def check(self, question_id: str, *value: object) -> None:
        """Print one line: Correct, Partly correct, Incorrect (with a nudge), Not attempted, or Error."""
        if len(value) > 1:
            say("check takes the question id and at most one answer, e.g. check(\"q1\", \"B\").")
            return
        caller = inspect.currentframe()
        namespace = caller.f_back.f_globals if caller is not None and caller.f_back is not None else {}
        try:
            result = self.outcome(question_id, *value, namespace=namespace)
        except Exception as exc:  # check must never drown the learner in a traceback
            error, _ = harvest.describe_error(exc)
            say(f"{question_id}: check could not run ({error}). Please tell your instructor.")
            return
        if result is not None:
            if result.status == INCORRECT and not result.message:
                # A wrong answer we have no sentence for: a neutral nudge, never a hint (hint() has those).
                result = replace(result, message=f'not this one. Try again, or run hint("{question_id}").')
            say(result.line())

    def hint(self, question_id: str) -> None:
        """Print the next hint for a question: level 1 first, then 2, ...; the last one repeats."""
        question = self._question(question_id)
        if question is None:
            return
        if not question.hints:
            say(f"{question_id}: there are no hints for this question.")
            return
        level = min(self._hints_shown.get(question_id, 0) + 1, len(question.hints))
        self._hints_shown[question_id] = level
        more = "" if level < len(question.hints) else " (that was the last hint)"
        say(f"{question_id} hint {level}/{len(question.hints)}: {question.hints[level - 1]}{more}")


def _t5lesson(item: object) -> dict[str, Any]:
    """The "t5lesson" metadata of a notebook or a cell, {} where there is none."""
    return as_dict((as_dict((as_dict(item) or {}).get("metadata")) or {}).get("t5lesson")) or {}


def saved_answer(exercise_id: str, cell_name: str, namespace: Mapping[str, object]) -> str | None:
    """The text of a free-text answer cell in the saved notebook, or None when no notebook is found.

    The kernel sees the notebook only as last saved: the first candidate file (the one Jupyter or
    VS Code names, else EXERCISE_ID.ipynb here) that is this exercise's notebook is read, and its
    Markdown cell named `cell_name` returned ("" when gone)."""
    named = [namespace.get("__session__"), namespace.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")]
    candidates = [Path(p) for p in named if isinstance(p, str) and p.endswith(".ipynb")]
    for path in candidates + [Path.cwd() / f"{exercise_id}.ipynb"]:
        try:
            nb = as_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
        cells = nb.get("cells") if nb is not None else None
        if not isinstance(cells, list) or _t5lesson(nb).get("exercise") not in (None, exercise_id):
            continue
        for cell in map(as_dict, cast("list[object]", cells)):
            if cell is not None and cell.get("cell_type") == "markdown" and \
                    (_t5lesson(cell).get("cell") or cell.get("id")) == cell_name:
                source = cell.get("source", "")
                return "".join(map(str, cast("list[object]", source))) if isinstance(source, list) else str(source)
        return ""
    return None
