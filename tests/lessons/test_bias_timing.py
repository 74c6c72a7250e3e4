import pytest

from t5lesson import ArgumentError
from t5lesson.lessons.bias_timing import bias_timings


def test_rows_and_equality():
    rows = bias_timings([8, 33], heads=2, repeats=1, bidirectional=False)
    assert [r["length"] for r in rows] == [8, 33]
    assert all(r["equal"] and r["ours_s"] > 0 and r["reference_s"] > 0 for r in rows)


@pytest.mark.parametrize("kwargs, message", [
    (dict(lengths=[0]), "length must be >= 1"),
    (dict(lengths=[8], heads=0), "heads must be >= 1"),
    (dict(lengths=[8], repeats=1.5), "repeats must be an integer"),
    (dict(lengths=[8], bidirectional=None), "bidirectional must be True or False"),
])
def test_errors(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        bias_timings(**kwargs)
