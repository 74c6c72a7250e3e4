"""A class of verdicts for the synthetic class's exercise (03, buckets) made without kernels, for tests
of what comes after grading.

Each student's answers are Python values (the solution's, a tempting wrong one, or none); they
go through the very code the grader uses after a run: `harvest.collect` makes the plain record
(running the student's function on every case) and the question scores it. Only starting a
kernel is skipped, so a class of 40 takes a second or two instead of minutes. A few submissions
get the statuses of runs that went wrong.

The values below are this exercise's: `fake_class` checks that every right answer gets full marks
and every wrong one none, so a re-cut of the exercise fails here, saying which answer, rather than
somewhere in a report's numbers.
"""
from __future__ import annotations

import math
import random

import nbformat
import numpy as np

import t5lesson
from t5lesson import exercises as bank
from t5lesson.grading import harvest
from t5lesson.grading.verdict import ERROR, Graded, Status

from synthetic_class import BUGGY_BUCKET, EXERCISE_ID, SOLUTION

SIGN_SWAPPED = BUGGY_BUCKET.replace("np.where(offsets > 0, per_side, 0)", "np.where(offsets < 0, per_side, 0)").replace(
    "far = max_exact + (spread * (per_side - max_exact)).astype(int)",
    "far = np.minimum(max_exact + (spread * (per_side - max_exact)).astype(int), per_side - 1)")
assert SIGN_SWAPPED.count("offsets < 0") == 1 and SIGN_SWAPPED.count("np.minimum") == 1
STUB = "def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):\n" \
       "    raise NotImplementedError()\n"
RANGES_STUB = "def my_bucket_ranges(bidirectional=True, num_buckets=32, max_distance=128):\n" \
              "    raise NotImplementedError()\n"

# variable -> the right answer, the wrong answers to pick from (most have feedback of their own;
# "12" is a string where a number belongs), the chance of the right answer; the rest is left blank
RIGHT = {"answer_q1": 12, "answer_q2": 26, "answer_q3": 22, "answer_q4": -27, "answer_q5": 21, "answer_q6": "A"}
WRONG = {
    "answer_q1": [28, 28, 22, 13],
    "answer_q2": [10, 10, 25],
    "answer_q3": [12, 12, 12, 0, 16],
    "answer_q4": [27, 27, -30, -20],
    "answer_q5": [20, 30, 9, "12"],
    "answer_q6": ["B", "B", "C", "D", "E"],
}
SKILL = {"answer_q1": 0.7, "answer_q2": 0.6, "answer_q4": 0.55, "answer_q3": 0.45, "answer_q5": 0.4,
         "answer_q6": 0.5}


def _solution(cell: str, name: str):
    """The function the solution notebook defines in its answer cell `cell`."""
    nb = nbformat.read(SOLUTION, as_version=4)
    for c in nb.cells:
        if c.metadata.get("t5lesson", {}).get("cell") == cell:
            return _function("\n".join(line for line in c.source.splitlines() if "### " not in line), name)
    raise KeyError(cell)


def _function(source: str, name: str = "my_bucket"):
    namespace = {"math": math, "np": np, "t5": t5lesson}
    exec(source, namespace)
    return namespace[name]


def _check_values(exercise) -> None:
    """Right answers get full marks and wrong ones none, under the questions they are meant for."""
    by_name = {q.name: q for q in exercise.questions}
    for name, right in RIGHT.items():
        q = by_name[name]  # KeyError: the exercise has no such variable any more
        assert q.score(harvest.collect(q.harvest_spec(), {name: right})).points == q.points, (name, right)
        for wrong in WRONG[name]:
            assert q.score(harvest.collect(q.harvest_spec(), {name: wrong})).points == 0, (name, wrong)


def verdict(exercise, student: str, values: dict, free_text: str = "") -> Graded:
    """The verdict the grader would give a notebook that ended with these values."""
    outcomes = []
    for q in exercise.questions:
        if not q.auto_scored:
            outcomes.append(q.score({"text": free_text}))
            continue
        outcomes.append(q.score(harvest.collect(q.harvest_spec(), values)))
    free = {q.id: free_text for q in exercise.questions if not q.auto_scored}
    return Graded(student, f"{student}.ipynb", Status.GRADED, outcomes, [], free, 1.0)


def broken(exercise, student: str, status: Status, why: str) -> Graded:
    """A submission that could not be graded: every question an error, as the grader writes it."""
    outcomes = [q.outcome(ERROR, 0, why) for q in exercise.questions]
    return Graded(student, f"{student}.ipynb", status, outcomes, [f"Your file could not be graded: {why}"], {}, 1.0)


def fake_class(count: int = 40, seed: int = 7):
    """(exercise, verdicts): `count` graded students plus one of each kind of failed run."""
    exercise = bank.get(EXERCISE_ID)
    _check_values(exercise)
    rng = random.Random(seed)
    functions = [(0.5, _solution("q7-answer", "my_bucket")), (0.2, _function(BUGGY_BUCKET)),
                 (0.15, _function(SIGN_SWAPPED)), (0.15, _function(STUB))]
    ranges = _solution("q8-answer", "my_bucket_ranges"), _function(RANGES_STUB, "my_bucket_ranges")
    graded = []
    for i in range(count):
        values = {}
        for name, right in RIGHT.items():
            roll = rng.random()
            if roll < SKILL[name]:
                values[name] = right
            elif roll < 0.93:
                values[name] = rng.choice(WRONG[name])
        pick, acc = rng.random(), 0.0
        for share, function in functions:
            acc += share
            if pick < acc:
                values["my_bucket"] = function
                break
        values["my_bucket_ranges"] = ranges[0] if rng.random() < 0.6 else ranges[1]
        text = "" if rng.random() < 0.2 else "Near offsets get a bucket each; far ones share logarithmic buckets."
        graded.append(verdict(exercise, f"student{i:03d}", values, text))
    graded.append(broken(exercise, "zoe_unreadable", Status.UNREADABLE, "the file is not valid JSON."))
    graded.append(broken(exercise, "yann_loop", Status.TIME_LIMIT, "the notebook was stopped after its hard limit."))
    graded.append(broken(exercise, "xia_crash", Status.KERNEL_DIED, "the kernel died before the end."))
    return exercise, graded
