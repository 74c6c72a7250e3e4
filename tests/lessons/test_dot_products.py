"""Lesson 1's helpers: q.k for every prefix length, the normal curve, the two scores, one weight."""
import math

import numpy as np
import pytest

from t5lesson import ArgumentError, attention_scores, softmax
from t5lesson.lessons.dot_products import normal_pdf, prefix_dot_products, scores_standard, scores_t5, softmax_weight


def test_prefix_dot_products_are_dot_products_of_the_first_d_entries():
    table = prefix_dot_products(5, 40, seed=3)
    rng = np.random.default_rng(3)  # the same draws, in the same order
    q = rng.standard_normal((5, 40), dtype=np.float32)
    k = rng.standard_normal((5, 40), dtype=np.float32)
    assert table.shape == (5, 40) and table.dtype == np.float32
    for d in (1, 7, 40):
        np.testing.assert_allclose(table[:, d - 1], (q[:, :d] * k[:, :d]).sum(1), rtol=1e-5, atol=1e-5)


def test_prefix_dot_products_with_keys_share_one_query_per_row():
    table = prefix_dot_products(3, 16, n_keys=4, seed=1)
    rng = np.random.default_rng(1)
    q = rng.standard_normal((3, 1, 16), dtype=np.float32)
    k = rng.standard_normal((3, 4, 16), dtype=np.float32)
    assert table.shape == (3, 4, 16)
    expected = np.einsum("pd,pkd->pk", q[:, 0, :10], k[:, :, :10])
    np.testing.assert_allclose(table[:, :, 9], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("d", [4, 64, 512])
def test_variance_of_q_dot_k_is_d(d):
    values = prefix_dot_products(20000, d, seed=0)[:, d - 1].astype(np.float64)
    # The sample variance of 20000 draws is within about 3 standard errors (sqrt(2/n) relative
    # for a normal, a little more here) of the truth.
    assert values.var() == pytest.approx(d, rel=0.05)


def test_normal_pdf_is_a_density_with_the_given_spread():
    x = np.linspace(-80, 80, 20001)
    for std in (1.0, 8.0):
        p = normal_pdf(x, std)
        assert np.trapezoid(p, x) == pytest.approx(1.0, abs=1e-6)
        assert np.trapezoid(p * x * x, x) == pytest.approx(std * std, rel=1e-4)
    with pytest.raises(ArgumentError, match="std must be a positive finite number"):
        normal_pdf(x, 0)


def test_the_two_scores_match_attention_scores():
    rng = np.random.default_rng(0)
    q, k, u = rng.standard_normal(8), rng.standard_normal((5, 8)), rng.standard_normal(5)
    np.testing.assert_allclose(scores_standard(q, k), attention_scores(q[None], k, scale="sqrt_d")[0])
    np.testing.assert_allclose(scores_t5(q, k, u), attention_scores(q[None], k, bias=u[None])[0])
    assert scores_t5(q, k, np.zeros(5)) == pytest.approx(math.sqrt(8) * scores_standard(q, k))


@pytest.mark.parametrize("call, message", [
    (lambda: scores_standard(np.ones(3), np.ones((2, 4))), "q must have shape"),
    (lambda: scores_t5(np.ones(3), np.ones((2, 3)), np.ones(3)), "bias must have one entry per key"),
    (lambda: softmax_weight([1.0, 2.0], 2), "index must be <= 1"),
    (lambda: softmax_weight([1.0, np.inf], 0), "finite"),
    (lambda: prefix_dot_products(0, 4), "n_pairs must be >= 1"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


def test_softmax_weight():
    assert softmax_weight([2.0, 0.0, 0.0], 0) == pytest.approx(math.exp(2) / (math.exp(2) + 2))
    row = np.array([3.0, -1.0, 0.5, 0.5])
    assert [softmax_weight(row, j) for j in range(4)] == pytest.approx(list(softmax(row)))


def test_row_jacobians_cases_reach_every_path():
    """Multipliers other than 1 and 1/sqrt(d), negative too; one key; logits beyond exp's range in float64."""
    from t5lesson.lessons.dot_products import jacobian_cases

    cases = jacobian_cases()
    multipliers = {round(m, 6) for _, _, m in cases}
    dims = {q.shape[0] for q, _, _ in cases}
    assert any(m not in (1.0, round(1 / math.sqrt(q.shape[0]), 6)) and m > 0 for q, _, m in cases)
    assert any(m < 0 for m in multipliers) and any(k.shape[0] == 1 for _, k, _ in cases)
    assert {d % 2 for d in dims} == {0, 1} and {k.shape[0] % 2 for _, k, _ in cases} == {0, 1}
    assert max(float((m * k @ q).max()) for q, k, m in cases) > 710  # np.exp overflows above about 709.8
