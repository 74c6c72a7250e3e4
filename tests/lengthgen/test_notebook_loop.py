"""Lesson 5 writes its training loop out in the notebook; the package's `train` must be those same lines.

The stored runs of lesson 5b and the explorer come from `train`, so if the notebook's loop and
`train` drifted apart, the stored numbers would no longer be what the lesson's loop makes.
"""
import json
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

import t5lesson.lengthgen as lengthgen
from t5lesson import ArgumentError
from t5lesson.common.determinism import one_thread_forked_rng
from t5lesson.lengthgen import Config, Results, evaluate, record, refill, train

LESSON = Path(__file__).resolve().parents[2] / "notebooks" / "05_length_generalisation.ipynb"
SMALL = Config(steps=12, warmup=3, batch=4, eval_lens=(64, 128), eval_batch=2)


def notebook_loop():
    """The notebook's `train_copy_k`, defined from the lesson's own cell."""
    cells = ["".join(c["source"]) for c in json.loads(LESSON.read_text())["cells"] if c["cell_type"] == "code"]
    (source,) = [c for c in cells if c.lstrip().startswith("def train_copy_k(")]
    namespace = {name: getattr(lengthgen, name) for name in
                 ("IGNORE", "new_model", "new_optimizer", "training_batches", "training_step",
                  "warmup_cosine_schedule")}
    namespace.update(F=F, one_thread_forked_rng=one_thread_forked_rng, config=SMALL)
    exec(source, namespace)  # noqa: S102  (the lesson's own code)
    return namespace["train_copy_k"]


@pytest.mark.parametrize("scheme", ["t5", "per-offset-A"])
def test_notebook_loop_gives_the_weights_of_train(scheme):
    in_notebook = notebook_loop()(scheme, seeds=(0, 1), config=SMALL)
    in_package = train(scheme, "copy-k", (0, 1), SMALL)
    a, b = dict(in_notebook.named_parameters()), dict(in_package.named_parameters())
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    start = train(scheme, "copy-k", (0, 1), Config(steps=1, warmup=3, batch=4))
    assert not torch.equal(start.q, in_package.q)  # training moved the weights: the comparison means something


def test_refill_equals_training_the_other_filling():
    """Model A clipped and Model A never-trained train identically; refill swaps only the unseen rule."""
    trained_a = train("per-offset-A", "copy-k", (0, 1), SMALL)
    trained_0 = train("per-offset-0", "copy-k", (0, 1), SMALL)
    assert evaluate(refill(trained_a, "per-offset-0"), "copy-k", [64, 128]) == evaluate(trained_0, "copy-k", [64, 128])
    assert trained_a.position.scheme.name == "per-offset-A"  # the original is untouched
    results = record(Results(), "per-offset-0", "copy-k", refill(trained_a, "per-offset-0"), SMALL)
    assert len(results.rows) == 2 * 2 and results.labels["per-offset-0"].startswith("per-offset")
    assert (results.biases[("per-offset-0", "copy-k", 0)][:, 64:] == 0).all()


def test_refill_and_record_check_their_arguments():
    model = train("t5", "copy-k", 0, Config(steps=1, warmup=0, batch=2))
    with pytest.raises(ArgumentError, match="two per-offset schemes"):
        refill(model, "per-offset-0")
    with pytest.raises(ArgumentError, match="TinyAttentionModel"):
        refill("model", "per-offset-0")
    with pytest.raises(ArgumentError, match="results must be a lengthgen Results"):
        record({}, "t5", "copy-k", model)
