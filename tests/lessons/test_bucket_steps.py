"""The step-by-step bucket trace agrees with relative_position_bucket everywhere."""
import math

import pytest

from t5lesson import ArgumentError, relative_position_bucket
from t5lesson.lessons.bucket_steps import bucket_steps

CONFIGS = [(True, 32, 128), (False, 32, 128), (True, 33, 1000), (False, 16, 32), (True, 8, 5), (False, 2, 3)]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", CONFIGS)
def test_trace_leads_to_the_package_bucket(bidirectional, num_buckets, max_distance):
    for offset in range(-3 * max_distance, 3 * max_distance + 1):
        s = bucket_steps(offset, bidirectional, num_buckets, max_distance)
        assert s.bucket == relative_position_bucket(offset, bidirectional, num_buckets, max_distance)
        within = s.bucket - s.half_start
        if s.region == "exact":
            assert s.n < s.max_exact and within == s.n
        elif s.region == "log":
            assert within == s.max_exact + math.trunc(s.log_value)
        else:
            assert s.region == "clamped" and within == s.per_direction - 1
            assert s.max_exact + math.trunc(s.log_value) > s.per_direction - 1


def test_text_of_the_trace():
    text = str(bucket_steps(500))
    assert "upper half" in text and "4. clamp: 19 > 15" in text and text.endswith("bucket = 16 + 15 = 31")
    text = str(bucket_steps(3, bidirectional=False))
    assert "future key" in text and text.endswith("bucket = 0 + 0 = 0")
    assert "log region" in str(bucket_steps(-20)) and "exact region" in str(bucket_steps(-7))


@pytest.mark.parametrize("args, message", [
    ((True,), "offset must be an integer"),
    ((1.5,), "offset must be an integer"),
    ((4, True, 32, 8), "max_distance must be > max_exact"),
    ((4, "yes"), "bidirectional must be True or False"),
])
def test_bad_arguments(args, message):
    with pytest.raises(ArgumentError, match=message):
        bucket_steps(*args)


def test_a_tie_is_shown_as_exact_and_agrees_with_the_bucket():
    steps = bucket_steps(-30, bidirectional=False, num_buckets=36, max_distance=50)
    assert steps.tie and steps.log_value == 9.0 and steps.bucket == 27
    assert "= 9.000 exactly (a tie), so 18 + 9 = 27" in str(steps)
    assert not bucket_steps(-8).tie and not bucket_steps(-20).tie


def test_bucket_of_is_the_package_bucket_as_an_int():
    from t5lesson.lessons.bucket_steps import BUCKET_OF_CASES, bucket_of

    for case in BUCKET_OF_CASES:
        assert bucket_of(*case) == relative_position_bucket(*case) and type(bucket_of(*case)) is int
    with pytest.raises(ArgumentError, match="offset must be an integer"):
        bucket_of(True)


def test_bucket_of_cases_avoid_ties_and_cover_every_region():
    """A learner computing the log in float64 matches on every case (ties are where float32 may not)."""
    from t5lesson.lessons.bucket_steps import BUCKET_OF_CASES

    steps = [bucket_steps(*case) for case in BUCKET_OF_CASES]
    assert not any(s.tie for s in steps)
    assert {s.region for s in steps} == {"exact", "log", "clamped"}
    assert {s.bidirectional for s in steps} == {True, False} and any(s.half_start > 0 for s in steps)
