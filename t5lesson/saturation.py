"""How saturated is a softmax? Statistics the lessons use to show what dropping 1/sqrt(d) does.

For q, k with independent unit-variance entries, q.k has variance d. Without the 1/sqrt(d) the
logits spread out as d grows, the softmax approaches a one-hot vector, and its Jacobian with
respect to the logits,

    J = diag(p) - p p^T,

goes to zero: every logit but the top one gets almost no gradient. That is not the whole chain,
though. With logits s_j = c q.k_j (c = 1 unscaled, 1/sqrt(d) scaled), the weights' Jacobian with
respect to the query is

    dp/dq = c J K        (K: the keys, one per row),

and the keys are sqrt(d) times longer than the scaled head's c K: unscaled, ||dp/dq|| stays large
(it grows before it falls) while ||J|| shrinks. These functions measure both.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import ArgumentError, check_int
from .scores import resolve_scale, softmax

__all__ = ["softmax_entropy", "max_weight", "softmax_jacobian_norm", "query_gradient_norm", "row_jacobians",
           "random_logits", "saturation_curve", "SaturationCurve"]


def _check_weights(weights):
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 1 or w.shape[-1] < 1:
        raise ArgumentError(f"weights must have at least one axis with at least one entry, got shape {w.shape}")
    if (w < -1e-12).any() or not np.allclose(w.sum(-1), 1.0, atol=1e-5):
        raise ArgumentError("weights must be probabilities along the last axis (non-negative, summing to 1)")
    return np.clip(w, 0.0, 1.0)


def softmax_entropy(weights):
    """Entropy in nats along the last axis: log(n) for uniform weights, 0 for one-hot."""
    p = _check_weights(weights)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -plogp.sum(-1)


def max_weight(weights):
    """The largest weight along the last axis: 1/n for uniform, 1 for one-hot."""
    return _check_weights(weights).max(-1)


def softmax_jacobian_norm(weights):
    """Frobenius norm of the softmax Jacobian diag(p) - p p^T, along the last axis.

    Closed form: ||J||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2. It is 0 for a one-hot p (no
    gradient reaches the logits) and largest for a spread-out p.
    """
    p = _check_weights(weights)
    s2 = (p ** 2).sum(-1)
    s3 = (p ** 3).sum(-1)
    return np.sqrt(np.maximum(s2 - 2 * s3 + s2 ** 2, 0.0))


def query_gradient_norm(weights, keys, multiplier=1.0):
    """Frobenius norm of dp/dq = multiplier * (diag(p) - p p^T) K, for each row of weights.

    `weights` [..., n_keys] are softmax(multiplier * q.K^T) and `keys` K is [n_keys, d]: how far
    the attention row moves when its query moves. Computed as sqrt(trace(J G J)) with the Gram
    matrix G = K K^T, so it never builds the [n_keys, d] matrix per row.
    """
    p = _check_weights(weights)
    k = np.asarray(keys, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != p.shape[-1]:
        raise ArgumentError(f"keys must be [n_keys, d] with n_keys = {p.shape[-1]} (the weights' last axis), "
                            f"got shape {k.shape}")
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or not np.isfinite(multiplier):
        raise ArgumentError(f"multiplier must be a finite number, got {multiplier!r}")
    jac = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    gram = k @ k.T
    squared = ((jac @ gram) * jac).sum((-2, -1))  # J is symmetric: ||J K||^2 = tr(J G J) = sum((J G) * J)
    return abs(multiplier) * np.sqrt(np.maximum(squared, 0.0))


def row_jacobians(q, keys, multiplier=1.0):
    """(dp/ds [n_keys, n_keys], dp/dq [n_keys, d]) for one attention row p = softmax(multiplier * keys @ q).

    The two matrices lesson 1 asks the learner to write: the softmax's Jacobian with respect to
    its logits s, diag(p) - p p^T, and, by the chain rule through s = multiplier * K q, the
    weights' Jacobian with respect to the query, multiplier * (diag(p) - p p^T) K.
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(keys, dtype=np.float64)
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.shape[0] or k.shape[0] < 1:
        raise ArgumentError(f"q must be [d] and keys [n_keys, d] with the same d, got {q.shape} and {k.shape}")
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or not np.isfinite(multiplier):
        raise ArgumentError(f"multiplier must be a finite number, got {multiplier!r}")
    p = softmax(multiplier * (k @ q))
    jacobian = np.diag(p) - np.outer(p, p)
    return jacobian, multiplier * jacobian @ k


def _norms_per_row(jacobians, q, k, multiplier):
    """Mean Frobenius norms of the two Jacobians that `jacobians(q_row, k, multiplier)` returns, over the rows of q.

    When d exceeds the number of keys, the rows are first rotated so that the keys lie in their
    first n_keys coordinates (K^T = Q R, so K Q = R^T and q Q keeps K q): a rotation of the query
    space changes neither the logits nor either norm, and it turns every [n_keys, d] product into
    an [n_keys, n_keys] one, small enough that BLAS does not start threads for it, which on a busy
    machine made the d = 1024 curve thirty times slower.
    """
    if k.shape[1] > k.shape[0]:
        rotation, triangle = np.linalg.qr(k.T)  # [d, n_keys], [n_keys, n_keys]
        q, k = q @ rotation, triangle.T
    norms = np.array([[np.linalg.norm(np.asarray(m, dtype=np.float64)) for m in jacobians(row, k, multiplier)]
                      for row in q])
    return norms[:, 0].mean(), norms[:, 1].mean()


def _random_qk(d, n_queries, n_keys, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n_queries, d)), rng.standard_normal((n_keys, d))


def random_logits(d, n_queries=256, n_keys=64, scale=1.0, seed=0):
    """Logits q.k * scale for random q, k with i.i.d. N(0, 1) entries: [n_queries, n_keys]."""
    d = check_int("d", d, minimum=1)
    n_queries = check_int("n_queries", n_queries, minimum=1)
    n_keys = check_int("n_keys", n_keys, minimum=1)
    multiplier = resolve_scale(scale, d)
    q, k = _random_qk(d, n_queries, n_keys, seed)
    return (q @ k.T) * multiplier


class SaturationCurve(NamedTuple):
    d: np.ndarray
    entropy: np.ndarray  # mean over queries, nats
    max_weight: np.ndarray  # mean over queries
    jacobian_norm: np.ndarray  # mean over queries: ||dp/ds||, s the logits
    query_gradient_norm: np.ndarray  # mean over queries: ||dp/dq||, how far the row moves with its query
    uniform_entropy: float  # log(n_keys), the most spread-out possible


def saturation_curve(dims, scale: float | str = 1.0, n_queries=256, n_keys=64, seed=0,
                     jacobians=None) -> SaturationCurve:
    """Mean entropy, max weight, ||dp/ds|| and ||dp/dq|| of softmax(q.k * scale) for each d in dims.

    scale=1.0 is the unscaled score with nothing compensated (unit-variance q and k);
    scale="sqrt_d" is standard attention. jacobians: a function like `row_jacobians` that the two
    Jacobian norms are measured with, one query at a time (lesson 1 passes the learner's); by
    default they come from the closed forms, all queries at once.
    """
    if jacobians is not None and not callable(jacobians):
        raise ArgumentError(f"jacobians must be a function like row_jacobians, got {type(jacobians).__name__}")
    dims = [check_int("d", d, minimum=1) for d in np.atleast_1d(dims).tolist()]
    n_queries = check_int("n_queries", n_queries, minimum=1)
    n_keys = check_int("n_keys", n_keys, minimum=1)
    rows = []
    for d in dims:
        multiplier = resolve_scale(scale, d)
        q, k = _random_qk(d, n_queries, n_keys, seed)
        w = softmax((q @ k.T) * multiplier)
        if jacobians is None:
            norms = softmax_jacobian_norm(w).mean(), query_gradient_norm(w, k, multiplier).mean()
        else:
            norms = _norms_per_row(jacobians, q, k, multiplier)
        rows.append((softmax_entropy(w).mean(), max_weight(w).mean(), *norms))
    ent, mx, jac, dq = (np.array(col) for col in zip(*rows, strict=False))
    return SaturationCurve(np.array(dims), ent, mx, jac, dq, float(np.log(n_keys)))
