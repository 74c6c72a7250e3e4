"""Objectives are data: every question names what it assesses, every objective is graded, keys are reachable.

Also: each exercise follows its lesson (its questions assess only what that lesson teaches),
hints never give away how many options are right, every free-text question has a rubric that
reaches free_text.csv, and README.md's syllabus table is the one the bank generates.
"""
from __future__ import annotations

import csv
import io
import itertools
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from t5lesson import exercises as bank
from t5lesson.exercises.objectives import OBJECTIVES, rows, syllabus_markdown
from t5lesson.grading.questions.kinds import FreeText, MultipleChoice, Numeric, answer_hash
from t5lesson.grading.reports.gradebook import free_text_sheet
from t5lesson.grading.verdict import CORRECT, Graded, Outcome

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = [bank.get(e) for e in bank.exercise_ids()]
GRADED = [e for e in EXERCISES if not e.practice]
QUESTIONS = [(e, q) for e in EXERCISES for q in e.questions]

# What each lesson teaches (README's lesson table says the same): exercise NN may assess only these.
TAUGHT = {"01": {1, 2, 3}, "02": {3, 4}, "03": {5, 6}, "04": {5, 7}, "05": {6}, "06": {7}, "07": {6, 7}, "08": {1, 7}}


@pytest.mark.parametrize("exercise, question", QUESTIONS, ids=[f"{e.id}-{q.id}" for e, q in QUESTIONS])
def test_every_question_names_its_objectives(exercise, question):
    assert question.objectives, f"{exercise.id} {question.id} names no objective"
    assert set(question.objectives) <= set(OBJECTIVES)


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_every_objective_has_an_auto_graded_question(objective):
    graded = [r for r in rows() if r.objective == objective and r.auto_scored]
    assert graded, f"objective {objective} has no automatically graded question"


def test_each_exercise_follows_its_lesson():
    for exercise in GRADED:
        lesson = exercise.id[:2]
        for question in exercise.questions:
            assert set(question.objectives) <= TAUGHT[lesson], (
                f"{exercise.id} {question.id} assesses objectives {question.objectives}; lesson {lesson} teaches "
                f"{sorted(TAUGHT[lesson])}")


def test_objectives_command_prints_the_map_as_csv():
    result = subprocess.run([sys.executable, "-m", "t5lesson.grade", "objectives"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == ["objective", "exercise", "question", "points", "kind"]
    assert len(table) - 1 == len(rows()) == sum(len(q.objectives) for e in GRADED for q in e.questions)
    assert ["7", "06_t5_layer", "q4", "6", "module"] in table
    assert ["3", "01_unscaled_scores", "q8", "1", "numeric"] in table


def test_readme_syllabus_table_is_generated_from_the_bank():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert syllabus_markdown() in readme, (
        "README.md's syllabus table is stale: paste the output of `t5grade objectives --markdown`")


# --- feedback keys --------------------------------------------------------------------------------

# The wrong answers that float feedback is written for (a float's key cannot be searched for).
FLOAT_DISTRACTORS = {
    ("00_start_here", "q1"): [1 / (1 + math.exp(3))],  # key A's weight
    ("01_unscaled_scores", "q4"): [1.75 / 2 - 0.4, 1.75 + 0.3, 1.75, (1.75 - 0.4) / 2],  # q.k = 1.75, u = -0.4
    ("01_unscaled_scores", "q8"): [3 ** 0.5 / 4],
    ("02_where_sqrt_d_went", "q3"): [math.exp(4), math.exp(4 / 64)],
    ("02_where_sqrt_d_went", "q4"): [1024 ** -0.5, 64 ** -0.5, 1 / (1024 * 64)],
    ("08_flex_attention", "q1"): [2 * 16 * 8192 ** 2 * 4 / 2 ** 30, 16 * 8192 ** 2 * 2 / 2 ** 30,
                                  2 * 16 * 8192 ** 2 * 2 / 2 ** 20],  # fp32, one sequence, MiB
}


def _saturated_row():
    p = np.exp(np.array([6.0, 0, 0, 0]))
    p = p / p.sum()
    halved = np.exp(np.array([3.0, 0, 0, 0]))  # the scores divided by sqrt(d) = 2
    halved = halved / halved.sum()
    return [float(p[0] * (1 - p[0])), float(np.sqrt(((p * (1 - p)) ** 2).sum())),
            float(np.linalg.norm(np.diag(halved) - np.outer(halved, halved)))]


def _weight_of_key_1(scores):
    e = np.exp(scores)
    return float(e[1] / e.sum())


DOTS, BIASES = np.array([2.0, 1.0, 0.5, 1.5]), np.array([0.0, 1.0, 0.0, -0.5])  # exercise 1, question 6
FLOAT_DISTRACTORS[("01_unscaled_scores", "q6")] = [_weight_of_key_1(DOTS), _weight_of_key_1(DOTS / 2 + BIASES),
                                                  _weight_of_key_1((DOTS + BIASES) / 2)]
FLOAT_DISTRACTORS[("01_unscaled_scores", "q8")] += _saturated_row()


def _record(value):
    from t5lesson.grading import harvest

    return harvest.collect({"id": "q", "kind": "value", "name": "x"}, {"x": value})


def _reached(question) -> dict[str, object]:
    """feedback key -> an answer that shows that feedback."""
    found = {}
    if isinstance(question, MultipleChoice):
        sizes = range(1, len(question.options) + 1) if question.multiple else [1]
        for size in sizes:
            for letters in itertools.combinations(question.options, size):
                found.setdefault(answer_hash(question.id, "".join(letters), question.salt), list(letters))
    elif isinstance(question, Numeric) and question.tolerance is None:
        for n in range(-5_000, 100_001):
            found.setdefault(answer_hash(question.id, str(n), question.salt), n)
    return {key: answer for key, answer in found.items() if key in question.feedback}


FEEDBACK = [(e, q) for e, q in QUESTIONS if getattr(q, "feedback", None)]


@pytest.mark.parametrize("exercise, question", FEEDBACK, ids=[f"{e.id}-{q.id}" for e, q in FEEDBACK])
def test_every_feedback_key_is_reachable_under_its_own_question(exercise, question):
    if isinstance(question, Numeric) and question.tolerance is not None:
        values = FLOAT_DISTRACTORS.get((exercise.id, question.id), [])
        reached = {}
        for value in values:
            outcome = question.score(_record(value))
            for key, text in question.feedback.items():
                if outcome.message == text:
                    reached[key] = value
    else:
        reached = _reached(question)
    missing = set(question.feedback) - set(reached)
    assert not missing, f"{exercise.id} {question.id}: feedback that no answer can show: {sorted(missing)}"
    for key, answer in reached.items():
        outcome = question.score(_record(answer))
        assert outcome.status != CORRECT and outcome.message == question.feedback[key], (answer, outcome)


def test_exercise_03_feedback_is_keyed_to_its_own_questions():
    ex03 = bank.get("03_relative_position_buckets")
    assert ex03["q1"].score(_record(22)).message.startswith("that is the decoder's bucket")
    assert ex03["q3"].score(_record(12)).message.startswith("that is the encoder's bucket")


# --- hints and rubrics ----------------------------------------------------------------------------

COUNT = re.compile(r"\b(exactly|only)?\s*(one|two|three|four|five|\d+)\s+(of the \w+\s+)?(options|statements|answers|"
                   r"letters)\s+(are|is)\s+(right|true|correct)", re.I)


def test_no_hint_gives_away_how_many_options_are_right():
    for exercise, question in QUESTIONS:
        if isinstance(question, MultipleChoice):
            for hint in question.hints:
                assert not COUNT.search(hint), f"{exercise.id} {question.id}: {hint}"


FREE = [(e, q) for e, q in QUESTIONS if isinstance(q, FreeText)]


@pytest.mark.parametrize("exercise, question", FREE, ids=[f"{e.id}-{q.id}" for e, q in FREE])
def test_free_text_has_a_rubric_worth_its_points(exercise, question):
    assert question.rubric, f"{exercise.id} {question.id} has no rubric"
    assert math.isclose(sum(points for _, points in question.rubric), question.points)
    assert all(text and points > 0 for text, points in question.rubric)


def test_rubric_is_printed_beside_each_free_text_answer():
    exercise = bank.get("06_t5_layer")
    outcomes = [Outcome(q.id, "submitted", 0.0, float(q.points)) for q in exercise.questions]
    sheet = free_text_sheet(exercise, [Graded("ada", "ada.ipynb", "graded", outcomes, free_text={"q5": "An answer."})])
    [row] = list(csv.DictReader(io.StringIO(sheet)))
    assert row["answer"] == "An answer." and row["rubric"] == exercise["q5"].rubric_text()
    assert row["rubric"].startswith("1 pt: the bias is looked up by key position minus query position")
