"""Every learner-facing check holds every wrong answer in its catalogue and accepts every right one.

The catalogue is catalogue/*.py (one module per lesson, its your-turn cells and its exercise's code
questions); harness.py says what "held" means, mutants.py how mutants are made. docs/checks.md
shows the table this test keeps true (tools/check_table.py writes it).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402
from mutants import mutants  # noqa: E402

from t5lesson.exercises import exercise_ids, get  # noqa: E402
from t5lesson.grading.questions.kinds import Code  # noqa: E402
from t5lesson.lessons.your_turn import TURNS  # noqa: E402

MIN_SLIPS, MIN_RIGHT = 6, 2


def all_checks() -> list[harness.Check]:
    checks = []
    for path in sorted((HERE / "catalogue").glob("[a-z]*.py")):
        checks += importlib.import_module(f"catalogue.{path.stem}").CHECKS
    return checks


CHECKS = all_checks()
BY_ID = {check.id: check for check in CHECKS}


def cases(kind: str) -> list:
    params = []
    for check in CHECKS:
        if kind == "mutant":
            entries = mutants(check.answer, check.mutate, check.max_mutants)
        else:
            entries = check.wrong if kind == "wrong" else check.right
        params += [pytest.param(check.id, label, source, id=f"{check.id} | {label}")
                   for label, source in entries.items()]
    return params


def test_every_check_of_the_course_has_a_catalogue():
    turns = {f"your turn {name}" for name in TURNS}
    questions = {f"exercise {e[:2]} {q.id}" for e in exercise_ids() for q in get(e).questions if isinstance(q, Code)}
    missing = sorted((turns | questions) - set(BY_ID))
    assert not missing, f"checks with no catalogue of wrong answers: {missing}"


@pytest.mark.parametrize("check_id", sorted(BY_ID))
def test_each_catalogue_is_large_enough(check_id):
    check = BY_ID[check_id]
    assert len(check.wrong) >= MIN_SLIPS, f"{check_id}: {len(check.wrong)} slips written, at least {MIN_SLIPS} wanted"
    assert len(check.right) >= MIN_RIGHT, f"{check_id}: {len(check.right)} right variants, {MIN_RIGHT} wanted"


@pytest.mark.parametrize("check_id, label, source", cases("wrong"))
def test_a_written_slip_is_proven_wrong_and_held(check_id, label, source):
    check = BY_ID[check_id]
    function = check.function(source, label)
    assert harness.proven_wrong(check, function), f"{label}: equal to the course's on every input tried"
    problem = harness.held(check, function)
    assert problem is None, f"{label}: {problem}"


@pytest.mark.parametrize("check_id, label, source", cases("right"))
def test_a_right_variant_is_accepted(check_id, label, source):
    check = BY_ID[check_id]
    function = check.function(source, label)
    assert harness.proven_wrong(check, function) is None, f"{label}: not right after all"
    problem = harness.accepted(check, function)
    assert problem is None, f"{label}: {problem}"


@pytest.mark.parametrize("check_id, label, source", cases("mutant"))
def test_a_mutant_proven_wrong_is_held(check_id, label, source):
    check = BY_ID[check_id]
    try:
        function = check.function(source, label)
    except Exception:  # noqa: BLE001 - a mutant that does not even define the function is no answer
        return
    if harness.proven_wrong(check, function) is None:
        return  # equal to the course's answer on every input: dropped, not counted against the check
    problem = harness.held(check, function)
    assert problem is None, f"{label}: {problem}\n{source}"


@pytest.mark.parametrize("check_id", sorted(BY_ID))
def test_the_course_answer_itself_is_accepted(check_id):
    check = BY_ID[check_id]
    function = check.function(check.answer, "the course's answer")
    assert harness.proven_wrong(check, function) is None
    assert harness.accepted(check, function) is None
