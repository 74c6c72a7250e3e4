"""Lesson 7, section 6: per-position accuracy, untrained-bucket counts, the patch, the stored runs."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from t5lesson import ArgumentError
from t5lesson.common.figures import alt_text
from t5lesson.lessons.length_test import (
    LENGTHS,
    SEEDS,
    SETTINGS,
    LengthResult,
    findings,
    intervention_lines,
    load_intervention,
    mean_results,
    nearest_trained,
    patch_untrained,
    per_position_accuracy,
    run_figure,
    run_lines,
    untrained_buckets,
    untrained_pairs,
    untrained_table,
)
from t5lesson.lessons.tiny_t5 import CONFIG, EOS, PAD
from t5lesson.seq2seq import random_model


def perfect(input_ids, attention_mask, max_new_tokens):
    """A decoder that reverses every string exactly: start token, reversed digits, EOS."""
    rows = []
    for ids, mask in zip(input_ids, attention_mask, strict=True):
        digits = ids[: int(mask.sum()) - 1].flip(0)
        rows.append(torch.cat([torch.tensor([PAD]), digits, torch.tensor([EOS])]))
    width = max(len(r) for r in rows)
    return torch.stack([torch.cat([r, torch.full((width - len(r),), PAD)]) for r in rows])


def test_a_perfect_decoder_scores_one_everywhere():
    r = per_position_accuracy(perfect, 9, n=20)
    assert r.length == 9 and r.whole == 1.0 and r.early == 0.0
    assert np.array_equal(r.per_position, np.ones(9))


def test_a_decoder_that_stops_early_has_its_missing_tokens_wrong():
    def first_three(input_ids, attention_mask, max_new_tokens):
        return perfect(input_ids, attention_mask, max_new_tokens)[:, :4]  # start token and 3 digits

    r = per_position_accuracy(first_three, 6, n=10)
    assert r.whole == 0.0 and r.early == 1.0
    assert np.array_equal(r.per_position, [1, 1, 1, 0, 0, 0])


def test_bad_decoder_output_and_bad_length_are_clear_errors():
    with pytest.raises(ArgumentError, match="decode must return"):
        per_position_accuracy(lambda i, m, k: i[0], 4, n=3)
    with pytest.raises(ArgumentError, match="length"):
        per_position_accuracy(perfect, 0)


def test_untrained_buckets_of_the_lesson_config():
    # strings of up to 8 digits: 9 tokens, offsets up to 8
    assert untrained_buckets(9, True, CONFIG) == [6, 7, 14, 15]  # bucket 8 is one no offset uses
    assert untrained_buckets(9, False, CONFIG) == list(range(9, 16))
    assert untrained_buckets(9, True, {**CONFIG, **SETTINGS["all buckets trained"][1]}) == []
    assert untrained_buckets(9, False, {**CONFIG, **SETTINGS["all buckets trained"][1]}) == []


def test_untrained_pairs_count_both_stacks():
    assert untrained_pairs(9, 9, CONFIG) == {"encoder": (0, 81), "decoder": (0, 45)}
    assert untrained_pairs(11, 9, CONFIG) == {"encoder": (2, 121), "decoder": (1, 66)}  # offsets of 10 only
    assert untrained_pairs(17, 9, CONFIG) == {"encoder": (56, 289), "decoder": (28, 153)}
    table = untrained_table((8, 9, 10, 16, 32), 9, CONFIG)
    assert "552 of 1089" in table and "276 of 561" in table


def fake_results(lengths=LENGTHS):
    return [LengthResult(n, 0.5, np.linspace(1, 0.1, n), 0.0) for n in lengths]


def test_each_untrained_bucket_takes_the_nearest_trained_bucket_below_it_on_its_side():
    assert nearest_trained(9, True, CONFIG) == {6: 5, 7: 5, 14: 13, 15: 13}
    assert nearest_trained(9, False, CONFIG) == dict.fromkeys(range(9, 16), 8)
    assert nearest_trained(9, True, {**CONFIG, **SETTINGS["all buckets trained"][1]}) == {}


def test_the_patch_changes_only_the_untrained_buckets_of_a_copy():
    model = random_model(0)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    patched = dict(patch_untrained(model, 9, CONFIG).named_parameters())
    changed = {}
    for name, value in before.items():
        assert torch.equal(dict(model.named_parameters())[name], value)  # the original is untouched
        rows = [i for i in range(value.shape[0]) if not torch.equal(patched[name][i], value[i])]
        if rows:
            changed[name.split(".")[0]] = rows
            assert all(torch.equal(patched[name][i], value[src])
                       for i, src in nearest_trained(9, name.startswith("encoder"), CONFIG).items())
    assert changed == {"encoder": [6, 7, 14, 15], "decoder": list(range(9, 16))}
    with pytest.raises(ArgumentError, match="relative_attention_bias"):
        patch_untrained(torch.nn.Linear(2, 2), 9, CONFIG)


def test_lines_and_figures():
    table = run_lines(fake_results(), fake_results())
    assert "patched" in table and len(table.splitlines()) == 2 + len(LENGTHS)
    fig = run_figure(np.geomspace(3, 0.05, 150), fake_results())
    assert "loss" in alt_text(fig) and "32 digits" in alt_text(fig)


def test_stored_intervention_is_well_formed():
    data = load_intervention()
    assert data["lengths"] == list(LENGTHS) and set(data["settings"]) == set(SETTINGS)
    for setting in SETTINGS:
        runs = [r for r in data["runs"] if r["setting"] == setting]
        assert sorted(r["seed"] for r in runs) == list(SEEDS)
        for r in runs:
            for n in LENGTHS:
                values = np.asarray(r["per_position"][str(n)])
                assert values.shape == (n,) and ((0 <= values) & (values <= 1)).all()
                assert 0 <= r["whole"][str(n)] <= values.min() + 1e-9  # a whole answer needs every token
        assert len(mean_results(data, setting)) == len(LENGTHS)
    printed = intervention_lines(data)
    assert all(name in printed for name in SETTINGS) and max(map(len, printed.splitlines())) <= 90
    assert all(holds for _, holds in findings(data))  # what the lesson says of the stored runs


def test_missing_file_and_unknown_setting_are_clear_errors(tmp_path):
    with pytest.raises(ArgumentError, match="benchmarks/length_intervention.py"):
        load_intervention(tmp_path / "none.json")
    with pytest.raises(ArgumentError, match="no stored runs"):
        mean_results(load_intervention(), "no such setting")


def _section_six_text() -> str:
    root = Path(__file__).resolve().parents[2]
    cells = json.loads((root / "notebooks" / "07_tiny_t5.ipynb").read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    answer = [c for c in json.loads((root / "solutions" / "07_tiny_t5.ipynb").read_text())["cells"]
              if "".join(c["source"]).startswith("Measured, in the stored runs")]
    return text[text.index("## 6. Past"):text.index("## Check yourself")] + "".join(answer[0]["source"])


def test_every_share_lesson_7_and_its_model_answer_quote_is_printed_from_the_stored_runs():
    printed = intervention_lines(load_intervention())
    quoted = set(re.findall(r"\b[01]\.\d\d\b", _section_six_text()))
    assert len(quoted) >= 10 and sorted(n for n in quoted if n not in printed) == []
