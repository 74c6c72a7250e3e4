"""Saturation statistics: closed forms checked against autograd, and the trends the lessons state."""
import numpy as np
import pytest
import torch

from t5lesson import (
    ArgumentError,
    max_weight,
    query_gradient_norm,
    random_logits,
    saturation_curve,
    softmax,
    softmax_entropy,
    softmax_jacobian_norm,
)


def test_jacobian_norm_matches_autograd():
    logits = torch.randn(6, 9, dtype=torch.float64)
    p = torch.softmax(logits, -1)
    for row, probs in zip(logits, p, strict=False):
        jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), row)
        assert np.isclose(torch.linalg.matrix_norm(jac).item(), softmax_jacobian_norm(probs.numpy()))


@pytest.mark.parametrize("multiplier", [1.0, 0.125])
def test_query_gradient_norm_matches_autograd(multiplier):
    gen = torch.Generator().manual_seed(2)
    queries = torch.randn(5, 16, dtype=torch.float64, generator=gen)
    keys = torch.randn(7, 16, dtype=torch.float64, generator=gen)
    weights = torch.softmax(multiplier * queries @ keys.T, -1)
    got = query_gradient_norm(weights.numpy(), keys.numpy(), multiplier)
    for q, value in zip(queries, got, strict=True):
        jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(multiplier * keys @ x, -1), q)
        assert jac.shape == (7, 16)
        assert np.isclose(torch.linalg.matrix_norm(jac).item(), value)


def test_query_gradient_grows_unscaled_while_logit_jacobian_shrinks():
    dims = [16, 64, 256, 1024]
    unscaled, scaled = saturation_curve(dims), saturation_curve(dims, scale="sqrt_d")
    # The logits' Jacobian falls below the scaled head's by d = 1024 ...
    assert unscaled.jacobian_norm[-1] < 0.5 * scaled.jacobian_norm[-1]
    # ... but the query's gradient is larger unscaled at every d, by far more than the ratio of ||J||.
    assert (unscaled.query_gradient_norm > 5 * scaled.query_gradient_norm).all()
    assert np.ptp(scaled.query_gradient_norm) < 0.02  # scaled: the same at every d
    # Scaled, keys/sqrt(d) have unit-length rows on average, so ||dp/dq|| is about ||J||.
    np.testing.assert_allclose(scaled.query_gradient_norm, scaled.jacobian_norm, rtol=0.05)


def test_extremes():
    uniform, onehot = np.full(8, 1 / 8), np.eye(8)[3]
    assert np.isclose(softmax_entropy(uniform), np.log(8)) and softmax_entropy(onehot) == 0
    assert max_weight(uniform) == 1 / 8 and max_weight(onehot) == 1
    assert softmax_jacobian_norm(onehot) == 0
    assert query_gradient_norm(onehot, np.ones((8, 3))) == 0


def test_variance_of_dot_product_is_d():
    for d in (4, 64, 512):
        logits = random_logits(d, n_queries=400, n_keys=400, seed=1)
        assert abs(logits.var() / d - 1) < 0.1
        assert abs(random_logits(d, 400, 400, scale="sqrt_d", seed=1).var() - 1) < 0.1


def test_unscaled_saturates_scaled_does_not():
    dims = [2, 16, 128, 1024]
    unscaled, scaled = saturation_curve(dims), saturation_curve(dims, scale="sqrt_d")
    assert (np.diff(unscaled.entropy) < 0).all() and (np.diff(unscaled.max_weight) > 0).all()
    assert unscaled.max_weight[-1] > 0.9 and unscaled.jacobian_norm[-1] < 0.5 * scaled.jacobian_norm[-1]
    assert np.ptp(scaled.entropy) < 0.2  # scaled attention looks the same at every d
    assert unscaled.uniform_entropy == pytest.approx(np.log(64))


def test_deterministic():
    a, b = saturation_curve([8, 64], seed=3), saturation_curve([8, 64], seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=False))


@pytest.mark.parametrize("call, message", [
    (lambda: softmax_entropy(np.array([0.5, 0.6])), "probabilities"),
    (lambda: max_weight(np.array([-0.5, 1.5])), "probabilities"),
    (lambda: softmax_jacobian_norm(np.zeros((2, 0))), "at least one entry"),
    (lambda: random_logits(0), "d must be >= 1"),
    (lambda: saturation_curve([4, 2.5]), "d must be an integer"),
    (lambda: random_logits(4, scale=-1), "scale must be"),
    (lambda: query_gradient_norm(np.full(4, 0.25), np.zeros((3, 2))), "keys must be"),
    (lambda: query_gradient_norm(np.full(4, 0.25), np.zeros((4, 2)), multiplier=np.inf), "multiplier must be"),
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_softmax_rows_sum_to_one():
    np.testing.assert_allclose(softmax(random_logits(256)).sum(-1), 1.0)


def test_row_jacobians_match_the_closed_forms_and_the_curve_can_use_them():
    from t5lesson.saturation import query_gradient_norm, row_jacobians, saturation_curve, softmax_jacobian_norm

    rng = np.random.default_rng(0)
    q, keys = rng.standard_normal(8), rng.standard_normal((5, 8))
    dp_ds, dp_dq = row_jacobians(q, keys, 0.5)
    p = softmax(0.5 * keys @ q)
    np.testing.assert_allclose(dp_ds, np.diag(p) - np.outer(p, p))
    eps = 1e-6  # dp/dq by finite differences
    numeric = np.stack([(softmax(0.5 * keys @ (q + eps * e)) - softmax(0.5 * keys @ (q - eps * e))) / (2 * eps)
                        for e in np.eye(8)], axis=1)
    np.testing.assert_allclose(dp_dq, numeric, atol=1e-8)
    assert np.linalg.norm(dp_ds) == pytest.approx(float(softmax_jacobian_norm(p)))
    assert np.linalg.norm(dp_dq) == pytest.approx(float(query_gradient_norm(p, keys, 0.5)))
    # the curve measured one row at a time with row_jacobians (d above and below n_keys) equals the closed forms
    for scale in (1.0, "sqrt_d"):
        closed = saturation_curve((4, 64), scale, n_queries=16, n_keys=8)
        per_row = saturation_curve((4, 64), scale, n_queries=16, n_keys=8, jacobians=row_jacobians)
        np.testing.assert_allclose(per_row.jacobian_norm, closed.jacobian_norm, rtol=1e-9)
        np.testing.assert_allclose(per_row.query_gradient_norm, closed.query_gradient_norm, rtol=1e-9)
    with pytest.raises(ArgumentError, match="keys \\[n_keys, d\\]"):
        row_jacobians(q, keys[:, :3])
    with pytest.raises(ArgumentError, match="jacobians must be a function"):
        saturation_curve((4,), jacobians=3)
