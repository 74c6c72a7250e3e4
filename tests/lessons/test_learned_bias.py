"""The tiny lag model of lesson 4: correct targets, deterministic training, it learns the task."""
import numpy as np
import pytest
import torch

from t5lesson import ArgumentError
from t5lesson.lessons.learned_bias import LagModel, lag_batch, train_tiny_model


def test_targets_are_the_tokens_lag_places_back():
    tokens, targets = lag_batch(3, 10, 16, (1, 4), torch.Generator().manual_seed(0))
    assert tokens.shape == (3, 10) and targets.shape == (2, 3, 10)
    assert (targets[0, :, 0] == -100).all() and (targets[0, :, 1:] == tokens[:, :-1]).all()
    assert (targets[1, :, :4] == -100).all() and (targets[1, :, 4:] == tokens[:, :-4]).all()


def test_training_is_deterministic_and_learns():
    a = train_tiny_model(steps=60)
    b = train_tiny_model(steps=60)
    np.testing.assert_array_equal(a.table, b.table)
    assert a.losses == b.losses and a.table.shape == (16, 4)
    assert a.losses[-1] < 0.5 * a.losses[0] and min(a.accuracy) > 0.95
    # The bias is the only position signal: the learned table must prefer offsets -1 and -4.
    assert set(a.table.argmax(0)) == {1, 4}


def test_model_shapes():
    model = LagModel(num_lags=3)
    logits, weights = model(torch.zeros(2, 8, dtype=torch.long))
    assert logits.shape == (3, 2, 8, 16) and weights.shape == (2, 4, 8, 8)
    assert (model.bias_table == 0).all()  # the bias starts at zero


@pytest.mark.parametrize("kwargs, message", [
    (dict(lags=()), "lags must be a non-empty tuple"),
    (dict(lags=(1, 1)), "lags must be distinct"),
    (dict(lags=(0,)), "each lag must be >= 1"),
    (dict(lags=(40,)), "each lag must be <= 31"),
    (dict(steps=0), "steps must be >= 1"),
    (dict(lr=2.0), "lr must be a number in"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        train_tiny_model(**kwargs)
