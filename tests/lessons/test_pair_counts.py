"""Pair counts per offset and per bucket: brute force agrees, totals add up, lesson-3 facts."""
import itertools

import numpy as np
import pytest

from t5lesson import ArgumentError, relative_position_bucket
from t5lesson.lessons.pair_counts import bucket_offset_counts, bucket_pair_counts, offset_pair_counts, pair_count_rows


def brute_force(seq_len, bidirectional, num_buckets, max_distance):
    counts = np.zeros(num_buckets, dtype=np.int64)
    for i, j in itertools.product(range(seq_len), repeat=2):
        if bidirectional or j <= i:  # the decoder's causal mask removes future keys
            counts[relative_position_bucket(j - i, bidirectional, num_buckets, max_distance)] += 1
    return counts


@pytest.mark.parametrize("seq_len, bidirectional, num_buckets, max_distance", [
    (1, True, 32, 128), (7, True, 8, 9), (40, True, 32, 128), (40, False, 32, 128), (33, False, 9, 20),
    (25, True, 33, 12),
])
def test_bucket_counts_match_brute_force(seq_len, bidirectional, num_buckets, max_distance):
    np.testing.assert_array_equal(bucket_pair_counts(seq_len, bidirectional, num_buckets, max_distance),
                                  brute_force(seq_len, bidirectional, num_buckets, max_distance))


def test_offset_counts_and_totals():
    offsets, counts = offset_pair_counts(5)
    np.testing.assert_array_equal(offsets, np.arange(-4, 5))
    np.testing.assert_array_equal(counts, [1, 2, 3, 4, 5, 4, 3, 2, 1])
    offsets, counts = offset_pair_counts(5, causal=True)
    np.testing.assert_array_equal(offsets, np.arange(-4, 1))
    assert bucket_pair_counts(512).sum() == 512 * 512
    assert bucket_pair_counts(512, False).sum() == 512 * 513 // 2


def test_lesson_three_facts():
    pairs = bucket_pair_counts(512)
    assert pairs[16] == 0  # the default encoder never uses bucket 16
    offsets = bucket_offset_counts(512)
    assert offsets[15] == 511 - 91 + 1 and offsets[0] == 1  # the last bucket holds offsets -91..-511
    rows = {b: (n, p, per) for b, n, p, per in pair_count_rows(512)}
    assert 16 not in rows and rows[15][1] == sum(512 - d for d in range(91, 512))
    assert rows[1] == (1, 511, 511.0)


@pytest.mark.parametrize("call, message", [
    (lambda: offset_pair_counts(0), "seq_len must be >= 1"),
    (lambda: offset_pair_counts(2.0), "seq_len must be an integer"),
    (lambda: offset_pair_counts(4, causal=1), "causal must be True or False"),
    (lambda: bucket_pair_counts(10, True, 32, 8), "max_distance must be > max_exact"),
    (lambda: bucket_offset_counts(10, True, 3, 128), "num_buckets must be >= 4"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()
