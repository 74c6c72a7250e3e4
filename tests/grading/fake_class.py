"""A class of verdicts for exercise 01 made without kernels, for tests of what comes after grading.

Each student's answers are Python values (the solution's, a tempting wrong one, or none); they
go through the very code the grader uses after a run: `harvest.collect` makes the plain record
(running the student's function on every case), the question scores it, `answers.summarise`
keeps what was answered. Only starting a kernel is skipped, so a class of 40 takes a second or
two instead of minutes. A few submissions get the statuses of runs that went wrong.
"""
from __future__ import annotations

import math
import random
from pathlib import Path

import nbformat

from t5lesson.grading import answers, bank, harvest
from t5lesson.grading.protocol import Status
from t5lesson.grading.questions import ERROR
from t5lesson.grading.report import Graded

from synthetic_class import BUGGY_BUCKET

REPO = Path(__file__).resolve().parents[2]
EXERCISE_ID = "01_unscaled_scores"

SIGN_SWAPPED = BUGGY_BUCKET.replace("if relative_position > 0:", "if relative_position < 0:").replace(
    "return bucket + max_exact + int(spread * (num_buckets - max_exact))",
    "return bucket + min(max_exact + int(spread * (num_buckets - max_exact)), num_buckets - 1)")
STUB = "def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):\n" \
       "    raise NotImplementedError()\n"

# question -> (chance of the right answer, wrong answers to pick from, chance of leaving it blank)
WRONG = {
    "answer_q1": ["A", "A", "A", "C", "D", "E"],
    "answer_q2": [["A"], ["B"], ["B"], ["A", "C"]],
    "answer_q4": [0.475, 1.75, 1.75, 2.05, 0.9],
    "answer_q5": [28, 28, 11, "12"],
    "answer_q6": [12, 12, 0, 22],
}
RIGHT = {"answer_q1": "B", "answer_q2": ["A", "B"], "answer_q4": 1.35, "answer_q5": 12, "answer_q6": 23}
SKILL = {"answer_q1": 0.7, "answer_q2": 0.5, "answer_q4": 0.55, "answer_q5": 0.6, "answer_q6": 0.45}


def _solution_bucket() -> str:
    nb = nbformat.read(REPO / "solutions" / f"{EXERCISE_ID}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("t5lesson", {}).get("cell") == "q7-answer":
            return "\n".join(line for line in cell.source.splitlines() if "### " not in line)
    raise KeyError("q7-answer")


def _function(source: str):
    namespace = {"math": math}
    exec(source, namespace)
    return namespace["my_bucket"]


def verdict(exercise, student: str, values: dict, free_text: str = "") -> Graded:
    """The verdict the grader would give a notebook that ended with these values."""
    outcomes, records = [], {}
    for q in exercise.questions:
        if not q.auto_scored:
            outcomes.append(q.score({"text": free_text}))
            continue
        records[q.id] = harvest.collect(q.harvest_spec(), values)
        outcomes.append(q.score(records[q.id]))
    return Graded(student, f"{student}.ipynb", Status.GRADED, outcomes, [], {"q3": free_text}, 1.0,
                  answers=answers.summarise(exercise, records))


def broken(exercise, student: str, status: Status, why: str) -> Graded:
    """A submission that could not be graded: every question an error, as the grader writes it."""
    outcomes = [q.outcome(ERROR, 0, why) for q in exercise.questions]
    return Graded(student, f"{student}.ipynb", status, outcomes, [f"Your file could not be graded: {why}"], {}, 1.0)


def fake_class(count: int = 40, seed: int = 7):
    """(exercise, verdicts): `count` graded students plus one of each kind of failed run."""
    exercise = bank.get(EXERCISE_ID)
    rng = random.Random(seed)
    functions = [(0.5, _function(_solution_bucket())), (0.2, _function(BUGGY_BUCKET)),
                 (0.15, _function(SIGN_SWAPPED)), (0.15, _function(STUB))]
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
        text = "" if rng.random() < 0.2 else "Dropping 1/sqrt(d) keeps q.k at its natural size; the bias adds order."
        graded.append(verdict(exercise, f"student{i:03d}", values, text))
    graded.append(broken(exercise, "zoe_unreadable", Status.UNREADABLE, "the file is not valid JSON."))
    graded.append(broken(exercise, "yann_loop", Status.TIME_LIMIT, "the notebook was stopped after its hard limit."))
    graded.append(broken(exercise, "xia_crash", Status.KERNEL_DIED, "the kernel died before the end."))
    return exercise, graded
