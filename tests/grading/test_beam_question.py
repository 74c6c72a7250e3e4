"""Exercise 7 q5, beam search with two beams: the rules the question states are what generate() does,
every case's answer is the same on any CPU, and the grader's feedback says what to fix.

`rules` below follows the question's five rules literally (a test oracle, kept apart from the
solution notebook's answer). On every hidden case it gives generate(num_beams=2)'s tokens, and it
measures the margins: at every step, the gaps between the five best candidate scores of every
string, and at the end the gap between the two finished hypotheses. Each is over 1e-3 (the
smallest, 1.7e-3), hundreds of times float32's rounding of sums of this size (about 1e-6), so no
order of additions flips a beam.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from test_pasting_lessons import DECODING_QUESTION, score

from t5lesson.exercises.ex07_tiny_t5 import CASE_SPECS, reference_beams
from t5lesson.grading.questions.kinds import PARTIAL
from t5lesson.seq2seq import EOS, PAD, StepModel, padded, random_model

MARGIN = 1e-3
ROOT = Path(__file__).resolve().parents[2]


def rules(model, input_ids, attention_mask, max_new_tokens, gaps):
    """The question's rules, step by step; appends every decisive gap between scores to `gaps`."""
    batch, beams = input_ids.shape[0], 2
    encoder_out = model.encode(input_ids, attention_mask).repeat_interleave(beams, 0)
    mask = attention_mask.repeat_interleave(beams, 0)
    running = [[(0.0, [PAD]), (-float("inf"), [PAD])] for _ in range(batch)]
    finished: list[list] = [[] for _ in range(batch)]
    cache = None
    for step in range(max_new_tokens):
        fed = torch.tensor([[tokens[-1]] for row in running for _, tokens in row])
        logits, cache = model.decode(fed, encoder_out, mask, cache)
        log_p = torch.log_softmax(logits[:, -1].float(), -1)
        picked = []
        for b in range(batch):
            candidates = sorted(((score + float(log_p[b * beams + k, t]), k, t)
                                 for k, (score, _) in enumerate(running[b]) for t in range(log_p.shape[-1])),
                                key=lambda c: -c[0])
            gaps += [candidates[r][0] - candidates[r + 1][0] for r in range(2 * beams)]
            best = candidates[:2 * beams]
            last = step == max_new_tokens - 1
            if len(finished[b]) < beams:
                ended = [(s, running[b][k][1] + [t]) for s, k, t in best[:beams] if last or t == EOS]
                finished[b] = sorted(finished[b] + ended, key=lambda h: -h[0])[:beams]
            going = [(s, k, t) for s, k, t in best if t != EOS][:beams]
            picked.append([b * beams + k for _, k, _ in going])
            running[b] = [(s, running[b][k][1] + [t]) for s, k, t in going]
        if step == max_new_tokens - 1 or all(len(f) == beams for f in finished):
            break
        rows = torch.tensor([r for p in picked for r in p])
        cache = tuple(tuple(t[rows] for t in block) for block in cache)
    gaps += [f[0][0] - f[1][0] for f in finished if len(f) == beams]
    best = [f[0][1] for f in finished]
    out = torch.full((batch, 1 + max_new_tokens), -1)
    for b, tokens in enumerate(best):
        out[b, :len(tokens)] = torch.tensor(tokens)
    return out.double().numpy()


@pytest.mark.parametrize("spec", [kwargs for kwargs, _ in CASE_SPECS], ids=[topic for _, topic in CASE_SPECS])
def test_the_rules_are_generate_and_the_scores_are_apart(spec):
    gaps: list[float] = []
    ids, mask = padded(spec["prompts"])
    with torch.no_grad():
        ours = rules(StepModel(random_model(spec["seed"], spec.get("eos_scale", 1.0))), ids, mask,
                     spec["max_new_tokens"], gaps)
    want = reference_beams(**spec).values
    care = np.isfinite(want)
    assert np.array_equal(ours[care], want[care])
    assert min(gaps) > MARGIN, min(gaps)


def test_the_cases_use_what_beam_search_adds():
    """Most cases end, finish or pick differently from greedy decoding (test_pasting_lessons: greedy earns
    at most a third), and some strings end while others go on."""
    widths = [np.isfinite(reference_beams(**kwargs).values).sum(1) for kwargs, _ in CASE_SPECS]
    assert any(len(set(w)) > 1 for w in widths)
    assert any((w == 2).all() for w in widths)  # an end after one token wins


def _solution_source():
    nb = json.loads((ROOT / "solutions" / "07_tiny_t5.ipynb").read_text(encoding="utf-8"))
    [cell] = [c for c in nb["cells"] if c["metadata"].get("t5lesson", {}).get("cell") == "q5-answer"]
    return "".join(cell["source"])


def _variant(old, new):
    source = _solution_source()
    assert old in source
    scope: dict = {"torch": torch, "PAD": PAD, "EOS": EOS}
    exec(source.replace(old, new), scope)
    return scope["beam_decode"]


def test_a_beam_search_that_keeps_the_cache_unsorted_is_told_where_it_differs():
    unsorted = _variant("        cache = tuple(tuple(t[rows] for t in block) for block in cache)\n", "")
    outcome = score(DECODING_QUESTION, unsorted)
    assert outcome.status == PARTIAL and outcome.points <= DECODING_QUESTION.points / 2, outcome.message
    assert re.search(r"row \d first differs at position \d+ \(position 0 holds the start token\): "
                     r"generate\(num_beams=2\) gives token \d+, your function token \d+\.", outcome.message)


def test_decoding_without_the_cache_is_refused():
    outcome = score(DECODING_QUESTION, _variant("model.decode(tokens[:, -1:], encoder_out, mask, cache)",
                                                "model.decode(tokens, encoder_out, mask)"))
    assert outcome.points < DECODING_QUESTION.points / 3, outcome.message  # one new token needs no cache
    assert "feed only the newest token of each beam" in outcome.message


def test_calling_generate_earns_nothing():
    from t5lesson.grading import harvest

    def borrowed(model, input_ids, attention_mask, max_new_tokens):
        return model._model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                     max_new_tokens=max_new_tokens, num_beams=2, early_stopping=True,
                                     length_penalty=0.0)

    outcome = score(DECODING_QUESTION, borrowed)
    assert outcome.points == 0 and harvest.BLOCKED_MESSAGE in outcome.message, outcome.message
