"""The relative bias equals transformers' compute_bias, with and without a decoding cache."""
import itertools

import numpy as np
import pytest
import torch

from t5lesson import ArgumentError, RelativePositionBias, relative_bias
from t5lesson.reference import reference_bias

SHAPES = [(1, 1, 0), (1, 9, 0), (9, 1, 0), (5, 7, 0), (7, 5, 0), (64, 64, 0), (200, 200, 0), (3, 300, 0),
          (1, 20, 19), (1, 200, 199), (4, 40, 36), (2, 10, 50), (130, 140, 10)]
CONFIGS = [(True, 32, 128), (False, 32, 128), (True, 8, 20), (False, 16, 33), (True, 33, 100), (False, 2, 2)]


@pytest.mark.parametrize("config", CONFIGS)
def test_matches_compute_bias_numpy_and_torch(config):
    bidirectional, num_buckets, max_distance = config
    table = torch.randn(num_buckets, 3)
    for q_len, k_len, offset in SHAPES:
        kw = dict(bidirectional=bidirectional, max_distance=max_distance, query_offset=offset)
        expected = reference_bias(table, q_len, k_len, **kw)[0]
        ours_t = relative_bias(table, q_len, k_len, **kw)
        ours_n = relative_bias(table.numpy(), q_len, k_len, **kw)
        assert torch.equal(ours_t, expected), (config, q_len, k_len, offset)
        np.testing.assert_array_equal(ours_n, expected.numpy())
        assert ours_t.is_contiguous() and ours_n.flags.c_contiguous


def test_cached_rows_are_last_rows_of_full_bias():
    table = torch.randn(32, 4)
    full = relative_bias(table, 30, 30, bidirectional=False)
    for past in range(30):
        step = relative_bias(table, 1, past + 1, bidirectional=False, query_offset=past)
        assert torch.equal(step[:, 0], full[:, past, : past + 1])


def test_toeplitz():
    bias = relative_bias(np.random.randn(32, 2), 50, 70)
    for h, d in itertools.product(range(2), range(-49, 70)):
        assert np.unique(np.diagonal(bias[h], offset=d)).size == 1


def test_module_shape_gradient_and_reference():
    module = RelativePositionBias(4, d_model=16, bidirectional=False)
    out = module(6, 9, query_offset=3)
    assert out.shape == (1, 4, 6, 9)
    assert torch.equal(out, reference_bias(module.table.detach(), 6, 9, bidirectional=False, query_offset=3))
    out.sum().backward()
    grad = module.table.grad
    # every (query, key) pair sends its gradient to exactly one bucket: 6 * 9 per head
    assert torch.equal(grad.sum(0), torch.full((4,), 54.0))


def test_initialisations():
    torch.manual_seed(0)
    normal = RelativePositionBias(64, num_buckets=128, d_model=512).table.detach()
    assert abs(normal.std().item() - 512 ** -0.5) < 0.002
    glorot = RelativePositionBias(64, num_buckets=128, init="glorot").table.detach()
    bound = (6 / (128 + 64)) ** 0.5
    assert glorot.abs().max().item() <= bound and glorot.abs().max().item() > 0.95 * bound
    assert RelativePositionBias(2, init="zeros").table.abs().sum().item() == 0


@pytest.mark.parametrize("call, message", [
    (lambda: relative_bias(np.zeros((32,)), 3, 3), r"shape \[num_buckets, num_heads\]"),
    (lambda: relative_bias([[0.0]], 3, 3), "table must be a NumPy array or torch tensor"),
    (lambda: relative_bias(np.zeros((32, 2)), 0, 3), "q_len must be >= 1"),
    (lambda: relative_bias(np.zeros((32, 2)), 3, 2.5), "k_len must be an integer"),
    (lambda: relative_bias(np.zeros((32, 2)), 3, 3, query_offset=-1), "query_offset must be >= 0"),
    (lambda: relative_bias(np.zeros((32, 2)), 3, 3, max_distance=4), "max_distance must be > max_exact = 8"),
    (lambda: RelativePositionBias(4), 'init="normal" needs d_model'),
    (lambda: RelativePositionBias(4, init="xavier"), "init must be"),
    (lambda: RelativePositionBias(0, init="zeros"), "num_heads must be >= 1"),
])
def test_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()
