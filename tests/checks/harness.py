"""The checks harness: every learner-facing check is run on wrong answers, and must hold them.

A check is a your-turn cell's `your_turn(...)` or an exercise's code question (`check("q7")`, and
the grader on drawn hidden cases). For each one a catalogue module (catalogue/lessonNN.py) holds:

- the course's answer, as the source a learner would type (from solutions/), for the mutants;
- wrong answers a learner could plausibly write, as source: at least six hand-written slips;
- right answers written differently from the course's (and in a cited reference's style);
- `differs(function, seed)`: differential testing on many random inputs, the proof that an
  answer is wrong (a sentence) or agrees (None) with the course's version.

A wrong answer is *held* when the public check does not accept it ("differs", "raised",
"calls the course's version" in a lesson; anything but Correct in an exercise) and, for an
exercise, the grader gives it under a third of the points on drawn hidden cases for two seeds.
Mutants are made mechanically from the course's answer (mutants.py); one counts only when
`differs` proves it wrong, so a mutant equal on every input is dropped, not held against the check.
"""
from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ("harness one", "harness two")  # the two instructor seeds a wrong answer is graded under


def _quietly(function: Callable, *args, **kwargs):
    """function(*args) with its printing caught; returns (result, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), np.errstate(all="ignore"), torch.random.fork_rng(devices=[]):
        result = function(*args, **kwargs)
    return result, out.getvalue()


def define(source: str, namespace: dict, name: str, filename: str) -> Callable:
    """Run `source` (a cell's definitions) in a copy of `namespace`, as a notebook cell, and return `name`."""
    scope = dict(namespace)
    exec(compile(source, filename, "exec"), scope)
    return scope[name]


@dataclass
class Check:
    """One check and its catalogue (see the module's docstring); a subclass says how to run the check."""

    id: str
    answer: str  # the course's answer as a learner would type it
    wrong: dict[str, str]
    right: dict[str, str]
    differs: Callable[[Callable, int], str | None]
    namespace: Callable[[], dict] = dict
    entry: str = ""  # the function the check takes (the your-turn name or the question's name)
    mutate: tuple[str, ...] = ()  # the functions in `answer` to mutate; () for all
    max_mutants: int = 40
    notes: dict[str, str] = field(default_factory=dict)  # label -> where a slip comes from (a review, a hint)

    def function(self, source: str, label: str) -> Callable:
        return define(source, self.namespace(), self.entry, f"<cell: {self.id}, {label}>")

    def verdict(self, function: Callable) -> tuple[bool, str]:  # pragma: no cover - subclasses override it
        """(accepted, what the learner is told)."""
        raise NotImplementedError


@dataclass
class TurnCheck(Check):
    """A your-turn cell: accepted when `your_turn` hands back the learner's function."""

    def verdict(self, function):
        from t5lesson.lessons.your_turn import your_turn

        used, said = _quietly(your_turn, self.entry, function)
        return used is function, " ".join(said.split())


@dataclass
class QuestionCheck(Check):
    """An exercise's code question: accepted when check() says Correct; held only when, besides,
    the grader's drawn hidden cases give under a third of the points for every seed in SEEDS."""

    exercise: str = ""
    question: str = ""
    # A slip must earn less than this share of the points on drawn cases. A third, except for a
    # question graded in parts (exercise 6 q4: self-attention, cross-attention, packed rows, a third
    # each), where a slip confined to one part is held when it earns under a third of that part:
    # under 2/3 + 1/9 = 7/9 of the whole (docs/checks.md says so).
    below: Fraction = Fraction(1, 3)

    def _outcome(self, question, function):
        from t5lesson.grading import harvest
        from t5lesson.grading.records import clean_record

        raw = harvest.collect(question.harvest_spec(), {question.name: function})
        return question.score(clean_record(json.loads(json.dumps(raw, allow_nan=False))))

    def public(self):
        from t5lesson.exercises import get

        return get(self.exercise)[self.question]

    def verdict(self, function):
        from t5lesson.grading.verdict import CORRECT

        outcome, _ = _quietly(self._outcome, self.public(), function)
        return outcome.status == CORRECT, outcome.line()

    def hidden_points(self, function) -> list[Fraction]:
        """The fraction of the points the grader gives `function` on each seed's drawn cases."""
        from t5lesson.exercises import get

        fractions = []
        for seed in SEEDS:
            question = get(self.exercise).drawn(seed)[self.question]
            outcome, _ = _quietly(self._outcome, question, function)
            fractions.append(Fraction(outcome.points).limit_denominator() / Fraction(question.points))
        return fractions


def held(check: Check, function: Callable) -> str | None:
    """None when the check holds the wrong answer `function`; else a sentence on how it got through."""
    accepted, said = check.verdict(function)
    if accepted:
        return f"the public check accepts it: {said[:300]}"
    if isinstance(check, QuestionCheck):
        fractions = check.hidden_points(function)
        if any(f >= check.below for f in fractions):
            return f"the grader's drawn cases give it {[str(f) for f in fractions]} of the points ({said[:200]})"
    return None


def accepted(check: Check, function: Callable) -> str | None:
    """None when the check accepts the right answer `function` everywhere; else where it does not."""
    ok, said = check.verdict(function)
    if not ok:
        return f"the public check rejects it: {said[:300]}"
    if isinstance(check, QuestionCheck):
        fractions = check.hidden_points(function)
        if any(f != 1 for f in fractions):
            return f"the grader's drawn cases give it {[str(f) for f in fractions]} of the points"
    return None


def proven_wrong(check: Check, function: Callable, seeds=(0, 1)) -> str | None:
    """The differential proof: a sentence when `function` differs from the course's on random inputs."""
    for seed in seeds:
        try:
            problem, _ = _quietly(check.differs, function, seed)
        except Exception as exc:  # an answer that raises where the course's does not is wrong
            return f"raises {type(exc).__name__}: {str(exc)[:120]}"
        if problem:
            return problem
    return None


def edited(source: str, *edits: tuple[str, str]) -> str:
    """`source` with each (old, new) edit made: a slip written as a change of the course's answer. Each `old`
    must occur exactly once, so an edit that finds nothing (the answer changed) fails loudly."""
    for old, new in edits:
        assert source.count(old) == 1, f"the answer has {source.count(old)} of {old!r}"
        source = source.replace(old, new)
    return source


def your_turn_answer(stem: str, name: str) -> str:
    """The course's answer to a your-turn cell (solutions/your_turn/<stem>.py), without its checking line."""
    import ast
    import re

    text = (ROOT / "solutions" / "your_turn" / f"{stem}.py").read_text()
    marks = list(re.finditer(r"^# %% your_turn: ([\w.-]+)[ \t]*$", text, re.MULTILINE))
    for k, mark in enumerate(marks):
        if mark.group(1) == name:
            block = text[mark.end():marks[k + 1].start() if k + 1 < len(marks) else len(text)]
            body = [node for node in ast.parse(block).body
                    if not (isinstance(node, ast.Assign) and "your_turn(" in ast.unparse(node.value))]
            return "\n\n".join(ast.get_source_segment(block, node) for node in body) + "\n"
    raise KeyError(f"no answer block {name!r} in solutions/your_turn/{stem}.py")


def solution_answer(stem: str, name: str) -> str:
    """The solution notebook's code for function `name` (solutions/<stem>.ipynb), its solution marks left out."""
    cells = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text())["cells"]
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and f"def {name}(" in source:
            return "\n".join(line for line in source.splitlines() if "### " not in line) + "\n"
    raise KeyError(f"no cell defines {name} in solutions/{stem}.ipynb")
