"""Exercise 07: lesson 7, a whole tiny T5 (where the bias is, the cache, reading learned tables,
cached greedy decoding).

Notebook: solutions/07_tiny_t5.ipynb (source), exercises/07_tiny_t5.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); to change an answer, recompute its
hash with `t5grade hash QUESTION ANSWER --exercise 07_tiny_t5`.

The code question (q5) is graded like exercise 6's module question: in the learner's kernel,
`t5lesson.exercises.tiny_t5_driver` runs their `greedy_decode` on a seeded transformers T5
behind lesson 7's encode/decode interface and checks from its call log that they decoded with
the cache; here, `reference_greedy` runs transformers' `generate()` on the same weights, and the
tokens must agree exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..grading.questions.kinds import NOT_ATTEMPTED, Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.module import Expected, ModuleCode
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_greedy"]


def reference_greedy(seed, prompts, max_new_tokens, eos_scale=1.0) -> Expected:
    """What `generate()` (greedy: no sampling, one beam) gives on the case's weights, exactly."""
    import torch

    from ..seq2seq import padded, random_model

    model = random_model(seed, eos_scale)
    input_ids, attention_mask = padded(prompts)
    with torch.no_grad():
        tokens = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                                do_sample=False, num_beams=1)
    return Expected(tokens.double().numpy(), rtol=0.0, atol=0.0)


@dataclass(frozen=True)
class DecodingCode(ModuleCode):
    """A function that decodes with a model's encode/decode; run in the kernel by a driver, compared here."""

    answer_kind = "a function"

    def not_attempted(self):
        return self.outcome(NOT_ATTEMPTED, 0, f"write the body of {self.name} in the answer cell.")


def _cases() -> tuple[Case, ...]:
    specs = [
        (dict(seed=0, prompts=("31415",), max_new_tokens=6), "one string"),
        (dict(seed=1, prompts=("27", "9999999", "0"), max_new_tokens=10), "a padded batch"),
        (dict(seed=0, prompts=("31415", "27", "9999999", "0"), max_new_tokens=12, eos_scale=-3.0),
         "some rows end at once: padding after their end token"),
        (dict(seed=2, prompts=("31415", "27", "9999999", "0"), max_new_tokens=12, eos_scale=-6.0),
         "every row ends at the first step: stop there"),
        (dict(seed=5, prompts=("31415", "27", "9999999", "0"), max_new_tokens=10, eos_scale=-6.0),
         "one row ends half-way"),
        (dict(seed=3, prompts=("123456789012",), max_new_tokens=1), "one new token only"),
        (dict(seed=4, prompts=("8", "80", "808"), max_new_tokens=16), "a longer answer"),
    ]
    return tuple(Case((), tuple(sorted(kwargs.items())), topic) for kwargs, topic in specs)

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
            id="q5", points=3, objectives=(7,), name="greedy_decode",
            reference="t5lesson.exercises.ex07_tiny_t5:reference_greedy",
            driver="t5lesson.exercises.tiny_t5_driver",
            cases=_cases(), case_timeout=20.0, what="generate()",
            blocked=("transformers.generation.utils:GenerationMixin.generate", "t5lesson.lessons.tiny_t5:greedy"),
            hints=(
                "encode once; then start from the start token (0) and call model.decode with only the newest "
                "token and the cache the previous call returned.",
                "take the argmax of the last position's logits; a row that has produced the end token (1) gets "
                "padding (0) from then on.",
                "stop when every row has ended, or after max_new_tokens new tokens; return the start token too.",
            ),
        ),
        FreeText(
            id="q6", points=3, objectives=(6, 7), name="q6-answer",
            rubric=(
                ("measured vs inferred kept apart: the model is right at the trained lengths, only the first "
                 "answer tokens survive at 2x and 4x; the far buckets (offsets 10 and more) got no training pairs "
                 "and kept their starting values", 1),
                ("a second cause named: longer inputs spread every softmax over more keys, and cross-attention "
                 "has no bias, so it must find the right input position by content alone", 1),
                ("a concrete change with a predicted effect: train on longer strings (or a mix of lengths up to "
                 "the test length), or choose max_distance inside the training length so every bucket is "
                 "trained, and what that would and would not fix", 1),
            ),
        ),
    ),
)
