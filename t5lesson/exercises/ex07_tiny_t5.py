"""Exercise 07: lesson 7, a whole tiny T5 (where the bias is, the cache, reading learned tables,
beam search with the cache).

Notebook: solutions/07_tiny_t5.ipynb (source), exercises/07_tiny_t5.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); to change an answer, recompute its
hash with `t5grade hash QUESTION ANSWER --exercise 07_tiny_t5`.

The code question (q5) goes one step beyond lesson 7's greedy decoding: beam search with two
beams. It is graded like exercise 6's module question: in the learner's kernel,
`t5lesson.exercises.tiny_t5_driver` runs their `beam_decode` on a seeded transformers T5 behind
lesson 7's encode/decode interface and checks from its call log that they decoded with the
cache; here, `reference_beams` runs transformers' `generate(num_beams=2)` on the same weights,
and the tokens up to each row's end token must agree exactly. The cases' weights and prompts
are chosen so that no two candidate scores that decide a beam lie within 1e-3 of each other
(tests/grading/test_beam_question.py measures it), so the answer is the same on every CPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..grading.questions.kinds import NOT_ATTEMPTED, Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.module import Expected, ModuleCode
from . import Exercise, id_of_module
from .tiny_t5_driver import SHORT

__all__ = ["EXERCISE", "GENERATE", "reference_beams", "reference_greedy", "diagnose"]

# what the question's beam search is: transformers' generate() with these settings
GENERATE = {"num_beams": 2, "do_sample": False, "early_stopping": True, "length_penalty": 0.0}


def _generate(seed, prompts, max_new_tokens, eos_scale, **settings):
    import torch

    from ..seq2seq import padded, random_model

    model = random_model(seed, eos_scale)
    input_ids, attention_mask = padded(prompts)
    with torch.no_grad():
        tokens = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                                **settings)
    return tokens.double().numpy()


def _up_to_end(tokens: np.ndarray, max_new_tokens: int) -> np.ndarray:
    """One width for every answer (the driver fills a learner's rows alike), and NaN after each row's end
    token: what follows it is padding, and not compared."""
    from ..seq2seq import EOS

    out = np.full((tokens.shape[0], 1 + max_new_tokens), float(SHORT))
    out[:, :tokens.shape[1]] = tokens
    for row in out:
        ends = np.flatnonzero(row[1:] == EOS)
        if ends.size:
            row[ends[0] + 2:] = np.nan
    return out


def reference_beams(seed, prompts, max_new_tokens, eos_scale=1.0) -> Expected:
    """What `generate(num_beams=2)` gives on the case's weights, up to each row's end token, exactly."""
    tokens = _generate(seed, prompts, max_new_tokens, eos_scale, **GENERATE)
    return Expected(_up_to_end(tokens, max_new_tokens), rtol=0.0, atol=0.0)


def reference_greedy(seed, prompts, max_new_tokens, eos_scale=1.0) -> np.ndarray:
    """Greedy decoding (one beam) on the same weights, up to each row's end token."""
    return _up_to_end(_generate(seed, prompts, max_new_tokens, eos_scale, do_sample=False, num_beams=1), max_new_tokens)


def diagnose(kwargs, got: np.ndarray, expected: Expected) -> list[tuple[tuple, str]]:
    """One sentence: greedy decoding's answer is named as such; else the first token that differs."""
    want = expected.values
    greedy = reference_greedy(**dict(kwargs))
    if np.array_equal(got[np.isfinite(greedy)], greedy[np.isfinite(greedy)]):
        return [(("greedy",), "these are greedy decoding's tokens (one beam): keep the two best continuations at "
                              "every step, and return the best finished hypothesis.")]
    care = np.isfinite(want)
    bad = np.argwhere(care & (got != np.where(care, want, 0)))
    if not bad.size:
        return []
    row, token = (int(i) for i in bad[0])
    yours = "no token (the row is shorter)" if got[row, token] == SHORT else f"token {int(got[row, token])}"
    return [(("token",), f"row {row} first differs at position {token} (position 0 holds the start token): "
                         f"generate(num_beams=2) gives token {int(want[row, token])}, your function {yours}.")]


@dataclass(frozen=True)
class DecodingCode(ModuleCode):
    """A function that decodes with a model's encode/decode; run in the kernel by a driver, compared here."""

    answer_kind = "a function"

    def not_attempted(self):
        return self.outcome(NOT_ATTEMPTED, 0, f"write the body of {self.name} in the answer cell.")


CASE_SPECS = (
    (dict(seed=4, prompts=("31415",), max_new_tokens=12, eos_scale=2.0), "one string"),
    (dict(seed=1, prompts=("4071952", "11"), max_new_tokens=12, eos_scale=2.0), "a padded batch of two"),
    (dict(seed=7, prompts=("31415", "27", "9999999", "0"), max_new_tokens=12, eos_scale=-6.0),
     "rows whose hypotheses end after a few tokens"),
    (dict(seed=2, prompts=("27", "9999999", "0"), max_new_tokens=12, eos_scale=-3.0),
     "an end after one token beats every longer hypothesis"),
    (dict(seed=4, prompts=("31415", "27", "9999999", "0"), max_new_tokens=12),
     "one string ends at once, three go on to the budget"),
    (dict(seed=1, prompts=("123456789012",), max_new_tokens=1), "one new token only"),
    (dict(seed=9, prompts=("8", "80", "808"), max_new_tokens=12), "a longer answer"),
    (dict(seed=10, prompts=("31415", "27", "9999999", "0"), max_new_tokens=12, eos_scale=-6.0),
     "four strings, their ends at different steps"),
)


def _cases() -> tuple[Case, ...]:
    return tuple(Case((), tuple(sorted(kwargs.items())), topic) for kwargs, topic in CASE_SPECS)


def _digits(rng, like: str) -> str:
    """A digit string as long as `like`, drawn."""
    return "".join(str(d) for d in rng.integers(0, 10, size=len(like)))


def hidden_cases(rng) -> tuple[Case, ...]:
    """The grading cases: each public case's batch shape, budget and end-token scale, with drawn model
    seeds (from 1000 on, none of the public ones) and drawn prompts of the same lengths."""
    cases = []
    for kwargs, topic in CASE_SPECS:
        drawn = dict(kwargs, seed=int(rng.integers(1000, 10 ** 6)),
                     prompts=tuple(_digits(rng, p) for p in kwargs["prompts"]))
        cases.append(Case((), tuple(sorted(drawn.items())), topic))
    return tuple(cases)

EXERCISE = Exercise(
    id=id_of_module(__name__), salted=True,
    title="Exercise 7: a whole tiny T5",
    questions=(
        MultipleChoice(
            id="q1", points=2, objectives=(7,), name="answer_q1", multiple=True,
            options="ABCDE", key="38da52be0c8c5d7df47ccacc",
            hints=(
                "go through one encoder block and one decoder block sub-layer by sub-layer: which of them "
                "compare two positions of the same sequence?",
                "a block that owns no table still adds a bias: the one block 0 computed and handed up.",
            ),
            feedback={
                "58db55ba23e4d4ce1354f915": "the decoder's upper blocks are like the encoder's: they own no "
                                            "table, and still add a bias.",
                "9cb1ccdc7d498269411aa3f0": "cross-attention compares a decoder position with an encoder "
                                            "position: no offset between them is defined.",
                "10158681c1be3bd96a19bcae": "owning a table and adding a bias are not the same thing.",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(7,), name="answer_q2",
            key="2b304520d20e0166d502680c",
            hints=(
                "count the tables first: how many blocks own one?",
                "each table is [num_buckets, num_heads].",
            ),
            feedback={
                "7936a0ceff0ef97e270a5d59": "that counts one table per self-attention layer (UMT5); T5 has one "
                                            "per stack.",
                "eff16f199627d37bcc64ef37": "that counts a table for every attention, cross-attention too.",
                "3c8f09889054a591880f6760": "one stack only: the decoder has its own table.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(7,), name="answer_q3",
            key="41bb76488450ff67be490052",
            hints=(
                "the cache holds keys of shape [batch, heads, tokens so far, d_kv].",
                "after the step, the new token's key is in the cache too.",
            ),
            feedback={
                "a3002f571cd89727118e384a": "that is the cache before the step: the new token's key is appended.",
                "a0a6f5c10a91521095828a8e": "count the tokens: six cached, plus the one fed in this step.",
                "d3d4a0f860bb8af3373ed3a1": "that is one token's keys; the cache keeps every token's.",
            },
        ),
        MultipleChoice(
            id="q4", points=2, objectives=(6, 7), name="answer_q4", multiple=True,
            options="ABCD", key="10f34b4755a03cb3fdab1b9a",
            hints=(
                "the offset is key minus query: where is the key of offset +1?",
                "lesson 5: a bucket no training pair reached keeps its starting value.",
            ),
            feedback={
                "8bd86948900fd02dc3dfe05a": "also ask which buckets a 20-token input uses that 9-token training "
                                            "inputs never reached.",
                "9bd68612f1f53f7b9e3dcc8d": "read the sign of the offset again: key position minus query position.",
                "4dbfc476187f317faab9819d": "which table would cross-attention read? It has none.",
            },
        ),
        DecodingCode(
            id="q5", points=3, objectives=(7,), name="beam_decode",
            reference="t5lesson.exercises.ex07_tiny_t5:reference_beams",
            diagnose="t5lesson.exercises.ex07_tiny_t5:diagnose",
            driver="t5lesson.exercises.tiny_t5_driver",
            cases=_cases(), hidden=f"{__name__}:hidden_cases", case_timeout=20.0, what="generate(num_beams=2)",
            blocked=("transformers.generation.utils:GenerationMixin.generate", "t5lesson.lessons.tiny_t5:greedy"),
            hints=(
                "repeat each string's encoder output and mask twice (repeat_interleave), one row per beam; "
                "both beams start from the start token, the second with score -inf, so the first step "
                "expands one beam only.",
                "each step: log_softmax of the last logits plus the beam's score, flattened to [batch, 2 * vocab]; "
                "topk(4) gives the candidates, and index // vocab the beam each extends. The best two that do not "
                "end in EOS are the new beams: pick their cache rows, tensor[rows], for the next call.",
                "a candidate ending in EOS is finished only when it ranks first or second; at the last step the "
                "best two are finished whatever they end in. A string with two finished hypotheses is done: "
                "return the higher-scoring one, start token first.",
            ),
        ),
        FreeText(
            id="q6", points=3, objectives=(6, 7), name="q6-answer",
            rubric=(
                ("measured kept apart from inferred, with what was measured: whole answers fail from 9 and 10 "
                 "digits on, where no pair or almost none reads an untrained bucket; at 16 and 32 digits only the "
                 "first answer tokens are mostly right; both stacks' untrained buckets (encoder 6, 7, 14, 15; "
                 "decoder 9 to 15) are read by about a fifth of the pairs at 16 digits and half at 32", 1),
                ("the intervention read right: with every bucket trained (8 buckets, max_distance 10) the model "
                 "gains a little at 9 and 10 digits and nothing at 16 and 32, where answers stop too early; so "
                 "untrained buckets are at most a second cause, and the main one (inferred) is a reversal learned "
                 "for the training lengths only, where to stop included. Saying cross-attention finds positions "
                 "'by content alone' earns nothing: it reads the position the self-attention biases wrote into "
                 "the hidden states", 1),
                ("a concrete further change with a predicted effect: train on a mix of lengths up to the test "
                 "length, with what it would and would not fix (lengths beyond the new training range), or "
                 "another test that separates the causes, with what each outcome would mean", 1),
            ),
        ),
    ),
)
