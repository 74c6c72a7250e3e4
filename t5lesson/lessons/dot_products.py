"""Lesson 1's numbers: how q.k spreads out with d, and what that does to one softmax row.

For q and k with independent N(0, 1) entries, q.k is a sum of d independent products, each of
mean 0 and variance 1, so Var(q.k) = d and its standard deviation grows like sqrt(d). Standard
attention divides by sqrt(d) to bring the spread back to 1; T5 does not (lesson 2 shows where
the division went).

The explorers move a slider over d. Redrawing fresh random vectors for every d would be slow
and would make the picture jump for reasons that have nothing to do with d, so we draw vectors
of the largest dimension once and use their first d entries: a running sum over the products
gives q.k for every d at once.
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import ArgumentError, check_int

__all__ = ["prefix_dot_products", "normal_pdf", "scores_standard", "scores_t5", "softmax_weight", "jacobian_cases"]


def prefix_dot_products(n_pairs, d_max, *, n_keys=None, seed=0):
    """q.k using only the first d entries, for every d = 1 .. d_max.

    n_keys=None: `n_pairs` independent (q, k) pairs, result [n_pairs, d_max];
        entry [p, d - 1] is q_p[:d] . k_p[:d].
    n_keys=K:    `n_pairs` queries each against its own K keys, result [n_pairs, K, d_max].

    Entries of q and k are i.i.d. N(0, 1), drawn with `seed`. Float32, which is plenty for a
    picture and halves the memory of the running sums.
    """
    n_pairs = check_int("n_pairs", n_pairs, minimum=1)
    d_max = check_int("d_max", d_max, minimum=1)
    rng = np.random.default_rng(seed)
    if n_keys is None:
        products = rng.standard_normal((n_pairs, d_max), dtype=np.float32)
        products *= rng.standard_normal((n_pairs, d_max), dtype=np.float32)
    else:
        n_keys = check_int("n_keys", n_keys, minimum=1)
        q = rng.standard_normal((n_pairs, 1, d_max), dtype=np.float32)
        products = rng.standard_normal((n_pairs, n_keys, d_max), dtype=np.float32) * q
    return np.cumsum(products, axis=-1, dtype=np.float32)


def normal_pdf(x, std=1.0):
    """Density of N(0, std^2) at x: the curve a histogram of q.k should follow."""
    if isinstance(std, bool) or not isinstance(std, (int, float)) or not (0 < std < math.inf):
        raise ArgumentError(f"std must be a positive finite number, got {std!r}")
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-0.5 * (x / std) ** 2) / (std * math.sqrt(2 * math.pi))


def _check_vectors(q, k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.shape[0] or q.shape[0] < 1:
        raise ArgumentError(
            f"q must have shape [d] and k shape [n_keys, d] with the same d >= 1, "
            f"got q {q.shape} and k {k.shape}"
        )
    return q, k


def scores_standard(q, k):
    """The standard score of one query against each key: q.k_j / sqrt(d)."""
    q, k = _check_vectors(q, k)
    return k @ q / math.sqrt(q.shape[0])


def scores_t5(q, k, bias):
    """T5's score of one query against each key: q.k_j + u_j, no division by sqrt(d).

    `bias` holds u_j = u[bucket(j - i)] for each key j (lesson 3 computes the buckets).
    """
    q, k = _check_vectors(q, k)
    bias = np.asarray(bias, dtype=np.float64)
    if bias.shape != (k.shape[0],):
        raise ArgumentError(f"bias must have one entry per key, shape ({k.shape[0]},), got {bias.shape}")
    return k @ q + bias


def softmax_weight(scores, index):
    """The attention weight exp(s_index) / sum_j exp(s_j) of one key, from a row of scores."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size < 1 or not np.isfinite(s).all():
        raise ArgumentError(f"scores must be a non-empty 1-D row of finite numbers, got shape {s.shape}")
    index = check_int("index", index, minimum=0, maximum=s.size - 1)
    e = np.exp(s - s.max())
    return float(e[index] / e.sum())


def jacobian_cases(seed=0):
    """Rows to check a learner's `row_jacobians(q, keys, multiplier)` on: (q [d], keys [n_keys, d], multiplier).

    Unscaled and scaled rows of a few keys, one with d larger than the number of keys, and one
    saturated row (a long query: one key takes nearly all the weight, so dp/ds is nearly 0).
    """
    rng = np.random.default_rng(seed)
    q4, k4 = rng.standard_normal(4), rng.standard_normal((5, 4))
    q16, k16 = rng.standard_normal(16), rng.standard_normal((6, 16))
    return [(q4, k4, 1.0), (q4, k4, 0.5), (q16, k16, 0.25), (32 * q16, k16, 1.0)]
