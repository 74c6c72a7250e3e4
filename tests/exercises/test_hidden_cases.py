"""Hidden cases: every code question's grading cases are drawn at grading time from the
instructor's seed (`Exercise.drawn`), none of them ships with the package, one seed always gives
the same cases, two seeds give different ones, and the solution earns full marks on any draw.

The solution's answer runs in this process, as `check()` runs it in the notebook: every code
cell of the solution notebook (given and answer cells, not the check cells) is executed, then the
drawn question's harvesting code collects and scores it.
"""
from __future__ import annotations

import contextlib
import io
import json
from functools import cache
from pathlib import Path

import pytest

from t5lesson import exercises as bank
from t5lesson.grading import harvest
from t5lesson.grading.questions.kinds import Code
from t5lesson.grading.verdict import CORRECT

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ("spring term", "autumn term", "7")
CODE_QUESTIONS = [(eid, q.id) for eid in bank.exercise_ids() for q in bank.get(eid).questions
                  if isinstance(q, Code) and not bank.get(eid).practice]


def _question(exercise_id: str, question_id: str, seed: str | None = None):
    exercise = bank.get(exercise_id)
    return (exercise if seed is None else exercise.drawn(seed))[question_id]


@cache
def _drawn(exercise_id: str, question_id: str, seed: str):
    return _question(exercise_id, question_id, seed)


@cache
def solution_namespace(exercise_id: str) -> dict:
    """The solution notebook's code cells (not its check cells) run in order, as a learner's kernel runs them."""
    import torch

    nb = json.loads((ROOT / "solutions" / f"{exercise_id}.ipynb").read_text(encoding="utf-8"))
    scope: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
        for number, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code" or cell["metadata"].get("t5lesson", {}).get("role") == "check":
                continue
            source = "".join(cell["source"]).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
            exec(compile(source, f"{exercise_id}, cell {number}", "exec"), scope)
    return scope


@pytest.mark.parametrize("exercise_id,question_id", CODE_QUESTIONS)
def test_every_code_question_has_a_recipe(exercise_id, question_id):
    assert _question(exercise_id, question_id).hidden, (
        f"{exercise_id} {question_id} has no hidden recipe: the grader would run the cases that ship with the package")


@pytest.mark.parametrize("exercise_id,question_id", CODE_QUESTIONS)
def test_one_seed_one_draw_two_seeds_two(exercise_id, question_id):
    first, again = _drawn(exercise_id, question_id, SEEDS[0]), _question(exercise_id, question_id, SEEDS[0])
    other = _drawn(exercise_id, question_id, SEEDS[1])
    assert first.cases == again.cases
    assert first.cases != other.cases
    # the recipe is fixed: what each case is for does not depend on the seed
    assert [c.topic for c in first.cases] == [c.topic for c in other.cases]


@pytest.mark.parametrize("exercise_id,question_id", CODE_QUESTIONS)
def test_no_drawn_case_ships_with_the_package(exercise_id, question_id):
    public = set(map(repr, _question(exercise_id, question_id).cases))
    for seed in SEEDS[:2]:
        drawn = [repr(c) for c in _drawn(exercise_id, question_id, seed).cases]
        shared = sum(c in public for c in drawn)
        assert shared <= len(drawn) // 4, f"{shared} of {len(drawn)} drawn cases are public ones"


@pytest.mark.parametrize("exercise_id,question_id", CODE_QUESTIONS)
def test_the_solution_earns_full_marks_on_every_draw(exercise_id, question_id):
    namespace = solution_namespace(exercise_id)
    for seed in SEEDS:
        question = _drawn(exercise_id, question_id, seed)
        outcome = question.score(harvest.collect(question.harvest_spec(), namespace))
        assert outcome.status == CORRECT, f"seed {seed!r}: {outcome.line()}"
