"""Exercise 7 q5: the ways of not writing the beam search earn at most a third of the question on the
grader's cases, or are flagged in the feedback.

Each route below is one a review of hidden variants found earning full marks before the cases were
drawn, the model structured and the logits offset (see `t5lesson.exercises.ex07_tiny_t5` and its
driver), in this suite's own words:

1. a table of the public cases' answers pasted in (with and without replaying it through decode);
2. generate run while the notebook's cells run, before the grader reads the answer, and its tokens
   replayed through decode; and generate (with its beam search) reached by code objects copied then,
   which the blocking does not reach;
3. beam search on logits from a full forward pass of the transformers model underneath, with decode
   called on the newest tokens and the cache only to fill the log;
   (4, reading another copy of the course on the machine, is for the kernel's file system to stop)
5. the slips beneath them: a decoder that drops the cache, one that feeds the whole prefix with it,
   and two that leave something else than padding after a row's EOS.

Each is scored in this process on drawn cases (one seed: test_hidden_cases.py gives the solution full
marks on three), as test_hidden_cases.py scores the solution: the
notebook's namespace holds the answer, `harvest.collect` runs the drawn question's harvesting code
(the driver included, the blocking on), and the drawn question scores the record. A route is
flagged when a sentence of the feedback comes from the driver (a broken contract) or the blocking.
"""
from __future__ import annotations

import json
import types
from fractions import Fraction
from functools import cache

import pytest
import torch
from test_beam_question import IGNORES_EOS, NO_CACHE, NO_PADDING, PREFIX, _decoded, _generated, variant

from t5lesson import exercises as bank
from t5lesson.exercises.ex07_tiny_t5 import CASE_SPECS, TOPICS, beam_search, reference_beams
from t5lesson.grading import harvest
from t5lesson.grading.records import clean_record
from t5lesson.grading.verdict import CORRECT, ERROR
from t5lesson.seq2seq import EOS, PAD

SEED = "spring term"
DRIVER_SENTENCES = ("decode call", "beam_decode never called", "goes on after its EOS", "beam_decode should return")


@cache
def drawn_question(seed: str):
    return bank.get("07_tiny_t5").drawn(seed)["q5"]


def graded(answer, seed: str):
    question = drawn_question(seed)
    raw = harvest.collect(question.harvest_spec(), {question.name: answer})
    return question.score(clean_record(json.loads(json.dumps(raw, allow_nan=False))))


def flagged(outcome) -> bool:
    return any(s in outcome.message for s in DRIVER_SENTENCES) or harvest.BLOCKED_MESSAGE in outcome.message


def at_most_a_third(outcome) -> bool:
    return Fraction(outcome.points).limit_denominator(1000) <= Fraction(outcome.max_points) / 3


# --- route 1 and route 2: answers worked out beforehand ---

def _public_answers() -> dict:
    """What a notebook can work out before grading: generate()'s answer to every public case, by prompt."""
    return {tuple(kwargs["prompts"]): _generated(kwargs) for kwargs, _ in CASE_SPECS}


def _prompts_of(input_ids) -> tuple:
    return tuple("".join(str(t - 2) for t in row if t > 1) for row in input_ids.tolist())


def _as_tensor(answers) -> torch.Tensor:
    out = torch.full((len(answers), max(len(a) for a in answers)), PAD)
    for row, answer in enumerate(answers):
        out[row, :len(answer)] = torch.tensor(answer)
    return out


def _replay(model, input_ids, attention_mask, answers):
    """Feed each string's answer through decode, one token a call with the cache, two rows per string,
    so that the call log looks like a beam search's."""
    encoder_out = model.encode(input_ids, attention_mask).repeat_interleave(2, 0)
    mask = attention_mask.repeat_interleave(2, 0)
    rows = [a for a in answers for _ in range(2)]
    cache = None
    for step in range(max(len(a) for a in answers) - 1):
        fed = torch.tensor([[a[step] if step < len(a) else PAD] for a in rows])
        _, cache = model.decode(fed, encoder_out, mask, cache)


def table_lookup():
    table = _public_answers()

    def beam_decode(model, input_ids, attention_mask, max_new_tokens):
        return _as_tensor(table.get(_prompts_of(input_ids), [[PAD, EOS]] * input_ids.shape[0]))
    return beam_decode


def table_replayed():
    table = _public_answers()

    def beam_decode(model, input_ids, attention_mask, max_new_tokens):
        answers = table.get(_prompts_of(input_ids), [[PAD, EOS]] * input_ids.shape[0])
        _replay(model, input_ids, attention_mask, answers)
        return _as_tensor(answers)
    return beam_decode


def generated_early_and_replayed():
    """generate() run on every public case while the cells run (the blocking is not on yet), the tokens
    replayed through decode when the grader calls the function."""
    early = {tuple(kwargs["prompts"]): reference_beams(**kwargs).values for kwargs, _ in CASE_SPECS}
    table = {key: [[int(t) for t in row if t == t and t >= 0] for row in values] for key, values in early.items()}

    def beam_decode(model, input_ids, attention_mask, max_new_tokens):
        answers = table.get(_prompts_of(input_ids), [[PAD, EOS]] * input_ids.shape[0])
        _replay(model, input_ids, attention_mask, answers)
        return _as_tensor(answers)
    return beam_decode


def _copied(function):
    """A new function object with `function`'s code (the innermost of its decorators'), made now: the
    blocking later replaces the code of the original, not of this copy."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def generate_copied(with_beam_search: bool):
    """generate() reached through code objects copied while the cells run (and its beam search, which
    generate() looks up on the model's class, put there for the call), its tokens replayed through
    decode for the log."""
    from transformers.generation.utils import GenerationMixin

    generate, search = _copied(GenerationMixin.generate), _copied(GenerationMixin._beam_search)

    def beam_decode(model, input_ids, attention_mask, max_new_tokens):
        t5 = model._model
        if with_beam_search:
            type(t5)._beam_search = search
        try:
            tokens = generate(t5, input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                              num_beams=2, do_sample=False, early_stopping=True, length_penalty=0.0)
        finally:
            if with_beam_search:
                del type(t5)._beam_search
        answers = [row[:row.index(EOS, 1) + 1] if EOS in row[1:] else row for row in tokens.tolist()]
        _replay(model, input_ids, attention_mask, answers)
        return _as_tensor(answers)
    return beam_decode


# --- route 3, and the slips: edits of the solution (the slips' are test_beam_question's) ---

FULL_FORWARD = ("logits, cache = model.decode(tokens[:, -1:], encoder_out, mask, cache)",
                "_, cache = model.decode(tokens[:, -1:], encoder_out, mask, cache)\n"
                "        logits = model._model(input_ids=input_ids.repeat_interleave(beams, dim=0),\n"
                "                              attention_mask=mask, decoder_input_ids=tokens).logits")

ROUTES = {
    "1: a table of the public answers": table_lookup,
    "1: a table of the public answers, replayed through decode": table_replayed,
    "2: generate run early, replayed through decode": generated_early_and_replayed,
    "2: generate by a copied code object": lambda: generate_copied(with_beam_search=False),
    "2: generate and its beam search by copied code objects": lambda: generate_copied(with_beam_search=True),
    "3: logits of a full forward pass, decode for the log": lambda: variant(FULL_FORWARD),
    "5: the cache dropped": lambda: variant(NO_CACHE),
    "5: the whole prefix fed with the cache": lambda: variant(PREFIX),
    "5: no padding after EOS": lambda: variant(NO_PADDING),
    "5: EOS taken as any token": lambda: variant(*IGNORES_EOS),
}


@pytest.mark.parametrize("route", ROUTES)
def test_a_route_earns_at_most_a_third_on_the_drawn_cases(route):
    outcome = graded(ROUTES[route](), SEED)
    assert at_most_a_third(outcome), f"{route}: {outcome.line()}"
    assert outcome.status != ERROR or "raised" in outcome.message, outcome.line()  # Error: only what raised
    if route.startswith(("3", "5")):  # the feedback says what is wrong, not only how few cases are right
        assert flagged(outcome) or "first differs" in outcome.message, f"{route}: {outcome.line()}"


def test_a_replayed_table_is_right_where_it_was_copied_from():
    """The public cases (check() runs them) give the table full marks: the drawn cases are what keeps it
    from the grade."""
    from test_pasting_lessons import DECODING_QUESTION, score

    assert score(DECODING_QUESTION, table_replayed()).status == CORRECT


@pytest.mark.parametrize("feed", ["uncached", "prefix"])
def test_the_slips_give_other_tokens_on_the_drawn_models_themselves(feed):
    """Even with the call log not checked, a decoder that drops the cache or feeds the whole prefix with it
    gets other tokens than generate() on every drawn case that needs the cache."""
    needs_cache = {topic.name for topic in TOPICS if topic.needs_cache}
    for case in drawn_question(SEED).cases:
        kwargs = dict(case.kwargs)
        if case.topic in needs_cache:
            assert _decoded(lambda *a: beam_search(*a, feed=feed), kwargs) != _generated(kwargs), case.topic
