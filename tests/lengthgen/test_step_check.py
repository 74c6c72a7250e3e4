"""Lesson 5's your-turn check tells the course's training step from the usual slips, at the right update."""
from torch.nn import functional as F

from t5lesson.lengthgen import IGNORE, check_training_step, training_step


def _per_position(logits, targets):
    return F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=IGNORE,
                           reduction="none").view(targets.shape)


def _step(mean_over_all=False, zero_grad=True, schedule_step=True, returns=True, mean_of_models=False):
    def step(model, optimizer, schedule, tokens, targets):
        logits, _ = model(tokens)
        per_position = _per_position(logits, targets)
        if mean_over_all:
            loss = per_position.sum() / (targets != IGNORE).sum()
        elif mean_of_models:
            loss = (per_position.sum((1, 2)) / (targets != IGNORE).sum((1, 2))).mean()
        else:
            loss = (per_position.sum((1, 2)) / (targets != IGNORE).sum((1, 2))).sum()
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if schedule_step:
            schedule.step()
        return loss if returns else None
    return step


def test_the_course_step_and_a_right_rewrite_match():
    assert check_training_step(training_step, training_step) is None
    assert check_training_step(_step(), training_step) is None  # another summation order, within tolerance
    # a constant factor on the loss takes the same AdamW steps (step_check's docstring): accepted
    assert check_training_step(_step(mean_of_models=True), training_step) is None


def test_each_slip_is_named_at_the_update_where_it_shows():
    said = check_training_step(_step(mean_over_all=True), training_step)  # the same as the sum on copy-k
    assert said.startswith("three trained models") and "update 2: the weights" in said and "the loss is" in said, said
    assert "update 2: the weights" in check_training_step(_step(zero_grad=False), training_step)
    assert "update 1: the learning rate" in check_training_step(_step(schedule_step=False), training_step)
    assert "not the loss" in check_training_step(_step(returns=False), training_step)
