"""Hand-made heads: one value per bucket, at the offset of the bucket nearest the query."""
import numpy as np
import pytest

from t5lesson import ArgumentError, bucket_ranges, relative_bias, relative_position_bucket
from t5lesson.lessons.toy_heads import HEAD_NAMES, WINDOW, bucket_representatives, toy_bias_table


@pytest.mark.parametrize("bidirectional", [True, False])
def test_heads_do_what_their_names_say(bidirectional):
    table = toy_bias_table(bidirectional)
    assert table.shape == (32, len(HEAD_NAMES)) and table.dtype == np.float32
    bias = relative_bias(table, 40, 40, bidirectional=bidirectional)
    i = 30
    local, previous, far_left, flat = bias[:, i]
    assert (local[i - WINDOW:i + WINDOW + 1] == 0).all() and (local[:i - WINDOW] == -8).all()
    assert previous[i - 1] == 6 and np.count_nonzero(previous) == 1
    assert far_left[0] == far_left[:i].max() and (np.diff(far_left[:i + 1]) <= 0).all()
    assert (flat == 0).all()


def test_representatives_lie_in_their_bucket_nearest_to_zero():
    for bidirectional in (True, False):
        reps = bucket_representatives(bidirectional)
        assert set(reps) == {r.bucket for r in bucket_ranges(bidirectional).ranges}
        for bucket, offset in reps.items():
            assert relative_position_bucket(offset, bidirectional) == bucket
            step = 1 if offset < 0 else -1  # one step toward zero leaves the bucket (or is 0 itself)
            assert offset == 0 or relative_position_bucket(offset + step, bidirectional) != bucket
    assert (toy_bias_table(True)[16] == 0).all()  # never used by the default encoder


def test_bad_configuration():
    with pytest.raises(ArgumentError, match="max_distance must be > max_exact"):
        toy_bias_table(True, 32, 8)


def test_bias_from_table_cases_reach_the_cache_and_tell_heads_apart():
    from t5lesson import relative_bias
    from t5lesson.lessons.toy_heads import bias_from_table_cases

    cases = bias_from_table_cases()
    assert any(case.get("query_offset", 0) > 0 for case in cases)
    assert any(case["q_len"] != case["k_len"] for case in cases)
    for case in cases:
        bias = relative_bias(**case)
        assert bias.shape == (case["table"].shape[1], case["q_len"], case["k_len"])
    mixed = cases[2]["table"]
    assert len({tuple(column) for column in mixed.T}) == mixed.shape[1]  # no two heads alike
