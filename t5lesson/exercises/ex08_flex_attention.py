"""Exercise 08 (lesson 8): T5's attention at scale, the memory of a materialised tensor, the bias in a fused kernel.

Notebook: solutions/08_flex_attention.ipynb (source), exercises/08_flex_attention.ipynb.
Four checked questions (two numbers, two choices) and one written answer for the instructor. The
code of the lesson, `flex_attend`, is its your-turn cell; the exercise asks what the lesson's
arithmetic and sources support.

Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`, `Numeric.float_key`); recompute one
with `t5grade hash QUESTION ANSWER [--tolerance T] --exercise 08_flex_attention`.
"""
from __future__ import annotations

from ..grading.questions.kinds import FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE"]

EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 8: T5's attention at scale",
    questions=(
        Numeric(
            id="q1", points=1, objectives=(7,), name="answer_q1", tolerance=0.01,
            key="64550c3e750927949ef73733",
            hints=(
                "count the numbers first: one per sequence, head, query and key.",
                "bf16 stores a number in 2 bytes; a GiB is 2 ** 30 bytes.",
            ),
            feedback={
                "2eb31007b79417515b59f959": "that is the size in fp32, 4 bytes a number; the question asks for bf16.",
                "6b5cfe84105fd44202bd76d4": "that is one sequence; the batch holds two.",
                "d514d500ed0c62d12d1e7c43": "that is in MiB; the question asks for GiB (2 ** 30 bytes).",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(1, 7), name="answer_q2",
            key="20b205e70d9f47d26ec2a78f",
            hints=(
                "how many keys does the new query see, counting itself, and how many queries are there?",
                "the vector holds one entry per distinct offset: q_len + k_len - 1 of them.",
            ),
            feedback={
                "e1a22b600bd2ba2bdb343173": "that is 2L - 1 for a full pass over 4,001 tokens; here only one query "
                                            "is new.",
                "048c4a1336b1d7de34127d21": "count the new token's own key too: offset 0.",
                "0993fb3093bb5bf800c822de": "count the keys again: 4,000 cached and the new one.",
            },
        ),
        MultipleChoice(
            id="q3", points=1, objectives=(7,), name="answer_q3",
            options="ABCD", key="e4b60f236764d4ba2152b540",
            hints=(
                "what does a fused kernel keep in memory, and what would it have to read to add T5's bias?",
                "ALiBi's bias is a formula of the two positions; T5's comes from a learned table through buckets.",
            ),
            feedback={
                "b042a7cef60eb61a9e030db9": "gradients are not the obstacle the lesson's sources name; ask what the "
                                            "kernel would have to read.",
                "67b6859301933481f277beca": "T5's bias depends only on the offset and the head, not on the tokens.",
                "2a6fd2f0a5bdf260dc0c3502": "T5 shares one table per stack; and the obstacle is the same for one "
                                            "table as for many.",
            },
        ),
        MultipleChoice(
            id="q4", points=1, objectives=(7,), name="answer_q4",
            options="ABCD", key="f0cd942f4eee77b9b74f7b8e",
            hints=(
                "which model's self-attention layers are all built with a table of their own?",
                "lesson 8, section 6, names the class and the argument it is built with.",
            ),
            feedback={
                "8f8bbdc807ed7a82a1c7b811": "T5 builds a table in block 0 of each stack only.",
                "ab0de2a2d2494bc11c5b5b44": "mT5 builds its blocks as T5 does: a table in block 0 only.",
                "662134eb98ee62997cd38363": "T5Gemma has no bias table: it uses rotary position embeddings.",
            },
        ),
        FreeText(
            id="q5", points=2, objectives=(7,), name="q5-answer",
            rubric=(
                ("the cause, with a number: the eager path materialises [batch, heads, L, L] tensors (the bias, the "
                 "scores, the weights), 4 GiB each in bf16 at 8 heads and 16,384 tokens, so memory, not arithmetic, "
                 "is the limit; FlashAttention cannot take T5's bias (flash-attention #332)", 0.75),
                ("the remedy: the bias as a FlexAttention score_mod over the per-offset vector (q_len + k_len - 1 "
                 "values per head), the masks as a mask_mod, scale=1.0, compiled on the GPU; what the stored H200 "
                 "runs measured for it (e.g. 0.13 GiB against 24.1 GiB, or 3.6 ms against about 200 ms per layer)",
                 0.75),
                ("what to check before trusting it: outputs against the eager layer on padding and cached steps, "
                 "bf16 precision (T5 was trained in bfloat16), and that the figures are one machine's, to be "
                 "measured again on theirs", 0.5),
            ),
            checklist=(
                "Does your answer say what runs out at 16,384 tokens, with a number, and why a fused kernel such as "
                "FlashAttention does not solve it for T5?",
                "Does it say what to use instead, how the bias and the masks go in, and what the stored "
                "measurements found?",
                "Does it say what to check before relying on it, and what the stored figures do not tell them?",
            ),
        ),
    ),
)
