"""How many (query, key) pairs each offset and each bucket receives in one sequence of length L.

Every pair (i, j) whose bias is used adds to the gradient of exactly one table entry,
u[h, bucket(j - i)]. Counting pairs therefore counts the training signals a bias entry gets:

- offset d = j - i occurs L - |d| times (queries i with 0 <= i and 0 <= i + d < L), and never
  when |d| >= L: a far offset is rare, and one longer than any training sequence is never seen;
- a bucket receives the sum over the offsets it covers, so the shared last bucket collects
  many offsets' worth of pairs.

In the decoder (causal), keys after the query are masked: their bias gets no gradient. We count
only the pairs the causal mask lets through (offsets <= 0), which is the signal that matters.

Sign convention: offset = key - query (j - i).
"""
from __future__ import annotations

import numpy as np

from .._validate import check_bool, check_int
from ..buckets import bucket_config, bucket_ids

__all__ = ["offset_pair_counts", "bucket_pair_counts", "bucket_offset_counts", "pair_count_rows"]

MAX_SEQ_LEN = 10_000_000  # offsets are enumerated, 2L of them; beyond this the arrays get silly


def offset_pair_counts(seq_len, *, causal=False):
    """(offsets, counts): every offset j - i that occurs in a sequence of length seq_len, and how often.

    Encoder: offsets -(L-1)..(L-1), counts L - |d|. Decoder (causal=True): only -(L-1)..0, the
    offsets the causal mask allows.
    """
    seq_len = check_int("seq_len", seq_len, minimum=1, maximum=MAX_SEQ_LEN)
    causal = check_bool("causal", causal)
    offsets = np.arange(-(seq_len - 1), 1 if causal else seq_len)
    return offsets, seq_len - np.abs(offsets)


def _offset_buckets(seq_len, bidirectional, num_buckets, max_distance):
    """(bucket of each occurring offset, pairs per offset), the configuration checked once."""
    bucket_config(bidirectional, num_buckets, max_distance)
    offsets, counts = offset_pair_counts(seq_len, causal=not bidirectional)
    return bucket_ids(offsets, bidirectional, num_buckets, max_distance), counts


def bucket_pair_counts(seq_len, bidirectional=True, num_buckets=32, max_distance=128):
    """int64 [num_buckets]: how many (query, key) pairs of one length-seq_len sequence use each bucket.

    For causal attention (bidirectional=False) only pairs allowed by the causal mask count.
    The counts add up to L*L (encoder) or L*(L+1)/2 (decoder).
    """
    buckets, counts = _offset_buckets(seq_len, bidirectional, num_buckets, max_distance)
    return np.bincount(buckets, weights=counts, minlength=num_buckets).astype(np.int64)


def bucket_offset_counts(seq_len, bidirectional=True, num_buckets=32, max_distance=128):
    """int64 [num_buckets]: how many distinct offsets of a length-seq_len sequence fall into each bucket."""
    buckets, _ = _offset_buckets(seq_len, bidirectional, num_buckets, max_distance)
    return np.bincount(buckets, minlength=num_buckets).astype(np.int64)


def pair_count_rows(seq_len, bidirectional=True, num_buckets=32, max_distance=128):
    """(bucket, distinct offsets, pairs, pairs per offset) for every bucket some offset reaches.

    `pairs per offset` is what one offset would get with its own parameter, on average over
    the bucket: sharing pools it `distinct offsets` times.
    """
    buckets, counts = _offset_buckets(seq_len, bidirectional, num_buckets, max_distance)
    pairs = np.bincount(buckets, weights=counts, minlength=num_buckets).astype(np.int64)
    offsets = np.bincount(buckets, minlength=num_buckets)
    return [(b, int(offsets[b]), int(pairs[b]), float(pairs[b] / offsets[b]))
            for b in range(num_buckets) if offsets[b] > 0]
