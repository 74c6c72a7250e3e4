"""The bank's keys across exercises, and what a constant answer earns on a code question.

Keys are salted with the exercise id as well as the question id, so no stored hash (key or
feedback key) appears in two questions anywhere in the bank: knowing the hash of "B" in one
exercise tells nothing about another. A constant function (0, 1, zeros or ones of the right
shape, ...) must earn at most a fifth of any plain code question's points, on check()'s cases and
on the cases the grader draws.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from t5lesson import exercises as bank
from t5lesson.grading import harvest
from t5lesson.grading.protocol import resolve
from t5lesson.grading.questions.kinds import WRONG_AT_MOST, Code, MultipleChoice, Numeric, answer_hash
from t5lesson.grading.verdict import CORRECT

QUESTIONS = [(bank.get(e), q) for e in bank.exercise_ids() for q in bank.get(e).questions]
KEYED = [(e, q) for e, q in QUESTIONS if isinstance(q, (MultipleChoice, Numeric))]


def test_no_two_questions_share_a_stored_hash():
    owner = {}
    for exercise, question in KEYED:
        for digest in (question.key, *question.feedback):
            where = f"{exercise.id} {question.id}"
            assert owner.setdefault(digest, where) == where, f"{where} and {owner[digest]} share the hash {digest}"


def test_the_same_answer_hashes_differently_in_every_exercise():
    hashes = {answer_hash("q1", "B", exercise) for exercise in bank.exercise_ids()}
    assert len(hashes) == len(bank.exercise_ids())


@pytest.mark.parametrize("exercise_id", list(bank.exercise_ids()))
def test_every_question_carries_its_exercise_salt(exercise_id):
    exercise = bank.get(exercise_id)
    assert {q.salt for q in exercise.questions} == {exercise_id}


def test_a_salted_key_is_found_only_with_its_own_exercise():
    ex01 = bank.get("01_unscaled_scores")
    assert ex01["q1"].key == answer_hash("q1", "B", ex01.id)
    letters = ["".join(c) for n in (1, 2) for c in itertools.combinations("ABCDEF", n)]
    elsewhere = {answer_hash("q1", x, e) for e in bank.exercise_ids() if e != ex01.id for x in letters}
    assert ex01["q1"].key not in elsewhere  # "B" to q1 of another exercise has another key


# --- constant answers on code questions ------------------------------------------------------

def _like(example, value):
    """`example` with every number replaced by `value` (bools by bool(value)), structure kept."""
    if isinstance(example, np.ndarray):
        return np.full_like(example, value) if example.dtype.kind in "fiub" else example
    if isinstance(example, (list, tuple)):
        return type(example)(_like(x, value) for x in example)
    if isinstance(example, (bool, np.bool_)):
        return bool(value)
    if isinstance(example, (int, np.integer)):
        return int(value)
    if isinstance(example, (float, np.floating)):
        return float(value)
    return example


def _constant_answers(question):
    """name -> a function that ignores its input (or uses only which case it is, for the shape)."""
    def always(value):
        return lambda *args, **kwargs: value

    answers = {f"always {c!r}": always(c) for c in (0, 1, -1, 0.0, 1.0, 0.5, 2, 3, 7, 8, 15, 16, 31, float(np.log(2)))}
    reference = resolve(question.reference)
    results = [reference(*c.args, **dict(c.kwargs)) for c in question.cases]
    for name, value in (("zeros", 0), ("ones", 1)):
        table = {repr(c.args) + repr(c.kwargs): _like(r, value) for c, r in zip(question.cases, results, strict=True)}
        answers[f"{name} of the right shape"] = (lambda t: lambda *a, **k: t[repr(a) + repr(tuple(k.items()))])(table)
    return answers


PLAIN_CODE = [(e, q) for e, q in QUESTIONS if isinstance(q, Code) and getattr(q, "cases", None)
              and type(q).__name__ != "ModuleCode"]


# the cases the grader draws, graded too where a run of them is quick (not exercise 7's beam search)
DRAWN = [(e, q, seed) for e, q in PLAIN_CODE for seed in (None, "week 3") if seed is None or q.case_timeout <= 2]


@pytest.mark.parametrize("exercise, question, seed", DRAWN,
                         ids=[f"{e.id}-{q.id}-{'drawn' if seed else 'check'}" for e, q, seed in DRAWN])
def test_a_constant_answer_gets_at_most_a_fifth_of_the_cases(exercise, question, seed):
    """A question whose cases a constant gets right is too easy to pass by accident: at most a fifth.

    (A wrong answer's points are its share of cases right times WRONG_AT_MOST, so the share of
    cases, not of points, is what says how trivial the cases are.)"""
    if seed is not None:
        question = exercise.drawn(seed)[question.id]
    shares = {}
    for name, function in _constant_answers(question).items():
        shares[name] = _share_of_cases(question, function)
    worst = max(shares, key=shares.get)
    assert shares[worst] <= 0.2, f"{exercise.id} {question.id}: {worst} gets {shares[worst]:.2f} of the cases right"


def _share_of_cases(question, function) -> float:
    outcome = question.score(harvest.collect(question.harvest_spec(), {question.name: function}))
    return outcome.points / outcome.max_points / (1 if outcome.status == CORRECT else float(WRONG_AT_MOST))


def test_the_constant_check_catches_a_question_with_too_many_trivial_cases():
    exercise, question = next((e, q) for e, q in PLAIN_CODE if q.name == "my_entropy")
    from dataclasses import replace

    few = replace(question, cases=tuple(c for c in question.cases if c.topic != "uniform weights over 10 keys")[:7])
    assert _share_of_cases(few, lambda *a, **k: 0.0) > 0.2  # the old seven cases: 3 of 7 rows have entropy 0


# --- no "the longest option is the right one" cue --------------------------------------------

def _options(exercise_id: str, question_id: str) -> dict[str, str]:
    """The option texts of a multiple-choice question, as the solution notebook shows them."""
    import re
    from pathlib import Path

    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[2] / "solutions" / f"{exercise_id}.ipynb", as_version=4)
    text = next(c.source for c in nb.cells if c.metadata.get("t5lesson", {}).get("cell") == f"{question_id}-text")
    found = re.findall(r"^- \*\*([A-F])\.\*\* (.*?)(?=^- \*\*[A-F]\.\*\*|^\s*$|\Z)", text, re.M | re.S)
    return {letter: " ".join(body.split()) for letter, body in found}


SINGLE = [("02_where_sqrt_d_went", "q6"), ("02_where_sqrt_d_went", "q7"), ("04_bias_heatmaps", "q1"),
          ("05_length_generalisation", "q2"), ("05_length_generalisation", "q3")]


@pytest.mark.parametrize("exercise_id, question_id", SINGLE)
def test_the_keyed_option_is_not_the_longest(exercise_id, question_id):
    question = bank.get(exercise_id)[question_id]
    options = _options(exercise_id, question_id)
    assert sorted(options) == sorted(question.options)
    keyed = next(x for x in options if answer_hash(question_id, x, exercise_id) == question.key)
    others = max(len(text) for letter, text in options.items() if letter != keyed)
    assert len(options[keyed]) <= others, f"{keyed} is the longest option"
