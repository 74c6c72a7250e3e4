"""Lesson 8: the memory arithmetic, its figure, and the check of the your-turn cell flex_attend."""
import torch

from t5lesson.common.figures import alt_text
from t5lesson.lessons import flex_turns
from t5lesson.lessons.flex_lesson import gib, memory_figure, memory_lines
from t5lesson.lessons.your_turn import WIDTH


def test_the_sizes_are_element_counts_times_bytes():
    assert gib(1, 8, 16384, 16384) == 8.0
    assert gib(1, 8, 16384, 16384, torch.bfloat16) == 4.0
    assert gib(2, 16, 8192, 8192, torch.bfloat16) == 4.0  # exercise 8, q1


def test_the_table_fits_the_page_and_the_figure_has_alt_text():
    assert all(len(line) <= WIDTH for line in memory_lines().splitlines())
    assert "16,384" in alt_text(memory_figure())


def test_the_course_answer_passes_every_case():
    assert flex_turns.check_flex_attend(flex_turns.flex_attend, None) is None


def _learner(scale=1.0, dense=False):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
        batch, q_len, k_len = q.shape[0], q.shape[2], k.shape[2]
        if dense:  # the whole bias first, as transformers' flex path reads it
            bias = layer.compute_bias(q_len, k_len, query_offset)[0]

            def score_mod(score, b, h, q_idx, kv_idx):
                return score + bias[h, q_idx, kv_idx]
        else:
            offsets = torch.arange(-(query_offset + q_len - 1), k_len - query_offset)
            buckets = flex_turns.relative_position_bucket(offsets, bidirectional=not layer.causal,
                                                          num_buckets=layer.num_buckets,
                                                          max_distance=layer.max_distance)
            per_offset = layer.relative_attention_bias.weight[buckets].T

            def score_mod(score, b, h, q_idx, kv_idx):
                return score + per_offset[h, kv_idx - q_idx + q_len - 1]

        def mask_mod(b, h, q_idx, kv_idx):
            allowed = (kv_idx <= q_idx + query_offset) if layer.causal else (kv_idx >= 0)
            return allowed if key_padding is None else allowed & key_padding.bool()[b, kv_idx]

        mask = create_block_mask(mask_mod, batch, None, q_len, k_len, device="cpu")
        options = {} if scale is None else {"scale": scale}
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, **options)

    return flex_attend


def test_a_learners_right_answer_passes():
    with flex_turns.quiet_flex():
        assert flex_turns.check_flex_attend(_learner(), None) is None


def test_the_default_scale_is_named_as_the_slip():
    with flex_turns.quiet_flex():
        problem = flex_turns.check_flex_attend(_learner(scale=None), None)
    assert problem and "case 1 of" in problem and "sqrt(d_kv)" in problem and "scale=1.0" in problem


def test_building_the_whole_bias_is_not_accepted():
    with flex_turns.quiet_flex():
        problem = flex_turns.check_flex_attend(_learner(dense=True), None)
    assert problem and "compute_bias" in problem and "[q_len, k_len]" in problem


def test_the_check_leaves_the_layers_methods_as_they_were():
    layer = flex_turns._layer(flex_turns.layer_class()[0], True, 8, 20, seed=0)
    with flex_turns._Watched(layer):
        assert "compute_bias" in layer.__dict__
    assert "compute_bias" not in layer.__dict__ and "allowed" not in layer.__dict__


def test_handing_the_work_to_the_package_is_told_so(capsys):
    from t5lesson import flex
    from t5lesson.lessons.your_turn import CALLS_COURSE, your_turn

    def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
        per_offset = flex.per_offset_bias(layer.relative_attention_bias.weight, q.shape[2], k.shape[2],
                                          bidirectional=not layer.causal, max_distance=layer.max_distance,
                                          query_offset=query_offset)
        return flex.flex_t5_attention(q, k, v, score_mod=flex.bias_score_mod(per_offset, q.shape[2], query_offset),
                                      mask_mod=flex.t5_mask_mod(causal=layer.causal, key_padding=key_padding,
                                                                query_offset=query_offset))

    assert your_turn("flex_attend", flex_attend) is flex_turns.flex_attend
    assert CALLS_COURSE in " ".join(capsys.readouterr().out.split())
