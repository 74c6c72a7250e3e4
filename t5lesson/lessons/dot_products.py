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

__all__ = ["prefix_dot_products", "normal_pdf", "scores_standard", "scores_t5", "softmax_weight", "jacobian_cases",
           "ROW_JACOBIANS_HINTS"]


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

    Unscaled rows (multiplier 1) and scaled ones (1/sqrt(d)), and multipliers that are neither
    (0.3, 2, a negative one), so a function that reads the multiplier as a yes/no flag, or
    writes 1/sqrt(d) in its place, is caught; odd and even d and numbers of keys, d below, equal
    to and above the number of keys, a single key; and two saturated rows: a long query (one key
    takes nearly all the weight, so dp/ds is nearly 0), and one whose top logit is near 1000,
    where a softmax that exponentiates the logits without first subtracting their maximum
    overflows.
    """
    rng = np.random.default_rng(seed)

    def row(d, n_keys):
        return rng.standard_normal(d), rng.standard_normal((n_keys, d))

    (q4, k4), (q16, k16), (q7, k3), (q5, k5), (q3, k4b), (q6, k1) = (
        row(4, 5), row(16, 6), row(7, 3), row(5, 5), row(3, 4), row(6, 1))
    far = 60.0 * k16[2]  # q.k_2 = 60 |k_2|^2: near 1000 for 16 unit-variance entries
    return [(q4, k4, 1.0), (q4, k4, 0.5), (q16, k16, 0.25), (q7, k3, 0.3), (q5, k5, 2.0), (q3, k4b, -0.7),
            (q6, k1, 1.0), (32 * q16, k16, 1.0), (far, k16, 1.0), (q7, k3, 1 / math.sqrt(7))]


ROW_JACOBIANS_HINTS = (
    "how does one weight p_a change when one logit s_b moves a little? The box above the cell "
    "derives it with the quotient rule: what do you get when a equals b, and when it does not? "
    "And how does each logit s_j depend on the query q?",
    "the first matrix, dp/ds, is built from the weights alone: p_a on the diagonal minus p_a p_b "
    "everywhere, so compute the logits and their softmax first. The logit s_j is the multiplier "
    "times the dot product of key j with q, so its derivative with respect to q is the multiplier "
    "times key j. The chain rule multiplies the two Jacobians: dp/ds, n_keys by n_keys, times "
    "ds/dq, n_keys by d.",
    "p = t5.softmax(multiplier * keys @ q), then dp_ds = np.diag(p) - np.outer(p, p) and "
    "dp_dq = dp_ds @ (multiplier * keys); return dp_ds, dp_dq. t5.softmax subtracts the largest "
    "logit before exponentiating, so a row whose logits reach 1000 does not overflow.",
)


def _row_jacobians_turn():
    from ..saturation import row_jacobians
    from .your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return Turn(reference=row_jacobians, cases=jacobian_cases, hints=ROW_JACOBIANS_HINTS)


TURNS = {"row_jacobians": _row_jacobians_turn()}
