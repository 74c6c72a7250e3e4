"""Exercise 7 q5, beam search with two beams: the rules the question states are what generate() does,
every case's answer is the same on any CPU and shows what its topic says, and the grader's feedback
says what to fix.

`rules` below follows the question's five rules literally (a test oracle, kept apart from the
solution notebook's answer and from the bank's `beam_search`, which the recipe decodes with). On
every public case and on drawn ones it gives generate(num_beams=2)'s tokens, on the models the
kernel builds (float32, the secret offset added to decode's logits). The margins themselves (no two
scores that decide a beam within MARGIN, 1e-3, hundreds of times float32's rounding of sums of this
size, about 1e-6) are measured by the bank's `unfit`, which the recipe also runs on every draw.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from test_pasting_lessons import DECODING_QUESTION, score

from t5lesson.exercises import get
from t5lesson.exercises.ex07_tiny_t5 import CASE_SPECS, TOPICS, beam_search, grading_model, reference_beams, unfit
from t5lesson.grading.verdict import INCORRECT, PARTIAL
from t5lesson.seq2seq import EOS, PAD, padded

ROOT = Path(__file__).resolve().parents[2]
TOPIC = {topic.name: topic for topic in TOPICS}


def rules(model, input_ids, attention_mask, max_new_tokens):
    """The question's rules, step by step."""
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
    return [f[0][1] for f in finished]


def _generated(kwargs) -> list[list[int]]:
    """generate()'s answer for a case, each row up to its end token."""
    want = reference_beams(**kwargs).values
    return [[int(t) for t in row[np.isfinite(row)] if t >= 0] for row in want]


def _decoded(decoder, kwargs) -> list[list[int]]:
    ids, mask = padded(kwargs["prompts"])
    with torch.no_grad():
        return decoder(grading_model(kwargs["seed"], kwargs["eos_scale"], kwargs["shift"]), ids, mask,
                       kwargs["max_new_tokens"])


PUBLIC = [kwargs for kwargs, _ in CASE_SPECS]
DRAWN = [dict(case.kwargs) for case in get("07_tiny_t5").drawn("beam question")["q5"].cases]


@pytest.mark.parametrize("kwargs", PUBLIC + DRAWN, ids=[f"public {t}" for _, t in CASE_SPECS]
                         + [f"drawn {c}" for c in range(len(DRAWN))])
def test_the_rules_are_generate(kwargs):
    want = _generated(kwargs)
    assert _decoded(rules, kwargs) == want
    assert _decoded(beam_search, kwargs) == want  # the recipe's decoder, in float32 as the kernel runs


@pytest.mark.parametrize("kwargs, topic", CASE_SPECS, ids=[topic for _, topic in CASE_SPECS])
def test_every_public_case_is_apart_shows_its_topic_and_defeats_the_shortcuts(kwargs, topic):
    assert unfit(TOPIC[topic], kwargs) == ""


def test_the_public_cases_follow_the_recipe():
    assert [topic for _, topic in CASE_SPECS] == [topic.name for topic in TOPICS]
    assert all(0 <= kwargs["seed"] < 1000 for kwargs in PUBLIC)  # the drawn seeds start at 1000


def test_the_cases_use_what_beam_search_adds():
    """Rows of a case end at different steps, and a row may end at once while others go on (that greedy
    decoding gets other tokens is the recipe's to reject, and test_pasting_lessons' to measure)."""
    widths = [[len(row) for row in _generated(kwargs)] for kwargs in PUBLIC]
    assert sum(len(set(w)) > 1 for w in widths) >= 4
    assert any(2 in w for w in widths)  # an end after one token wins


def _solution_source():
    nb = json.loads((ROOT / "solutions" / "07_tiny_t5.ipynb").read_text(encoding="utf-8"))
    [cell] = [c for c in nb["cells"] if c["metadata"].get("t5lesson", {}).get("cell") == "q5-answer"]
    return "".join(cell["source"])


def variant(*edits):
    """The solution's beam_decode with each (old, new) text edit made."""
    source = _solution_source()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    scope: dict = {"torch": torch, "PAD": PAD, "EOS": EOS}
    exec(source, scope)
    return scope["beam_decode"]


# slips, as edits of the solution's text
NO_CACHE = ("model.decode(tokens[:, -1:], encoder_out, mask, cache)", "model.decode(tokens[:, -1:], encoder_out, mask)")
PREFIX = ("model.decode(tokens[:, -1:], encoder_out, mask, cache)", "model.decode(tokens, encoder_out, mask, cache)")
NO_PADDING = ("out = torch.full((batch, max(len(t) for t in best)), PAD)",
              "out = torch.full((batch, max(len(t) for t in best)), -1)")
IGNORES_EOS = (("for r in range(beams) if last or token[b, r] == EOS]", "for r in range(beams) if last]"),
               ("(token[b] != EOS).nonzero()", "(token[b] >= 0).nonzero()"))


def test_the_self_test_in_the_question_shows_the_usual_mistakes():
    """q5's text has the learner compare beam_decode with generate_beams on structured_model(seed=3), four
    strings, 12 tokens: the solution prints the same tensor, and each usual slip another one."""
    from t5lesson.lessons.tiny_t5 import greedy
    from t5lesson.seq2seq import StepModel, generate_beams, structured_model

    nb = json.loads((ROOT / "solutions" / "07_tiny_t5.ipynb").read_text(encoding="utf-8"))
    [text] = ["".join(c["source"]) for c in nb["cells"] if c["metadata"].get("t5lesson", {}).get("cell") == "q5-text"]
    assert 'structured_model(seed=3)' in text and 'padded(["31415", "27", "9999999", "0"])' in text
    model = structured_model(seed=3)
    ids, mask = padded(["31415", "27", "9999999", "0"])
    theirs = generate_beams(model, ids, mask, 12)
    ends = [row.index(EOS, 1) if EOS in row[1:] else None for row in theirs.tolist()]
    assert sum(e is not None for e in ends) == 2 and len({len(set(r)) for r in theirs.tolist()}) > 1

    def same(decoder) -> bool:
        with torch.no_grad():
            mine = decoder(StepModel(model), ids, mask, 12)
        return mine.shape == theirs.shape and torch.equal(mine, theirs)

    assert same(variant())
    for slip in (variant(NO_PADDING), variant(*IGNORES_EOS), variant(NO_CACHE), greedy):
        assert not same(slip)


def test_a_beam_search_that_keeps_the_cache_unsorted_is_told_to_pick_its_rows():
    unsorted = variant(("        cache = tuple(tuple(t[rows] for t in block) for block in cache)\n", ""))
    outcome = score(DECODING_QUESTION, unsorted)
    assert outcome.status in (PARTIAL, INCORRECT) and outcome.points <= DECODING_QUESTION.points / 3, outcome.message
    assert "pick the cache rows of the beams you keep, tensor[rows]" in outcome.message


def test_a_token_that_differs_is_told_where():
    """A decoder that reads the second-best beam's hypothesis (a slip in the last rule) is told the first
    position where it differs, which position 0 is, and which token generate() gives there."""
    second = variant(("best = [max(f, key=lambda h: h[0])[1] for f in finished]",
                      "best = [min(f, key=lambda h: h[0])[1] for f in finished]"))
    outcome = score(DECODING_QUESTION, second)
    assert outcome.status in (PARTIAL, INCORRECT) and outcome.points < DECODING_QUESTION.points, outcome.message
    assert re.search(r"row \d first differs at position \d+ \(position 0 holds the start token, so this is new "
                     r"token \d+\): generate\(num_beams=2\) gives token \d+, your function token \d+\.",
                     outcome.message), outcome.message


def test_an_answer_without_the_start_token_is_told_to_begin_with_it():
    headless = variant(("    return out\n", "    return out[:, 1:]\n"))
    outcome = score(DECODING_QUESTION, headless)
    assert outcome.status == INCORRECT and outcome.points == 0, outcome.message
    assert "your rows begin with the first new token: every row of the answer starts with the start token " \
           "PAD (0)" in outcome.message
    assert "differs from" not in outcome.message and "Error" not in outcome.line()


def test_decoding_without_the_cache_is_refused():
    outcome = score(DECODING_QUESTION, variant(("model.decode(tokens[:, -1:], encoder_out, mask, cache)",
                                                "model.decode(tokens, encoder_out, mask)")))  # lesson 7's slip
    assert outcome.points < DECODING_QUESTION.points / 3, outcome.message  # one new token needs no cache
    assert "feed only the newest token of each beam" in outcome.message


def test_the_public_cases_catch_the_usual_slips():
    """check("q5") tells a learner of each: no padding after EOS, EOS taken as any token (a finished string
    that goes on), the cache dropped, greedy decoding (lesson 7's, pasted); each earns at most half, with
    a sentence saying why."""
    from test_pasting_lessons import lesson_7_greedy

    greedy = lesson_7_greedy()
    for slip, sentence in ((variant(NO_PADDING), "goes on after its EOS"), (variant(*IGNORES_EOS), "after its EOS"),
                           (variant(NO_CACHE), "got no cache"), (greedy, "greedy decoding's tokens")):
        outcome = score(DECODING_QUESTION, slip)
        assert outcome.points <= DECODING_QUESTION.points / 2 and sentence in outcome.message, outcome.line()


def test_calling_generate_earns_nothing():
    from t5lesson.grading import harvest

    def borrowed(model, input_ids, attention_mask, max_new_tokens):
        return model._model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                     max_new_tokens=max_new_tokens, num_beams=2, early_stopping=True,
                                     length_penalty=0.0)

    outcome = score(DECODING_QUESTION, borrowed)
    assert outcome.points == 0 and harvest.BLOCKED_MESSAGE in outcome.message, outcome.message
