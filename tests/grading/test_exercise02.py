"""Exercise 02's questions: float and matrix code questions, keys, hints, forged records."""
import math

import numpy as np
import pytest

from t5lesson.grading.bank import get
from t5lesson.grading.check import Checker
from t5lesson.grading.plain_code import FloatCode, _plain_numbers
from t5lesson.grading.questions import FreeText, MultipleChoice, Numeric, clean_record

EXERCISE = get("02_where_sqrt_d_went")


def outcome(question_id, value):
    return Checker("02_where_sqrt_d_went").outcome(question_id, value)


def good_entropy(weights):
    p = np.asarray(weights, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def good_scores(q, k, bias, mask):
    q, k, bias, mask = (np.asarray(a, dtype=float) for a in (q, k, bias, mask))
    return np.where(mask == 1, q @ k.T + bias, -np.inf)


def test_right_answers_get_full_marks():
    answers = {"q1": 16, "q2": 0.38595, "q3": good_entropy, "q5": ["E", "A", "B"], "q6": math.exp(0.5),
               "q7": 1 / 256, "q8": good_scores}
    for qid, value in answers.items():
        result = outcome(qid, value)
        assert result.status == "correct" and result.points == EXERCISE[qid].points, result.line()


def test_scores_may_use_any_hugely_negative_number_or_lists():
    as_lists = lambda *a: np.where(np.asarray(a[3]) == 1, good_scores(*a), -1e9).tolist()
    assert outcome("q8", as_lists).status == "correct"
    not_low_enough = lambda *a: np.where(np.asarray(a[3]) == 1, good_scores(*a), -100.0)
    result = outcome("q8", not_low_enough)
    assert result.status == "partly correct" and "not pushed far enough down" in result.message


@pytest.mark.parametrize("qid, function, status, words", [
    ("q3", lambda w: float(-(np.asarray(w) * np.log(np.asarray(w))).sum()), "partly correct", "contains nan"),
    ("q3", lambda w: [good_entropy(w)], "incorrect", "returned shape (1,)"),
    ("q3", lambda w: "high", "incorrect", "returned a string"),
    ("q3", lambda w: 1 / 0, "error", "ZeroDivisionError"),
    ("q8", lambda q, k, b, m: good_scores(q, k, b, m) / math.sqrt(len(q[0])), "partly correct", "values are not right"),
    ("q8", lambda q, k, b, m: good_scores(q, k, b, m).T, "partly correct", "shape"),
])
def test_wrong_answers_are_explained(qid, function, status, words):
    with np.errstate(all="ignore"):
        result = outcome(qid, function)
    assert result.status == status and words in result.message, result.line()
    assert result.points < EXERCISE[qid].points


def test_the_references_cannot_be_called_while_grading():
    from t5lesson import softmax_entropy

    result = outcome("q3", lambda w: float(softmax_entropy(np.asarray(w))))
    assert result.status == "error" and result.points == 0
    assert softmax_entropy(np.array([0.5, 0.5])) == pytest.approx(math.log(2))  # restored afterwards


def test_blank_answers_are_not_attempted():
    def stub(*args):
        raise NotImplementedError()

    for qid in ("q1", "q2", "q5", "q6", "q7"):
        assert outcome(qid, None).status == "not attempted"
    for qid in ("q3", "q8"):
        assert outcome(qid, stub).status == "not attempted"


def test_keys_are_hashes_and_every_question_has_hints():
    for question in EXERCISE.questions:
        if isinstance(question, (MultipleChoice, Numeric)):
            assert len(question.key) == 24 and all(c in "0123456789abcdef" for c in question.key)
        assert question.hints or isinstance(question, FreeText)
    assert EXERCISE.auto_points == 13 and EXERCISE["q4"].points == 3


@pytest.mark.parametrize("record", [
    None, {"status": "ran", "cases": "all correct"}, {"status": "ran", "cases": [{"ok": {"t": "float"}}] * 7},
    {"status": "ran", "cases": [{"ok": {"t": "float", "v": True}}] * 7},
    {"status": "ran", "cases": [{"ok": {"t": "array", "shape": [2, 3], "v": ["x"] * 6}}] * 6},
])
def test_forged_records_never_score(record):
    for qid in ("q3", "q8"):
        assert EXERCISE[qid].score(clean_record(record)).points == 0


def test_plain_numbers():
    assert _plain_numbers({"t": "float", "v": "-inf"}) == -np.inf
    one, two = {"t": "float", "v": 1.0}, {"t": "int", "v": 2}
    assert _plain_numbers({"t": "array", "shape": [2], "v": [one, two]}).tolist() == [1, 2]
    ragged = {"t": "list", "v": [{"t": "list", "v": [two]}, {"t": "list", "v": []}]}
    assert _plain_numbers(ragged) is None
    assert _plain_numbers({"t": "str", "v": "1"}) is None
    assert isinstance(EXERCISE["q8"], FloatCode) and EXERCISE["q8"].expected[1].shape == (3, 3)
