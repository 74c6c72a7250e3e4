"""Lesson 5's your-turn check: the learner's training step against the course's, over a few updates.

`check_training_step(learner, reference)` builds the same small side-by-side models twice, runs
a few updates with each step function on the same batches, and compares after every update the
learning rate the schedule reached and every weight. It does so in two settings (`CHECK_CASES`):
the lesson's (two models, T5 buckets, copy-k), and one away from it (three models, a per-offset
table, 37 tokens, and a different number of real targets in every sequence, as padding or
last-marker give). It returns None when the two steps train the same models, or one sentence
saying in which setting and at which update what differs first, with the likely cause.

What is compared, and why the weights and not the loss value. Each model's loss is a mean over
its real targets, and the models' losses are added so that no model's gradient depends on the
others. Any answer that multiplies that loss by a constant (a mean over the models instead of
a sum, so half the loss with two models) trains the same models under AdamW: a constant c
scales every gradient by c, so Adam's first moment by c and the square root of its second
moment by c too, and their ratio, the step, does not change, up to the eps added to the
denominator. Measured here
(lesson 5's AdamW, eps 1e-8), `per_model.mean()` moves a few weights with gradients near eps by
up to 2e-4 in the first update and matches every other weight to 1e-7; trained for the
lesson's 300 steps, it prints the lesson's accuracy table digit for digit. So the check builds
AdamW with eps 1e-20, where a constant factor changes no weight by more than 1e-6, and
compares the weights within 1e-5. A loss whose factor changes from batch to batch is not
equivalent: a mean over all positions, IGNORE included, or over all the models' real targets
at once, weights each batch by how many real targets it has. In the lesson's copy-k batches
that number never changes (every sequence has 3 IGNORE targets), so such a loss also trains
the same models there; the second setting, with a different number in every sequence, tells
it apart (weights apart by 3e-3 at the second update). The loss value is shown when the
weights differ, as a clue; returning the loss is checked only for being a number.
"""
from __future__ import annotations

import numpy as np
import torch

from ..common.determinism import one_thread_forked_rng
from .run import (
    Config,
    new_model,
    new_optimizer,
    per_model_loss,
    training_batches,
    training_step,
    warmup_cosine_schedule,
)
from .tasks import IGNORE

__all__ = ["check_training_step", "TRAINING_STEP_HINTS", "CHECK_CASES", "CHECK_UPDATES", "TURNS"]

# (what the setting is, scheme, seeds (one model each), config, whether real targets vary per
# sequence, how many updates the course's step makes first: trained models, norm gains no longer 1)
CHECK_CASES = (
    ("the lesson's setting (two models, T5 buckets, copy-k)", "t5", (0, 1),
     Config(steps=8, warmup=2, batch=4), False, 0),
    ("three trained models, a per-offset table, 37 tokens, a different number of real targets in "
     "every sequence", "per-offset-A", (3, 4, 5), Config(train_len=37, steps=8, warmup=2, batch=3), True, 3),
)
CHECK_UPDATES = 4  # the warm-up (2 steps) makes every update's rate differ
_EPS = 1e-20  # see the module's docstring: a constant factor on the loss then changes no step
_TOLERANCE = 1e-5

TRAINING_STEP_HINTS = (
    "what should each model's loss be, so that it trains exactly as it would alone? Some positions "
    "have no target: should they count when you average?",
    "model m's loss is its mean over its real targets: the sum of its per-position losses divided by how "
    "many of its targets are not IGNORE, a number that can change from batch to batch. Add the models' "
    "losses up. Then the four calls of any training step: clear the old gradients, backpropagate, step "
    "the optimiser, step the schedule; and return the loss.",
    "logits, _ = model(tokens); per_position = per_position_loss(logits, targets); real = (targets != "
    "IGNORE).flatten(1).sum(1); loss = (per_position.flatten(1).sum(1) / real).sum(); then "
    "optimizer.zero_grad(), loss.backward(), optimizer.step(), schedule.step(), return loss. Without "
    "zero_grad the gradients of earlier batches pile up.",
)


def _batches(seeds, config, vary):
    """The setting's batches; with `vary`, each sequence loses a different number of its last targets."""
    rng = np.random.default_rng(7)
    for tokens, targets in training_batches("copy-k", seeds, config):
        if vary:
            models, batch, length = targets.shape
            cut = torch.as_tensor(rng.integers(0, length // 2, size=(models, batch, 1)))
            targets = targets.masked_fill(torch.arange(length) >= length - cut, IGNORE)
        yield tokens, targets


def _optimiser(model, config):
    optimizer = new_optimizer(model, config)
    for group in optimizer.param_groups:
        group["eps"] = _EPS
    return optimizer, warmup_cosine_schedule(optimizer, config)


def _trace(step, setting, updates):
    """(loss, learning rate, weights) after each of `updates` calls of `step`, from the setting's
    models: fresh, or trained by the course's step first (then a fresh optimiser and schedule)."""
    _, scheme, seeds, config, vary, warm = setting
    with one_thread_forked_rng():
        model = new_model(scheme, "copy-k", seeds, config)
        batches = _batches(seeds, config, vary)
        optimizer, schedule = _optimiser(model, config)
        for _ in range(warm):
            training_step(model, optimizer, schedule, *next(batches))
        optimizer, schedule = _optimiser(model, config)
        model.zero_grad(set_to_none=True)
        trace = []
        for _ in range(updates):
            tokens, targets = next(batches)
            loss = step(model, optimizer, schedule, tokens, targets)
            weights = {name: p.detach().clone() for name, p in model.named_parameters()}
            trace.append((loss, optimizer.param_groups[0]["lr"], weights))
    return trace


def _as_number(loss):
    if isinstance(loss, torch.Tensor):
        return float(loss.detach()) if loss.numel() == 1 else None
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return float(loss)
    return None


def _first_difference(ours, theirs) -> str | None:
    """Where two traces part first: 'update k: what differs (the likely cause)', or None."""
    for k, ((loss, lr, weights), (want_loss, want_lr, want_weights)) in enumerate(zip(ours, theirs, strict=True), 1):
        got = _as_number(loss)
        if got is None:
            return f"update {k}: the step returned {type(loss).__name__}, not the loss (a number or a 0-d tensor)"
        if abs(lr - want_lr) > 1e-12:
            return (f"update {k}: the learning rate is {lr:.2e}, expected {want_lr:.2e} "
                    f"(did the schedule take its step?)")
        gaps = {name: float((weights[name] - value).abs().max()) for name, value in want_weights.items()}
        name = max(gaps, key=lambda n: gaps[n])
        if gaps[name] > _TOLERANCE:
            return f"update {k}: the weights {name!r} differ by up to {gaps[name]:.1e}" + _cause(got, want_loss)
    return None


def _cause(got, want_loss) -> str:
    want = _as_number(want_loss)
    assert want is not None, "the reference step returns its loss"
    if abs(got - want) > _TOLERANCE * max(1.0, abs(want)):
        return (f"; the loss is {got:.4f}, expected {want:.4f} (each model's mean over its real targets, "
                f"summed over the models)")
    return " with the same loss (one optimiser step per update, after clearing the old gradients?)"


def check_training_step(learner, reference, updates=CHECK_UPDATES):
    """None when `learner` trains the same models as `reference` in every setting of CHECK_CASES,
    else in which setting and at which update they part."""
    from ..lessons.your_turn import case  # here: your_turn names this module in its table

    for setting in CHECK_CASES:
        with case(f"{updates} updates in {setting[0]}"):
            ours = _trace(learner, setting, updates)  # first: a step not written yet stops before any work
        theirs = _trace(reference, setting, updates)
        problem = _first_difference(ours, theirs)
        if problem:
            return f"{setting[0]}, {problem}"
    return None


def _training_step_turn():
    from ..lessons.your_turn import Turn

    return Turn(reference=training_step, check=check_training_step, hints=TRAINING_STEP_HINTS,
                course_versions=(per_model_loss,))


TURNS = {"training_step": _training_step_turn()}
