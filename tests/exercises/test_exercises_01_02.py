"""Lesson 1's numbers and code (exercise 01 q5-q9) and lesson 2's questions (exercise 02).

Float and matrix code questions, keys, hints, forged records. The questions of lesson 1 were
part A of exercise 02 until each exercise followed its own lesson.
"""
import math

import numpy as np
import pytest

from t5lesson.check import Checker
from t5lesson.exercises import get
from t5lesson.grading.questions.kinds import FreeText, MultipleChoice, Numeric
from t5lesson.grading.questions.structured import FloatCode, plain_numbers
from t5lesson.grading.records import clean_record

EX01, EX02 = get("01_unscaled_scores"), get("02_where_sqrt_d_went")
WHERE = {"variance": ("01_unscaled_scores", "q5"), "weight": ("01_unscaled_scores", "q6"),
         "entropy": ("01_unscaled_scores", "q7"), "jacobian": ("01_unscaled_scores", "q8"),
         "scores": ("01_unscaled_scores", "q9"), "folding": ("02_where_sqrt_d_went", "q2"),
         "bias_scale": ("02_where_sqrt_d_went", "q3"), "init": ("02_where_sqrt_d_went", "q4")}


def outcome(what, value):
    exercise_id, question_id = WHERE[what]
    return Checker(exercise_id).outcome(question_id, value)


def question(what):
    exercise_id, question_id = WHERE[what]
    return get(exercise_id)[question_id]


def good_entropy(weights):
    p = np.asarray(weights, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def good_scores(q, k, bias, mask):
    q, k, bias, mask = (np.asarray(a, dtype=float) for a in (q, k, bias, mask))
    return np.where(mask == 1, q @ k.T + bias, -np.inf)


def test_right_answers_get_full_marks():
    answers = {"variance": 16, "weight": 0.38595, "entropy": good_entropy, "jacobian": 0.01037,
               "folding": ["E", "A", "B"], "bias_scale": math.exp(0.5), "init": 1 / 256, "scores": good_scores}
    for what, value in answers.items():
        result = outcome(what, value)
        assert result.status == "correct" and result.points == question(what).points, result.line()


def test_scores_may_use_any_hugely_negative_number_or_lists():
    as_lists = lambda *a: np.where(np.asarray(a[3]) == 1, good_scores(*a), -1e9).tolist()
    assert outcome("scores", as_lists).status == "correct"
    not_low_enough = lambda *a: np.where(np.asarray(a[3]) == 1, good_scores(*a), -100.0)
    result = outcome("scores", not_low_enough)
    assert result.status == "partly correct" and "not pushed far enough down" in result.message


@pytest.mark.parametrize("what, function, status, words", [
    ("entropy", lambda w: float(-(np.asarray(w) * np.log(np.asarray(w))).sum()), "partly correct", "contains nan"),
    ("entropy", lambda w: [good_entropy(w)], "incorrect", "returned shape (1,)"),
    ("entropy", lambda w: "high", "incorrect", "returned a string"),
    ("entropy", lambda w: 1 / 0, "error", "ZeroDivisionError"),
    ("entropy", lambda w: good_entropy(w) / math.log(2), "partly correct",
     "case 1 (uniform weights over 4 keys): returned 2, expected 1.38629."),
    ("scores", lambda q, k, b, m: good_scores(q, k, b, m) / math.sqrt(len(q[0])), "partly correct",
     "that divides the whole score, the bias included, by sqrt(d); T5 divides nothing. (6 of 6 values are not "
     "right; the first, at [0][0], is 0.515622, expected 0.7292.)"),
    ("scores", lambda q, k, b, m: np.where(np.asarray(m) == 1, (np.asarray(q) @ np.asarray(k).T) / math.sqrt(len(q[0]))
                                           + np.asarray(b), -1e9), "partly correct",
     "case 1 (no mask, d = 2): that divides q.k by sqrt(d); T5 does not."),
    ("scores", lambda q, k, b, m: np.where(np.asarray(m) == 1, np.asarray(q) @ np.asarray(k).T, -1e9), "incorrect",
     "the position bias is missing from the score."),
    ("scores", lambda q, k, b, m: good_scores(q, k, b, m).T, "incorrect", "shape"),
])
def test_wrong_answers_are_explained(what, function, status, words):
    with np.errstate(all="ignore"):
        result = outcome(what, function)
    assert result.status == status and words in result.message, result.line()
    assert result.points < question(what).points


@pytest.mark.parametrize("value, words", [
    (3 ** 0.5 / 4, "uniform row"), (0.00733, "one entry"), (0.00847, "diagonal only"),
])
def test_saturated_gradient_question_names_the_slip(value, words):
    result = outcome("jacobian", value)
    assert result.status == "incorrect" and words in result.message, result.line()


def test_an_unrecognised_wrong_gradient_gets_no_hint_in_its_verdict():
    result = outcome("jacobian", 0.02)  # hints are for hint(), not for the verdict
    assert result.status == "incorrect" and result.message == "", result.line()


def test_the_references_cannot_be_called_while_grading():
    from t5lesson import softmax_entropy

    result = outcome("entropy", lambda w: float(softmax_entropy(np.asarray(w))))
    assert result.status == "error" and result.points == 0
    assert softmax_entropy(np.array([0.5, 0.5])) == pytest.approx(math.log(2))  # restored afterwards


def test_blank_answers_are_not_attempted():
    def stub(*args):
        raise NotImplementedError()

    for what in ("variance", "weight", "jacobian", "folding", "bias_scale", "init"):
        assert outcome(what, None).status == "not attempted"
    for what in ("entropy", "scores"):
        assert outcome(what, stub).status == "not attempted"


def test_keys_are_hashes_and_every_question_has_hints():
    for q in EX01.questions + EX02.questions:
        if isinstance(q, (MultipleChoice, Numeric)):
            assert len(q.key) == 24 and all(c in "0123456789abcdef" for c in q.key)
        assert q.hints or isinstance(q, FreeText)
    assert EX01.auto_points == 14 and EX02.auto_points == 6 and EX02["q1"].points == 3


@pytest.mark.parametrize("record", [
    None, {"status": "ran", "cases": "all correct"}, {"status": "ran", "cases": [{"ok": {"t": "float"}}] * 7},
    {"status": "ran", "cases": [{"ok": {"t": "float", "v": True}}] * 7},
    {"status": "ran", "cases": [{"ok": {"t": "array", "shape": [2, 3], "v": ["x"] * 6}}] * 6},
])
def test_forged_records_never_score(record):
    for what in ("entropy", "scores"):
        assert question(what).score(clean_record(record)).points == 0


def test_plain_numbers():
    assert plain_numbers({"t": "float", "v": "-inf"}) == -np.inf
    one, two = {"t": "float", "v": 1.0}, {"t": "int", "v": 2}
    assert plain_numbers({"t": "array", "shape": [2], "v": [one, two]}).tolist() == [1, 2]
    ragged = {"t": "list", "v": [{"t": "list", "v": [two]}, {"t": "list", "v": []}]}
    assert plain_numbers(ragged) is None
    assert plain_numbers({"t": "str", "v": "1"}) is None
    assert isinstance(question("scores"), FloatCode) and question("scores").expected[1].shape == (3, 3)
