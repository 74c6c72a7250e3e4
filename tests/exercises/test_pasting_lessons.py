"""Pasting a lesson's code into an exercise does not earn the whole of its code question.

Exercise 6 q4 and exercise 7 q5 ask one step beyond lessons 6 and 7. Here the lessons' own code
is pasted in as the answer, the way a learner would copy it: lesson 6's class (built over many
cells, your-turn cells filled with their answers from solutions/your_turn/), and lesson 7's
greedy decoding. Each is graded in this process as the grader grades a notebook. Lesson 7's
greedy decoding must earn at most a third of q5. Exercise 6 q4 weights objective 7's layer first
(self- and cross-attention two thirds, packed rows the last third), so lesson 6's layer, which is
that layer, earns at most two thirds and is not Correct; the solutions' answers must still earn all.
The code is found by what the cells define, not by their position, so the test follows the
lessons as they change, and fails with a sentence when it cannot find them.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from t5lesson.exercises import get
from t5lesson.grading import harvest
from t5lesson.grading.records import clean_record
from t5lesson.grading.verdict import CORRECT

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "lessons"))
from your_turn_fill import fill  # noqa: E402  (tests/lessons is not a package)

LAYER_QUESTION = get("06_t5_layer")["q4"]
DECODING_QUESTION = get("07_tiny_t5")["q5"]


def score(question, answer):
    """The outcome the grader gives `answer`: harvested as in a kernel, cleaned, scored."""
    raw = harvest.collect(question.harvest_spec(), {question.name: answer})
    return question.score(clean_record(json.loads(json.dumps(raw, allow_nan=False))))


def lesson_cells(stem: str) -> list[str]:
    """The sources of a lesson's code cells, its your-turn cells filled with their answers."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    nb["metadata"]["t5lesson_stem"] = stem
    fill(nb)  # no your-turn cells and no answers: nothing to fill; a cell without its answer: ValueError
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def _run_quietly(sources: list[str], name: str) -> dict:
    scope: dict = {"__name__": name}
    with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
        for number, source in enumerate(sources):
            code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
            exec(compile(code, f"{name}, code cell {number}", "exec"), scope)
    return scope


def lesson_6_layer() -> type:
    """Lesson 6's finished layer class: every code cell run in order, as in the learner's notebook, and
    the class the cells define (with `class`) that ends up with a forward and a compute_bias."""
    sources = lesson_cells("06_t5_attention_layer")
    scope = _run_quietly(sources, "lesson_6")
    defined = {node.name for source in sources for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}
    layers = [scope[name] for name in sorted(defined) if isinstance(scope.get(name), type)
              and issubclass(scope[name], torch.nn.Module) and all(hasattr(scope[name], m)
                                                                  for m in ("forward", "compute_bias"))]
    if len(layers) != 1:
        raise AssertionError(f"lesson 6 should define one layer class with forward and compute_bias; found "
                             f"{[c.__name__ for c in layers] or 'none'} among its classes {sorted(defined)}")
    return layers[0]


def lesson_7_greedy():
    """Lesson 7's greedy decoding: the last function its cells define whose name says greedy and that calls
    model.decode, with the lesson's imports (training and the rest of the lesson are not run)."""
    imports, found = [], []
    for source in lesson_cells("07_tiny_t5"):
        for node in ast.parse(source).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.append(node)
            elif isinstance(node, ast.FunctionDef) and "greedy" in node.name and ".decode(" in ast.unparse(node):
                found.append(node)
    if not found:
        raise AssertionError("lesson 7 defines no function named ...greedy... that calls model.decode")
    scope = _run_quietly([ast.unparse(ast.Module(body=imports + found[-1:], type_ignores=[]))], "lesson_7")
    return scope[found[-1].name]


def solution_answer(stem: str, cell: str):
    """What a solution notebook's answer cell defines, run after its setup cell."""
    nb = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    named = {c["metadata"].get("t5lesson", {}).get("cell"): "".join(c["source"]) for c in nb["cells"]}
    answer = named[cell]
    scope = _run_quietly([named["setup"], answer], stem)
    [name] = [n.name for n in ast.parse(answer).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))]
    return scope[name]


def at_most_a_third(question, outcome) -> bool:
    return Fraction(outcome.points).limit_denominator(1000) <= Fraction(question.points, 3)


def test_lesson_6_layer_pasted_earns_at_most_two_thirds():
    outcome = score(LAYER_QUESTION, lesson_6_layer())
    assert Fraction(outcome.points).limit_denominator(1000) <= Fraction(2 * LAYER_QUESTION.points, 3), outcome.message
    assert outcome.status != CORRECT, outcome.message
    assert outcome.points > 0, outcome.message  # what the lesson builds is right, and earns its share
    assert "segment_ids" in outcome.message  # packed rows: the step beyond the lesson


def test_a_layer_with_everything_but_packed_rows_earns_two_thirds():
    """The layer of objective 7, self- and cross-attention with their caches, is two thirds of the question."""
    from t5_layer_answers import variant

    outcome = score(LAYER_QUESTION, variant(segments=False))
    assert Fraction(outcome.points).limit_denominator(1000) == Fraction(2 * LAYER_QUESTION.points, 3), outcome.message


def test_lesson_7_greedy_pasted_earns_at_most_a_third():
    outcome = score(DECODING_QUESTION, lesson_7_greedy())
    assert at_most_a_third(DECODING_QUESTION, outcome), outcome.message
    assert "greedy decoding's tokens" in outcome.message


@pytest.mark.parametrize("stem, cell, question", [("06_t5_layer", "q4-answer", LAYER_QUESTION),
                                                  ("07_tiny_t5", "q5-answer", DECODING_QUESTION)],
                         ids=["exercise 6 q4", "exercise 7 q5"])
def test_the_solutions_earn_full_marks(stem, cell, question):
    outcome = score(question, solution_answer(stem, cell))
    assert (outcome.status, outcome.points) == (CORRECT, question.points), outcome.message


def your_turn_function(stem: str, name: str):
    """A lesson's your-turn answer from solutions/your_turn/, defined with the lesson's names (np, t5)."""
    import numpy as np

    import t5lesson as t5

    sys.path.insert(0, str(ROOT / "tests" / "checks"))
    from harness import your_turn_answer

    scope: dict = {"np": np, "t5": t5}
    exec(compile(your_turn_answer(stem, name), f"solutions/your_turn/{stem}.py", "exec"), scope)
    return scope[name]


PASTED = [("03_relative_position_buckets", "bucket_of", "q7", "my_bucket"),
          ("04_bias_heatmaps", "bias_from_table", "q5", "my_step_biases")]


@pytest.mark.parametrize("stem, turn, question_id, name", PASTED, ids=["exercise 3 q7", "exercise 4 q5"])
def test_a_lessons_your_turn_answer_pasted_earns_at_most_a_third(stem, turn, question_id, name):
    """Lessons 3 and 4's your-turn answers, pasted as exercise 3 q7's and exercise 4 q5's answers, earn at
    most a third of the points, on check()'s cases and on the grader's drawn ones; the solutions earn all."""
    exercise = get(stem)
    pasted = your_turn_function(stem, turn)
    for question in (exercise[question_id], exercise.drawn("seed one")[question_id],
                     exercise.drawn("seed two")[question_id]):
        outcome = score(question, pasted)
        assert at_most_a_third(question, outcome), outcome.message
        solved = score(question, solution_answer(stem, f"{question_id}-answer"))
        assert (solved.status, solved.points) == (CORRECT, question.points), solved.message
    assert exercise[question_id].name == name
