"""Lesson 2's helpers: the folded initialisation, the exact identity, and the training demo."""
import math

import numpy as np
import pytest
import torch

from t5lesson import ArgumentError, attention
from t5lesson.common.determinism import one_thread_forked_rng
from t5lesson.lessons.folding import (
    RecallAttention,
    RecallTask,
    first_step_at,
    fold_query_scale,
    initial_logit_std,
    make_optimizer,
    make_trace,
    measure,
    run_table,
    significant,
    train_recall,
)


@pytest.mark.parametrize("d_kv", [8, 64, 256])
def test_folded_init_gives_unit_logits_and_unfolded_gives_sqrt_d(d_kv):
    assert initial_logit_std(256, d_kv) == pytest.approx(1.0, rel=0.1)
    assert initial_logit_std(256, d_kv, folded=False) == pytest.approx(math.sqrt(d_kv), rel=0.1)


def test_initial_logit_std_leaves_the_global_random_state_alone():
    before = torch.get_rng_state()
    initial_logit_std(32, 16)
    assert torch.equal(before, torch.get_rng_state())


def _projections(d_kv, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((10, 32))
    return x, rng.standard_normal((32, d_kv)), rng.standard_normal((32, d_kv)), rng.standard_normal((32, d_kv))


def test_folding_is_exact_when_sqrt_d_is_a_power_of_two():
    x, w_q, w_k, w_v = _projections(64)
    t5 = attention(x @ fold_query_scale(w_q, 64), x @ w_k, x @ w_v, scale=1.0)
    standard = attention(x @ w_q, x @ w_k, x @ w_v, scale="sqrt_d")
    assert np.array_equal(t5, standard)


def test_folding_agrees_to_rounding_otherwise_and_works_on_tensors():
    x, w_q, w_k, w_v = _projections(48)
    t5 = attention(x @ fold_query_scale(w_q, 48), x @ w_k, x @ w_v)
    np.testing.assert_allclose(t5, attention(x @ w_q, x @ w_k, x @ w_v, scale="sqrt_d"), rtol=1e-12, atol=1e-12)
    w = torch.ones(3, 4)
    assert torch.equal(fold_query_scale(w, 16), torch.full((3, 4), 0.25))


def test_recall_task_answer_is_the_value_stored_under_the_query_key():
    task = RecallTask(n_symbols=8, n_memory=5, d_model=16, seed=0)
    query, memory, answer = task.batch(4, torch.Generator().manual_seed(0))
    assert query.shape == (4, 16) and memory.shape == (4, 5, 16) and answer.shape == (4,)
    for b in range(4):
        # Exactly one slot holds the query's key; its value embedding is the answer's.
        residual = memory[b] * math.sqrt(2) - query[b]
        match = [s for s in range(5) if torch.allclose(residual[s], task.value_embedding[answer[b]], atol=1e-5)]
        assert len(match) == 1


def test_variants_start_as_described():
    torch.manual_seed(0)
    folded = RecallAttention(16, 16, 8, "folded")
    torch.manual_seed(0)
    scaled = RecallAttention(16, 16, 8, "scaled")
    torch.manual_seed(0)
    unfolded = RecallAttention(16, 16, 8, "unfolded")
    assert torch.allclose(folded.q.weight * 4, scaled.q.weight) and torch.equal(scaled.q.weight, unfolded.q.weight)
    assert (folded.multiplier, scaled.multiplier, unfolded.multiplier) == (1.0, 0.25, 1.0)


def test_training_is_deterministic_and_folded_equals_scaled_only_under_adafactor():
    run = dict(steps=40, eval_every=20)
    a = train_recall("folded", "adafactor", **run)
    assert np.array_equal(a.logit_std, train_recall("folded", "adafactor", **run).logit_std)
    b = train_recall("scaled", "adafactor", **run)
    np.testing.assert_allclose(a.logit_std, b.logit_std, rtol=1e-4)
    np.testing.assert_allclose(a.entropy, b.entropy, rtol=1e-3, atol=1e-6)
    c, d = train_recall("folded", "adam", **run), train_recall("scaled", "adam", **run)
    assert c.logit_std[0] == pytest.approx(d.logit_std[0], rel=1e-5)  # same function at step 0
    assert c.logit_std[-1] > 1.3 * d.logit_std[-1]  # the folded query moves sqrt(d_kv) times faster
    assert list(a.step) == [0, 20, 40] and a.optimizer == "adafactor" and a.lr == 1e-2


def test_unfolded_starts_saturated():
    trace = train_recall("unfolded", steps=0)
    assert trace.logit_std[0] == pytest.approx(8.0, rel=0.15)  # sqrt(d_kv = 64)
    assert trace.entropy[0] < 0.3 * math.log(16)


def test_the_lessons_loop_from_the_plumbing_is_train_recall():
    # Lesson 2 writes this loop in a cell; it must give what train_recall gives.
    task = RecallTask(seed=1)
    with one_thread_forked_rng(0):
        model = RecallAttention(64, 64, 16, "folded")
        opt = make_optimizer("adam", model.parameters(), 3e-3)
        batches, held_out = torch.Generator().manual_seed(2), task.batch(256, torch.Generator().manual_seed(3))
        log = []
        for step in range(21):
            if step % 10 == 0:
                log.append(measure(model, held_out, step))
            if step == 20:
                break
            query, memory, answer = task.batch(64, batches)
            loss = torch.nn.functional.cross_entropy(model(query, memory)[0], answer)
            opt.zero_grad()
            loss.backward()
            opt.step()
    mine, theirs = make_trace("folded", "adam", 3e-3, log), train_recall("folded", "adam", steps=20, eval_every=10)
    for a, b in zip(mine, theirs, strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_step_zero_loss_is_near_a_uniform_guess_and_the_table_prints_numbers():
    traces = [train_recall(v, "adam", steps=50, eval_every=10) for v in ("folded", "unfolded")]
    assert traces[0].loss[0] == pytest.approx(math.log(16), abs=0.2)  # the read-out knows nothing yet
    assert traces[1].loss[0] > traces[0].loss[0]  # saturated attention: larger random read-out logits
    table = run_table(traces).splitlines()
    assert table[0].split()[-2:] == ["95%", "accuracy"]
    folded = table[1].split()
    assert folded[:3] == ["adam", "0.003", "folded"]
    assert folded[3] == f"{traces[0].loss[0]:.2f}" and folded[4] == "1.00"
    assert folded[5] == significant(traces[0].logit_std[5])
    assert " ".join(folded[6:]) == (f"at step {first_step_at(traces[0])}" if first_step_at(traces[0]) else
                                    "not in 50 steps")
    with pytest.raises(ArgumentError, match="step 70 was not evaluated"):
        run_table(traces, at=70)
    with pytest.raises(ArgumentError, match="TrainingTraces made by"):
        run_table([1.0])


def test_significant_figures_and_first_step():
    assert [significant(x) for x in (8.687, 12.45, 0.04321, 31.8, 5.9)] == ["8.7", "12", "0.043", "32", "5.9"]
    assert significant(0.0) == "0" and significant(123.0, 1) == "100"
    trace = train_recall("scaled", "adam", steps=0)
    assert first_step_at(trace, 0.0) == 0 and first_step_at(trace, 1.1) is None


@pytest.mark.parametrize("call, message", [
    (lambda: make_trace("folded", "adam", 1e-3, []), "non-empty list of the 6-tuples"),
    (lambda: make_optimizer("sgd", [], 1e-3), "optimizer must be one of"),
    (lambda: make_optimizer("adam", [], -1.0), "lr must be a positive number"),
    (lambda: train_recall("sideways"), "variant must be one of"),
    (lambda: train_recall("folded", "sgd"), "optimizer must be one of"),
    (lambda: train_recall("folded", lr=0), "lr must be a positive number"),
    (lambda: train_recall("folded", steps=-1), "steps must be >= 0"),
    (lambda: RecallTask(n_symbols=4, n_memory=5), "n_memory must be <= 4"),
    (lambda: initial_logit_std(64, 0), "d_kv must be >= 1"),
    (lambda: initial_logit_std(64, 8, folded=1), "folded must be True or False"),
    (lambda: fold_query_scale([1.0], 4), "w_q must be a NumPy array or a torch tensor"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


# --- lesson 2's your-turn step, and what the fast (diverging) run prints ---

from t5lesson.lessons.folding import (  # noqa: E402
    STEP_SETTINGS,
    first_step_above,
    new_head,
    runaway_table,
    step_check,
    times_band,
    train_step,
)


def test_train_step_is_the_step_train_recall_takes():
    task = RecallTask(seed=1)
    with one_thread_forked_rng(0):
        model = new_head("folded", task)
        opt = make_optimizer("adam", model.parameters(), 3e-3)
        loss = train_step(model, opt, *task.batch(8, torch.Generator().manual_seed(2)))
    assert isinstance(loss, float) and loss == pytest.approx(math.log(16), abs=0.5)
    with pytest.raises(ArgumentError, match="task must be a RecallTask"):
        new_head("folded", task=3)


def _step_scaled_by(scale):
    """A training step whose logits q.k are multiplied by scale(model) instead of model.multiplier."""
    def step(model, opt, query, memory, answer):
        logits = torch.einsum("bd,bmd->bm", model.q(query), model.k(memory)) * scale(model)
        read = torch.einsum("bm,bmd->bd", logits.softmax(-1), model.v(memory))
        loss = torch.nn.functional.cross_entropy(model.readout(read), answer)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return step


def test_step_check_passes_the_course_step_and_says_where_a_wrong_one_differs():
    check = step_check()
    assert check(train_step, train_step) is None
    no_multiplier = _step_scaled_by(lambda model: 1.0)  # forgets the scaled head's 1/sqrt(d)

    def no_step(model, opt, query, memory, answer):
        return torch.nn.functional.cross_entropy(model(query, memory)[0], answer).item()

    assert "adam, scaled head, batch 8, update 1 of 3: the loss is" in check(no_multiplier, train_step)
    assert "after the step q.weight differs" in check(no_step, train_step)


def test_step_check_catches_a_head_size_written_in():
    """The lesson's heads all have d_kv = 64; a step that divides by 8 for the scaled head passes them."""
    check = step_check()

    divides_by_8 = _step_scaled_by(lambda model: 1 / 8 if model.multiplier != 1 else 1.0)

    lessons_heads = step_check(settings=STEP_SETTINGS[:4])
    assert lessons_heads(divides_by_8, train_step) is None
    assert "scaled head, d_kv 16" in check(divides_by_8, train_step)


def test_runaway_table_gives_milestones_and_times_band_gives_bands():
    traces = [train_recall(v, "adam", lr=1e-2, steps=20, eval_every=10) for v in ("folded", "scaled")]
    rows = runaway_table(traces).splitlines()
    assert "std > 10" in rows[0]
    assert first_step_above(traces[0], 10.0) == 10 and "   step 10  not in 20 steps" in rows[1]  # 11.2 at step 10
    assert first_step_above(traces[1], 10.0) is None and "not by 20" in rows[2]
    assert [times_band(r) for r in (1.5, 2.0, 5.9, 8.0, 20.0)] == [
        "under 2 times", "between 2 and 4 times", "between 4 and 8 times", "between 8 and 16 times", "over 16 times"]
    with pytest.raises(ArgumentError, match="ratio must be a positive finite number"):
        times_band(float("nan"))
