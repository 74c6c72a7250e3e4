"""Exercises 03 and 04: keys agree with the package, and PlainCode scores structures fairly."""
import math

import numpy as np
import pytest

import t5lesson as t5
from t5lesson.exercises import get
from t5lesson.exercises.ex03_relative_position_buckets import reference_ranges
from t5lesson.grading import harvest
from t5lesson.grading.questions.kinds import answer_hash
from t5lesson.grading.questions.structured import from_plain, to_python
from t5lesson.grading.verdict import CORRECT, ERROR, INCORRECT, NOT_ATTEMPTED, PARTIAL

EX03, EX04 = get("03_relative_position_buckets"), get("04_bias_heatmaps")


def score(question, value):
    """Score `value` for a question exactly as check() does: harvested to plain data first."""
    return question.score(harvest.collect(question.harvest_spec(), {question.name: value}))


@pytest.mark.parametrize("exercise, qid, answer", [
    (EX03, "q1", t5.relative_position_bucket(13 - 50)),
    (EX03, "q2", t5.relative_position_bucket(50 - 30)),
    (EX03, "q3", t5.relative_position_bucket(13 - 50, bidirectional=False)),
    (EX03, "q4", t5.bucket_ranges(False)[20].hi),
    (EX03, "q5", min(t5.bucket_ranges(False, 40, 30).unused)),
    (EX04, "q2", t5.relative_position_bucket(3 - 20, bidirectional=False)),
    (EX04, "q3", 2 * 32 * 6),
])
def test_numeric_keys_are_what_the_package_computes(exercise, qid, answer):
    assert exercise[qid].key == answer_hash(qid, str(int(answer)), exercise.id)
    assert score(exercise[qid], int(answer)).status == CORRECT
    assert score(exercise[qid], int(answer) + 1).status == INCORRECT


def test_only_config_a_gives_64_to_90_a_bucket_of_their_own():
    options = {"A": (True, 32, 128), "B": (False, 32, 128), "C": (True, 32, 256), "D": (True, 16, 128),
               "E": (True, 64, 128)}

    def own_bucket(config):
        b = t5.relative_position_bucket(np.arange(63, 92), *config)
        return len(set(b[1:-1])) == 1 and b[0] != b[1] and b[-1] != b[-2]

    assert [letter for letter, config in options.items() if own_bucket(config)] == ["A"]
    assert EX03["q6"].key == answer_hash("q6", "A", EX03.id)


def test_plain_round_trip():
    value = [None, (0, None), (-5, -5), (None, -91)]
    assert from_plain(harvest.to_plain(value)) == to_python(value) == [None, [0, None], [-5, -5], [None, -91]]
    mask = np.tril(np.ones((3, 4), dtype=bool))
    assert from_plain(harvest.to_plain(mask)) == to_python(mask.astype(int))


def honest_ranges(bidirectional=True, num_buckets=32, max_distance=128):
    """The solution notebook's answer: scan -max_distance..max_distance, group by bucket."""
    offsets = np.arange(-max_distance, max_distance + 1)
    buckets = t5.relative_position_bucket(offsets, bidirectional, num_buckets, max_distance)
    ranges = [None] * num_buckets
    for bucket in np.unique(buckets):
        covered = offsets[buckets == bucket]
        lo, hi = int(covered.min()), int(covered.max())
        ranges[int(bucket)] = (None if lo == -max_distance else lo, None if hi == max_distance else hi)
    return ranges


def test_bucket_ranges_question_gives_partial_credit_per_configuration():
    q = EX03["q8"]
    assert score(q, honest_ranges).status == CORRECT
    assert score(q, reference_ranges).status == ERROR  # the reference itself is blocked while grading

    def encoder_only(bidirectional=True, num_buckets=32, max_distance=128):
        if not bidirectional:
            raise ValueError("decoder not done yet")
        return honest_ranges(True, num_buckets, max_distance)

    outcome = score(q, encoder_only)
    assert outcome.status == PARTIAL and 0 < outcome.points < q.points
    assert "decoder not done yet" in outcome.message


def test_bucket_ranges_question_refuses_the_package_answer():
    def copy_package(bidirectional=True, num_buckets=32, max_distance=128):
        table = t5.bucket_ranges(bidirectional, num_buckets, max_distance)
        return [None if table[b] is None else (table[b].lo, table[b].hi) for b in range(num_buckets)]

    assert score(EX03["q8"], copy_package).status == ERROR
    assert t5.bucket_ranges().last_bucket_start == 91  # and the package works again afterwards


def test_bias_and_mask_questions():
    q5, q6 = EX04["q5"], EX04["q6"]

    def my_step_biases(table, prompt_len, new_tokens, max_distance=128, cached=True):
        table = np.asarray(table, dtype=float)
        calls = [(prompt_len, prompt_len, 0)] + [(1, prompt_len + t, prompt_len + t - 1)
                                                 for t in range(1, new_tokens + 1)]
        biases = []
        for q_len, k_len, query_offset in calls:
            queries = (query_offset if cached else 0) + np.arange(q_len)
            offsets = np.arange(k_len)[None, :] - queries[:, None]
            buckets = t5.relative_position_bucket(offsets, False, table.shape[0], max_distance)
            biases.append(table[buckets].transpose(2, 0, 1))
        return biases

    assert score(q5, my_step_biases).status == CORRECT
    outcome = score(q5, lambda *a, **k: my_step_biases(*a, **k, cached=False))  # each new token at position 0
    assert outcome.status == PARTIAL and "expected" in outcome.message, outcome.message

    def as_ints(q_len, k_len, query_offset=0):  # 0/1 instead of bools is fine
        return (np.arange(k_len)[None, :] <= (query_offset + np.arange(q_len))[:, None]).astype(int).tolist()

    assert score(q6, as_ints).status == CORRECT
    assert score(q6, lambda q_len, k_len, query_offset=0: np.tril(np.ones((q_len, k_len), bool))).status == PARTIAL
    assert score(q6, 3).status == INCORRECT


def test_fake_numbers_are_not_numbers():
    class FakeInt(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    outcome = score(EX03["q8"], lambda *a, **k: [FakeInt(0)] * 32)
    assert outcome.status == INCORRECT and "cannot be compared" in outcome.message


def test_blank_answers_are_not_attempted():
    def stub(*args, **kwargs):
        raise NotImplementedError()

    for q in (EX03["q7"], EX03["q8"], EX04["q5"], EX04["q6"]):
        assert score(q, stub).status == NOT_ATTEMPTED
    assert EX03["q1"].score(harvest.collect(EX03["q1"].harvest_spec(), {"answer_q1": None})).status == NOT_ATTEMPTED


def test_float_tolerance():
    q5 = EX04["q5"]
    calls = [np.asarray(call, dtype=float) for call in q5.expected[0]]  # one array per call, of different shapes
    want = to_python([call.tolist() for call in calls])
    assert q5.problem(want, {"ok": harvest.to_plain([call + 1e-12 for call in calls])}) is None
    assert q5.problem(want, {"ok": harvest.to_plain([call + 1e-3 for call in calls])}) is not None
    assert math.isclose(EX04.auto_points, 11) and math.isclose(EX03.auto_points, 14)


def _flex_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Question 7 answered with lesson 8's device-side bucketing: every offset in one range, then looked up."""
    from t5lesson.flex import offset_buckets

    rel = np.asarray(relative_position)
    n = int(np.abs(rel).max()) + 1
    buckets = offset_buckets(n, n, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    out = buckets.numpy()[rel + n - 1]
    return int(out) if out.ndim == 0 else out.tolist()


def _flex_step_biases(table, prompt_len, new_tokens, max_distance=128):
    """Question 5 of exercise 4 answered with lesson 8's per-offset bias, laid out."""
    import torch

    from t5lesson.flex import dense_bias, per_offset_bias

    table = torch.as_tensor(np.asarray(table, dtype=np.float64))
    calls = [(prompt_len, prompt_len, 0)] + [(1, prompt_len + t, prompt_len + t - 1) for t in range(1, new_tokens + 1)]
    return [dense_bias(per_offset_bias(table, q, k, bidirectional=False, max_distance=max_distance, query_offset=o),
                       q, k)[0].tolist() for q, k, o in calls]


def test_lesson_8s_flex_module_cannot_answer_the_bucket_and_bias_questions():
    """t5lesson.flex buckets and lays out the bias too: blocked with the rest while these answers run."""
    from t5lesson.exercises.ex04_bias_heatmaps import reference_step_biases

    assert _flex_buckets([-10, 10, 0]) == [8, 24, 0]  # both work outside grading
    table = np.random.default_rng(0).normal(size=(32, 2))
    assert _flex_step_biases(table, 5, 3, 20) == reference_step_biases(table, 5, 3, 20)
    assert score(EX03["q7"], _flex_buckets).status == ERROR
    assert score(EX04["q5"], _flex_step_biases).status == ERROR
    assert _flex_buckets(-10) == 8  # and again afterwards
