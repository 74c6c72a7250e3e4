"""Saturation statistics: closed forms checked against autograd, and the trends the lessons state."""
import numpy as np
import pytest
import torch

from t5lesson import (
    ArgumentError,
    max_weight,
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


def test_extremes():
    uniform, onehot = np.full(8, 1 / 8), np.eye(8)[3]
    assert np.isclose(softmax_entropy(uniform), np.log(8)) and softmax_entropy(onehot) == 0
    assert max_weight(uniform) == 1 / 8 and max_weight(onehot) == 1
    assert softmax_jacobian_norm(onehot) == 0


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
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_softmax_rows_sum_to_one():
    np.testing.assert_allclose(softmax(random_logits(256)).sum(-1), 1.0)
