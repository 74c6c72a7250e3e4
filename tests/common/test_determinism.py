"""One thread and a forked torch RNG around every training run of the lessons, restored afterwards."""
import pytest
import torch

from t5lesson.common.determinism import one_thread_forked_rng
from t5lesson.lessons.folding import train_recall
from t5lesson.lessons.learned_bias import train_tiny_model


def test_threads_and_global_rng_are_restored_even_on_error():
    threads = torch.get_num_threads()
    before = torch.random.get_rng_state()
    with pytest.raises(RuntimeError), one_thread_forked_rng(seed=5):
        assert torch.get_num_threads() == 1
        torch.rand(3)
        raise RuntimeError
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.random.get_rng_state(), before)


def test_seed_gives_the_same_stream():
    with one_thread_forked_rng(seed=7):
        first = torch.rand(4)
    with one_thread_forked_rng(seed=7):
        second = torch.rand(4)
    assert torch.equal(first, second)


@pytest.mark.parametrize("train", [lambda: train_tiny_model(steps=2), lambda: train_recall("folded", steps=2)])
def test_training_leaves_the_global_rng_alone(train):
    before = torch.random.get_rng_state()
    train()
    assert torch.equal(torch.random.get_rng_state(), before)
