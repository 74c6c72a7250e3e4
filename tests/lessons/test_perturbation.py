"""The perturbation switch (T5LESSON_PERTURB) and the robust description of training runs."""
import numpy as np
import pytest
import torch

from t5lesson import ArgumentError
from t5lesson.lessons.folding import TrainingTrace, describe_runs, reached_by
from t5lesson.perturbation import perturb_, perturbation
from t5lesson.reference import reference_bucket


def test_unset_means_no_change(monkeypatch):
    monkeypatch.delenv("T5LESSON_PERTURB", raising=False)
    assert perturbation() == (0.0, 0)
    layer = torch.nn.Linear(4, 4)
    before = layer.weight.detach().clone()
    assert perturb_(layer) is layer and torch.equal(layer.weight, before)


def test_nudge_is_tiny_seeded_and_leaves_the_global_rng_alone(monkeypatch):
    monkeypatch.setenv("T5LESSON_PERTURB", "1e-6")
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 64)
    before = layer.weight.detach().clone()
    state = torch.get_rng_state()
    perturb_(layer)
    assert torch.equal(torch.get_rng_state(), state)
    relative = ((layer.weight - before) / before).abs()
    assert 0 < relative.max().item() < 1e-5 and (relative > 0).float().mean() > 0.9
    again = torch.nn.Linear(64, 64)
    with torch.no_grad():
        again.weight.copy_(before)
    monkeypatch.setenv("T5LESSON_PERTURB_SEED", "1")
    perturb_(again)
    assert not torch.equal(again.weight, layer.weight)  # another seed, another nudge


@pytest.mark.parametrize("value, message", [("abc", "must be a number"), ("-1e-6", "in \\[0, 1\\)"),
                                            ("nan", "in \\[0, 1\\)"), ("2", "in \\[0, 1\\)")])
def test_bad_values_get_a_clear_error(monkeypatch, value, message):
    monkeypatch.setenv("T5LESSON_PERTURB", value)
    with pytest.raises(ArgumentError, match=message):
        perturbation()


def test_reference_stands_in_for_a_cpu_that_lands_below_ties(monkeypatch):
    offsets = np.array([-17, -16, -15, 16, 32, -64, 100])
    honest = reference_bucket(offsets)
    monkeypatch.setenv("T5LESSON_PERTURB", "1e-6")
    below = reference_bucket(offsets)
    np.testing.assert_array_equal(below, np.where(np.isin(offsets, [-64, -16, 16, 32]), [10, 9, 9, 25, 27, 13, 31],
                                                  honest))


def fake_trace(final_std, final_max, accuracy_steps, steps=200):
    step = np.arange(0, steps + 1, 20)
    accuracy = np.where(step >= accuracy_steps, 1.0, 0.5) if accuracy_steps is not None else np.full(len(step), 0.5)
    return TrainingTrace("folded", "adam", 0.003, step, np.linspace(1.0, final_std, len(step)),
                         np.linspace(3.0, final_max, len(step)), np.zeros(len(step)), accuracy)


def test_runs_are_described_in_bands_and_milestones():
    assert reached_by(fake_trace(2, 10, 40)) == 60 and reached_by(fake_trace(2, 10, 80)) == 100
    assert reached_by(fake_trace(2, 10, 180)) == 200 and reached_by(fake_trace(2, 10, None)) is None
    table = describe_runs([fake_trace(2.6, 10.9, 60), fake_trace(122.0, 798.0, None)]).splitlines()
    assert table[1].split() == ["adam", "0.003", "folded", "1.00", "->", "under", "5", "under", "20",
                                "by", "step", "60"]
    assert "over 30" in table[2] and "over 200" in table[2] and table[2].endswith("not in 200 steps")
    assert max(len(line) for line in table) < 90
    with pytest.raises(ArgumentError, match="TrainingTraces"):
        describe_runs([1.0])
