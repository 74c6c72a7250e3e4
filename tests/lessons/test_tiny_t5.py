"""Lesson 7's plumbing: the reversal task, the name map to transformers, the bands, the figure, the layer it runs on."""

import numpy as np
import pytest
import torch

from t5lesson import ArgumentError
from t5lesson.common.figures import alt_text
from t5lesson.lessons.tiny_t5 import (
    CONFIG,
    EOS,
    PAD,
    StepModel,
    accuracy_band,
    from_text,
    greedy,
    learned_tables_figure,
    loss_milestones,
    padded,
    random_model,
    reverse_batch,
    t5_config,
    tables_of,
    to_text,
    to_transformers,
    transformers_name,
)


def our_names(layers=CONFIG["layers"]):
    names = ["shared.weight", "encoder_norm.weight", "decoder_norm.weight"]
    for stack in ("encoder", "decoder"):
        names.append(f"{stack}.0.self_attention.relative_attention_bias.weight")
        for i in range(layers):
            names += [f"{stack}.{i}.self_attention.{p}.weight" for p in "qkvo"]
            names += [f"{stack}.{i}.norm_self.weight", f"{stack}.{i}.ff.wi.weight", f"{stack}.{i}.ff.wo.weight",
                      f"{stack}.{i}.norm_ff.weight"]
            if stack == "decoder":
                names += [f"decoder.{i}.cross.{p}.weight" for p in "qkvo"] + [f"decoder.{i}.norm_cross.weight"]
    return names


class StateOnly:
    """Stands in for the lesson's TinyT5: to_transformers and tables_of only read state_dict() and c."""

    def __init__(self, state):
        self._state, self.c = state, CONFIG

    def state_dict(self):
        return self._state


def reference_model(seed=0):
    from transformers import T5ForConditionalGeneration

    torch.manual_seed(seed)
    return T5ForConditionalGeneration(t5_config()).eval()


def test_reverse_batch_reverses_and_pads():
    batch = reverse_batch(32, (3, 8), torch.Generator().manual_seed(0))
    for row in range(32):
        digits = to_text(batch.input_ids[row])
        assert 3 <= len(digits) <= 8
        assert to_text(batch.labels[row].clamp(min=0)) == digits[::-1]
        n = len(digits)
        assert batch.input_ids[row, n] == EOS and batch.labels[row, n] == EOS
        assert (batch.labels[row, n + 1:] == -100).all() and (batch.input_ids[row, n + 1:] == PAD).all()
        assert batch.attention_mask[row].sum() == n + 1
        # teacher forcing: the start token, then the answer shifted right by one
        assert batch.decoder_input_ids[row, 0] == PAD
        assert torch.equal(batch.decoder_input_ids[row, 1:n + 1], batch.labels[row, :n])


def test_text_round_trip_and_bad_text():
    assert to_text(from_text("0907")[0]) == "0907"
    assert from_text("12").tolist() == [[3, 4, EOS]]
    for bad in ("", "12a", 12, "１２"):
        with pytest.raises(ArgumentError):
            from_text(bad)
    with pytest.raises(ArgumentError):
        reverse_batch(4, (5, 3))


def test_every_transformers_parameter_has_exactly_one_of_ours():
    mapped = [transformers_name(n) for n in our_names()]
    assert len(set(mapped)) == len(mapped)
    tied = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}
    assert set(mapped) == set(reference_model().state_dict()) - tied
    with pytest.raises(ArgumentError, match="no transformers parameter"):
        transformers_name("decoder.0.cross.relative_attention_bias.weight")


def test_to_transformers_copies_every_weight():
    source = reference_model(seed=1)
    theirs = source.state_dict()
    ours = {name: theirs[transformers_name(name)].clone() for name in our_names()}
    copy = to_transformers(StateOnly(ours))
    assert copy.lm_head.weight is copy.shared.weight
    batch = reverse_batch(3, (2, 6), torch.Generator().manual_seed(2))
    with torch.no_grad():
        args = dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                    decoder_input_ids=batch.decoder_input_ids)
        assert torch.equal(copy(**args).logits, source(**args).logits)
    del ours["decoder.1.cross.q.weight"]
    with pytest.raises(ArgumentError, match="missing"):
        to_transformers(StateOnly(ours))


def test_tables_of_reads_both_stacks():
    state = {name: torch.randn(16, 4) for name in our_names() if "relative_attention_bias" in name}
    tables = tables_of(StateOnly(state), "test")
    assert tables.encoder.bidirectional and not tables.decoder.bidirectional
    np.testing.assert_array_equal(tables.decoder.table,
                                  state["decoder.0.self_attention.relative_attention_bias.weight"])


def test_loss_milestones_and_bands():
    losses = [3.0] * 60 + [0.5] * 50 + [0.05] * 40  # below 1 at step 60, below 0.1 at step 110
    assert loss_milestones(losses) == "loss below 1: by step 75\nloss below 0.1: by step 150"
    late = [3.0] * 80 + [0.5] * 80 + [0.05] * 20  # below 1 at step 80, below 0.1 at step 160
    assert loss_milestones(late) == "loss below 1: by step 150\nloss below 0.1: after step 150"
    assert loss_milestones([2.0] * 10) == "loss below 1: not in 10 steps\nloss below 0.1: not in 10 steps"
    assert accuracy_band(0.0) == "under 2%" and accuracy_band(0.9) == "70% to 97%"
    assert accuracy_band(1.0) == "97% or more"
    with pytest.raises(ArgumentError):
        accuracy_band(1.5)
    with pytest.raises(ArgumentError):
        loss_milestones([])


def test_learned_tables_figure_draws_start_and_trained():
    names = [n for n in our_names() if "relative_attention_bias" in n]
    start = tables_of(StateOnly({n: torch.zeros(16, 4) for n in names}), "start")
    trained = tables_of(StateOnly({n: torch.randn(16, 4) for n in names}), "trained")
    fig = learned_tables_figure(trained, start)
    assert len(fig.axes) == 2 and "thin grey dashed lines are the same heads at the start" in alt_text(fig)
    assert len(fig.axes[0].lines) > 8  # 4 heads trained + 4 at the start, plus reference lines
    with pytest.raises(ArgumentError):
        learned_tables_figure("not tables")


def lesson_greedy(model, input_ids, attention_mask, max_new_tokens, cached=True):
    """Lesson 7's greedy decoding (the course's version; cached=False, the slip of re-feeding the whole prefix)."""
    return greedy(model, input_ids, attention_mask, max_new_tokens, use_cache=cached)


def test_padded_pads_on_the_right():
    ids, mask = padded(["31", "415"])
    assert ids.tolist() == [[5, 3, EOS, PAD], [6, 3, 7, EOS]] and mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    with pytest.raises(ArgumentError):
        padded("31")


@pytest.mark.parametrize("seed, eos_scale", [(0, 1.0), (5, -6.0), (2, -6.0)])
def test_step_model_decoding_equals_generate(seed, eos_scale):
    weights = random_model(seed, eos_scale)
    ids, mask = padded(["31415", "27", "9999999", "0"])
    model = StepModel(weights)
    mine = lesson_greedy(model, ids, mask, 10)
    assert torch.equal(mine, weights.generate(input_ids=ids, attention_mask=mask, max_new_tokens=10, do_sample=False))
    assert all(fed.shape[1] == 1 for fed, _ in model.calls) and len(model.calls) == mine.shape[1] - 1
    assert not model.calls[0][1] and all(had for _, had in model.calls[1:])


def test_random_model_is_seeded_and_leaves_the_global_stream_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = random_model(3), random_model(3)
    assert torch.equal(torch.rand(1), before)
    assert torch.equal(a.shared.weight, b.shared.weight) and not a.shared.weight[PAD].any()


def test_random_model_gives_the_same_weights_when_threads_draw_at_once():
    """The grader draws cases and computes expected results in threads; each model must still be its seed's."""
    from concurrent.futures import ThreadPoolExecutor

    seeds = list(range(16))
    alone = {seed: random_model(seed).lm_head.weight.sum().item() for seed in seeds}
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = dict(zip(seeds, pool.map(lambda seed: random_model(seed).lm_head.weight.sum().item(), seeds),
                            strict=True))
    assert together == alone


def test_driver_refuses_decoding_without_the_cache():
    from t5lesson.exercises import tiny_t5_driver

    run = tiny_t5_driver.adapt(lesson_greedy)
    assert run(seed=0, prompts=["31"], max_new_tokens=3).shape == (1, 4)
    uncached = tiny_t5_driver.adapt(lambda *a: lesson_greedy(*a, cached=False))
    with pytest.raises(tiny_t5_driver.GradingSetupError, match="feed only the newest token"):
        uncached(seed=0, prompts=["31"], max_new_tokens=3)


# --- the layer lesson 7 is built from: the learner's lesson-6 class, or the course's ---

from t5lesson.layer import T5SelfAttention  # noqa: E402
from t5lesson.lessons.layer_build import LESSON_7_FILE, lesson_6_layer, save_for_lesson_7  # noqa: E402


def test_lesson_7_uses_the_course_layer_when_lesson_6_saved_none(tmp_path):
    cls, line = lesson_6_layer(tmp_path)
    assert cls is T5SelfAttention and "the course's t5lesson.layer.T5SelfAttention" in line
    (tmp_path / LESSON_7_FILE).write_text("class T5Layer:\n    pass\n")  # a file that does not pass
    cls, line = lesson_6_layer(tmp_path)
    assert cls is T5SelfAttention and "no longer passes" in line
    (tmp_path / LESSON_7_FILE).write_text("import nothing_of_that_name\n")
    assert "did not load: ModuleNotFoundError" in lesson_6_layer(tmp_path)[1]


def test_lesson_6_saves_nothing_while_its_steps_are_the_course_versions(tmp_path, capsys):
    (tmp_path / LESSON_7_FILE).write_text("stale")
    assert not save_for_lesson_7(T5SelfAttention, True, folder=tmp_path)
    assert "compute_bias, attend are still the course's version" in capsys.readouterr().out
    assert not (tmp_path / LESSON_7_FILE).exists()  # an older copy is removed


def test_filled_lesson_6_hands_its_class_to_lesson_7(filled_lessons):
    """Lessons 6 and 7 with every your-turn cell filled, in one folder: lesson 6 saves the learner's class,
    and lesson 7 says it is built from it, then trains and decodes (its checks match)."""
    ran = {name[:-len(".ipynb")]: result["printed"] for name, result in filled_lessons.items()}
    assert any("Saved your T5Layer to my_t5_layer.py, next to this notebook." in out
               for out in ran["06_t5_attention_layer"])
    lesson7 = "".join(ran["07_tiny_t5"])
    assert "Attention layer: your T5Layer from lesson 6 (my_t5_layer.py)\n  It passed every step" in lesson7
    assert "block_forward: matches" in lesson7 and "greedy: matches" in lesson7
    assert "cached == generate(), token for token: True" in lesson7
    assert "logits [4, 9, 12]: max |ours - transformers| <= 1e-05  ✓" in lesson7
