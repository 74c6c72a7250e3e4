"""Lesson 5's your-turn check: the learner's training step against the course's, over a few updates.

`check_training_step(learner, reference)` builds the same small pair of models twice (seeds 0
and 1, T5 buckets, copy-k, batches of 4), runs a few updates with each step function on the same
batches, and compares after every update the loss the step returned, the learning rate the
schedule reached and every weight. It returns None when the two agree, or one sentence saying
at which update what differs first, with the likely cause where one is likely. A few updates
are enough to tell apart the usual slips: gradients left to accumulate show at the second
update, a schedule never stepped at the second, a loss averaged over both models at the first.
"""
from __future__ import annotations

import torch

from ..lessons.determinism import one_thread_forked_rng
from .run import Config, new_model, new_optimizer, training_batches, warmup_cosine_schedule

__all__ = ["check_training_step", "TRAINING_STEP_HINTS", "CHECK_CONFIG", "CHECK_UPDATES"]

CHECK_CONFIG = Config(steps=8, warmup=2, batch=4)  # small and quick; the warm-up makes every step's rate differ
CHECK_UPDATES = 4
_TOLERANCE = 1e-5

TRAINING_STEP_HINTS = (
    "model(tokens) gives the logits; per_position_loss(logits, targets) gives a [models, batch, 64] "
    "tensor, 0 where the target is IGNORE.",
    "model m's loss is the sum of its row divided by its number of real targets, "
    "(targets[m] != IGNORE).sum(); add the models' losses (a sum, not a mean: each model then gets "
    "the gradient of its own mean loss).",
    "then optimizer.zero_grad(), loss.backward(), optimizer.step(), schedule.step(), and return loss. "
    "Without zero_grad the gradients of earlier batches pile up: the check sees it at update 2.",
)


def _trace(step, updates):
    """(loss, learning rate, weights) after each of `updates` calls of `step`, from a fresh model."""
    seeds = (0, 1)
    with one_thread_forked_rng():
        model = new_model("t5", "copy-k", seeds, CHECK_CONFIG)
        optimizer = new_optimizer(model, CHECK_CONFIG)
        schedule = warmup_cosine_schedule(optimizer, CHECK_CONFIG)
        batches = training_batches("copy-k", seeds, CHECK_CONFIG)
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


def check_training_step(learner, reference, updates=CHECK_UPDATES):
    """None when `learner` trains exactly as `reference` for `updates` updates, else where it does not."""
    ours = _trace(learner, updates)  # first: a step not written yet stops the check before any work
    theirs = _trace(reference, updates)
    for k, ((loss, lr, weights), (want_loss, want_lr, want_weights)) in enumerate(zip(ours, theirs, strict=True), 1):
        got = _as_number(loss)
        if got is None:
            return f"update {k}: the step returned {type(loss).__name__}, not the loss (a number or a 0-d tensor)"
        want = _as_number(want_loss)
        if abs(got - want) > _TOLERANCE * max(1.0, abs(want)):
            return (f"update {k}: the loss is {got:.4f}, expected {want:.4f} (each model's mean loss, "
                    f"summed over the models)")
        if abs(lr - want_lr) > 1e-12:
            return (f"update {k}: the learning rate is {lr:.2e}, expected {want_lr:.2e} "
                    f"(did the schedule take its step?)")
        for name, value in want_weights.items():
            gap = float((weights[name] - value).abs().max())
            if gap > _TOLERANCE:
                return (f"update {k}: the weights {name!r} differ by up to {gap:.1e} (one optimiser step "
                        f"per update, after clearing the old gradients?)")
    return None
