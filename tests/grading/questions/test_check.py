"""check() and hint() in the notebook: one line per call, never a traceback, hints in levels."""
from __future__ import annotations

import math

import numpy as np
import pytest

from t5lesson.check import Checker, checker
from t5lesson.exercises import exercise_ids, get
from t5lesson.grading.check import WIDTH
from t5lesson.grading.questions.kinds import FreeText, MultipleChoice, Numeric, answer_hash
from t5lesson.grading.records import clean_record

check, hint = checker("01_unscaled_scores")  # multiple choice, floats, free text
check3, hint3 = checker("03_relative_position_buckets")  # whole numbers and the bucket function (my_bucket)
Q7 = get("03_relative_position_buckets")["q7"]


def solution_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Exercise 3's q7: the bucket of one offset, or of every offset in an array of any shape."""
    if np.ndim(relative_position):
        one = np.vectorize(lambda r: one_bucket(int(r), bidirectional, num_buckets, max_distance))
        return one(np.asarray(relative_position)).tolist()
    return one_bucket(relative_position, bidirectional, num_buckets, max_distance)


def one_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        if relative_position > 0:
            bucket = num_buckets
        n = abs(relative_position)
    else:
        n = max(-relative_position, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return bucket + n
    spread = math.log(n / max_exact) / math.log(max_distance / max_exact)
    return bucket + min(max_exact + int(spread * (num_buckets - max_exact)), num_buckets - 1)


def line(capsys, *args, using=None) -> str:
    (using or check)(*args)
    out = capsys.readouterr().out
    first, *rest = out.rstrip("\n").split("\n")
    # one verdict, whatever happens: a first line, then only its continuation, wrapped between words
    assert first and all(r.startswith("  ") for r in rest), out
    assert all(len(r) <= WIDTH for r in [first, *rest]), out
    return " ".join(out.split())


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class EqualInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize("answer, start", [
    ("B", "q1: Correct"), ("b", "q1: Correct"), ("(B)", "q1: Correct"), (" B ", "q1: Correct"),
    ("A", "q1: Incorrect: that divides q.k by sqrt(d); T5 does not."),
    (["B", "C"], "q1: Incorrect: choose exactly one"),
    (2, "q1: Incorrect: answer_q1 should be a letter"), ("G", "q1: Incorrect: G is not an option"),
    ("the second one", "q1: Incorrect: answer_q1 should be option letters"), (None, "q1: Not attempted"),
    (AlwaysEqual(), "q1: Incorrect: answer_q1 should be a letter"),
])
def test_multiple_choice_single(capsys, answer, start):
    assert line(capsys, "q1", answer).startswith(start)


@pytest.mark.parametrize("answer, start", [
    (["A", "B"], "q2: Correct"), (("b", "a"), "q2: Correct"), ({"A", "B"}, "q2: Correct"), ("A, B", "q2: Correct"),
    ("A and B", "q2: Correct"), (["A"], "q2: Incorrect: not complete"),
    (["A", "C"], "q2: Incorrect: a number per absolute"),
    (["A", "B", "C"], "q2: Incorrect"), ([1, 2], "q2: Incorrect: answer_q2 should hold letters"),
])
def test_multiple_choice_several(capsys, answer, start):
    assert line(capsys, "q2", answer).startswith(start)


@pytest.mark.parametrize("answer, start", [
    (1.35, "q4: Correct"), (1.35004, "q4: Correct"), (np.float32(1.35), "q4: Correct"), (np.array(1.35), "q4: Correct"),
    (1.3504, "q4: Incorrect"), (0.475, "q4: Incorrect: that divides q.k by sqrt(d); T5 does not."),
    (2.05, "q4: Incorrect: you used the bias of the opposite offset"),
    ("1.35", "q4: Incorrect: answer_q4 should be a number, not the string"),
    (float("nan"), "q4: Incorrect: answer_q4 is nan"),
    (np.array([1.35, 2.0]), "q4: Incorrect: answer_q4 should be a number"),
    (EqualInt(1), "q4: Incorrect: answer_q4 should be a number, but it is an EqualInt object"),
])
def test_numeric_float(capsys, answer, start):
    assert line(capsys, "q4", answer).startswith(start)


@pytest.mark.parametrize("answer, start", [
    (12, "q1: Correct"), (12.0, "q1: Correct"), (np.int64(12), "q1: Correct"),
    (12.5, "q1: Incorrect: the answer is a whole"), (28, "q1: Incorrect: that is the bucket of the opposite offset"),
    (True, "q1: Incorrect: answer_q1 should be a number"),
    (EqualInt(12), "q1: Incorrect"), (AlwaysEqual(), "q1: Incorrect"),
])
def test_numeric_int(capsys, answer, start):
    assert line(capsys, "q1", answer, using=check3).startswith(start)


def test_reads_the_notebook_variable(capsys):
    global answer_q3
    answer_q3 = 22
    assert line(capsys, "q3", using=check3) == "q3: Correct [1/1]"
    del answer_q3
    assert line(capsys, "q3", using=check3).startswith("q3: Not attempted: set answer_q3")


def test_code_correct_partial_error_and_not_attempted(capsys):
    assert line(capsys, "q7", solution_bucket, using=check3) == f"q7: Correct: all {len(Q7.cases)} cases right. [4/4]"

    def no_clamp(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        buckets = np.asarray(solution_bucket(relative_position, bidirectional, num_buckets, max_distance))
        return np.where(np.abs(relative_position) < 128, buckets, 99).tolist()

    text = line(capsys, "q7", no_clamp, using=check3)
    assert text.startswith("q7: Partly correct:") and "returned 99, expected 15" in text and "[1/4]" in text

    def crashes(relative_position, *args, **kwargs):
        return 1 // (abs(relative_position) - abs(relative_position))  # raises on the first case, one offset

    text = line(capsys, "q7", crashes, using=check3)
    assert text.startswith("q7: Error: my_bucket(0)") and "ZeroDivisionError" in text and "in crashes, line" in text

    def stub(relative_position, *args, **kwargs):
        raise NotImplementedError()

    assert line(capsys, "q7", stub, using=check3).startswith("q7: Not attempted")
    assert line(capsys, "q7", 5, using=check3).startswith(
        "q7: Incorrect: my_bucket should be a function, but it is an int")


def test_code_refuses_objects_that_claim_equality(capsys):
    text = line(capsys, "q7", lambda *args, **kwargs: EqualInt(0), using=check3)
    assert text.startswith(f"q7: Incorrect: 0 of {len(Q7.cases)} cases right") and "EqualInt object" in text
    text = line(capsys, "q7", lambda *args, **kwargs: AlwaysEqual(), using=check3)
    assert text.startswith(f"q7: Incorrect: 0 of {len(Q7.cases)}")


def test_code_cannot_call_the_reference(capsys):
    from t5lesson import relative_position_bucket

    text = line(capsys, "q7", lambda r, *a, **k: relative_position_bucket(r, *a, **k), using=check3)
    assert "the reference implementation is not available" in text
    assert relative_position_bucket(-40) == 12  # restored afterwards


def test_code_that_hangs_is_cut_short(capsys):
    def hangs(*args, **kwargs):
        while True:
            pass

    text = line(capsys, "q7", hangs, using=check3)
    assert text.startswith("q7: Error:") and f"took longer than {Q7.case_timeout:g} s" in text


def test_free_text_and_unknown_ids(capsys):
    # free text: the self-check questions, one line per element (see test_self_check.py)
    check("q3", "Without the scale the logits grow with the dimension, so the softmax saturates.")
    assert capsys.readouterr().out.startswith("q3: Submitted")
    assert "'q10' is not a question here" in line(capsys, "q10")
    assert "at most one answer" in line(capsys, "q1", "A", "B")


def test_hints_come_in_levels(capsys):
    helper = Checker("01_unscaled_scores")
    for _ in range(5):
        helper.hint("q1")
    levels = [text.split(":")[0] for text in capsys.readouterr().out.splitlines() if not text.startswith(" ")]
    assert levels == ["q1 hint 1/3", "q1 hint 2/3", "q1 hint 3/3", "q1 hint 3/3", "q1 hint 3/3"]


def test_hint_output(capsys):
    helper = Checker("03_relative_position_buckets")
    helper.hint("q1")
    helper.hint("q1")
    out = [text for text in capsys.readouterr().out.splitlines() if not text.startswith(" ")]
    assert out[0].startswith("q1 hint 1/3: the offset is key position minus query position")
    assert out[1].startswith("q1 hint 2/3:")


def test_expected_answers_are_not_in_plain_text():
    exercise = get("01_unscaled_scores")
    for question in exercise.questions:
        if isinstance(question, (MultipleChoice, Numeric)):
            assert len(question.key) == 24 and all(c in "0123456789abcdef" for c in question.key)
    ex03 = "03_relative_position_buckets"
    assert answer_hash("q1", "12", ex03) == get(ex03)["q1"].key  # the hash is stored, not "12"
    assert "01_unscaled_scores" in exercise_ids()


def test_every_question_has_hints_or_is_free_text():
    for question in get("01_unscaled_scores").questions:
        assert question.hints or isinstance(question, FreeText)


@pytest.mark.parametrize("record", [
    None, 5, {"status": "value"}, {"status": "value", "value": {"t": "int", "v": "12"}},
    {"status": "value", "value": {"t": "str", "v": 3}}, {"status": "value", "value": {"t": "int", "v": True}},
    {"status": "ran", "cases": "all correct"}, {"status": "ran", "cases": [{"ok": {"t": "int"}}] * 91},
])
def test_forged_records_never_score(record):
    for exercise_id in ("01_unscaled_scores", "03_relative_position_buckets"):
        exercise = get(exercise_id)
        for question in exercise.questions:
            if question.auto_scored:
                assert question.score(clean_record(record)).points == 0
def test_an_unknown_wrong_answer_gets_a_nudge_not_a_hint(capsys):
    """Exercise 03, q1 = 4 (forgot the + 8): no hint text in the check line; hint() starts at level 1."""
    helper = Checker("03_relative_position_buckets")
    question = helper.exercise["q1"]
    helper.check("q1", 4)
    text = capsys.readouterr().out.strip()
    assert text == 'q1: Incorrect: not this one. Try again, or run hint("q1"). [0/1]'
    assert not any(h[:30] in text for h in question.hints)
    helper.hint("q1")
    assert capsys.readouterr().out.startswith("q1 hint 1/3: ")
    assert question.score({"status": "value", "value": {"t": "int", "v": 4}}).message == ""  # the grader's feedback
