"""Exercise 02 (lesson 2): where T5 put 1/sqrt(d), what folding gives and what it does not, the bias's scale.

Notebook: solutions/02_where_sqrt_d_went.ipynb (source), exercises/02_where_sqrt_d_went.ipynb.
Lesson 1's numbers and code (the variance of q.k, a softmax weight, the entropy statistic, the
gradient of a saturated row, the masked score matrix) are exercise 01's.

Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`, `Numeric.float_key`); recompute one
with `t5grade hash QUESTION ANSWER [--tolerance T]`.
"""
from __future__ import annotations

from ..grading.questions.kinds import FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE"]

EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 2: where T5 put $\\sqrt{d}$, and what that changes",
    questions=(
        FreeText(
            id="q1", points=3, objectives=(3, 4), name="q1-answer",
            rubric=(
                ("why the 1/sqrt(d) exists: Var(q.k) grows like d, so unscaled logits saturate the softmax and pass "
                 "little gradient as d grows, supported by a number from the lessons", 1),
                ("how T5 compensates: W_q's initialisation carries the extra d_kv^-1/2, so the first logits are as "
                 "in scaled attention, and under Adafactor's parameter-relative steps the two train alike", 1),
                ("what can still go wrong: under Adam the folded query effectively learns faster and nothing bounds "
                 "the logits afterwards, which matters in low precision", 0.5),
                ("the bias: added on the unscaled logit scale, u shifts a key's log-odds by u in a head of any size; "
                 "inside a 1/sqrt(d) it would need to be sqrt(d) times larger", 0.5),
            ),
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(4,), name="answer_q2",
            options="ABCDE", multiple=True, key="8fc6adfb6085097f780e7ac0",
            hints=(
                "judge each statement on its own: the initialisation, the exact identity, training, and fp16.",
                "for C, ask what Adam does with a constant factor in the gradient; for D, where the reported "
                "overflow happened: in the logits, or in the hidden states?",
            ),
            feedback={
                "4d2b1d530ca3f36521a44467": "not complete: what does adding u do to a key's odds?",
                "c1c110ad11f731c5c0f31b73": "Adam's step size ignores a constant factor in the gradient; does "
                                            "that keep the folded and scaled heads the same?",
                "dd842b94f5240b7ad8a93eec": "where did the reported fp16 overflow happen: in the logits, or in "
                                            "the hidden states?",
                "fda82bc894392f0cedb8fabe": "not complete: look at the identity of lesson 2, section 2.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(4,), name="answer_q3", tolerance=1e-3,
            key="ee14d007f3bcb8c74519817e",
            hints=(
                "adding b to one key's logit multiplies its odds against any other key by e^b.",
                "inside the scaling, what actually gets added to the logit is u / sqrt(d).",
            ),
            feedback={
                "0cc82423980e8031d831e7c3": "that is T5's factor, for a bias added on the unscaled scale.",
                "5625fcd9d8ffcb87db14d7c9": "divide by sqrt(d), not by d.",
            },
        ),
        Numeric(
            id="q4", points=1, objectives=(4,), name="answer_q4",
            tolerance=1e-5,
            key="51444a5880a9b9af16dca77f",
            hints=(
                "the query projection's std carries one factor for d_model and one for d_kv.",
                "std = (d_model * d_kv) ** -0.5",
            ),
            feedback={
                "93e9602dd8fe9e9ae38d07d4": "that is d_model ** -0.5, the std of W_k; W_q has the extra d_kv factor.",
                "b7a20893a6e56a5f61478eca": "that is d_kv ** -0.5 alone; the d_model factor is missing.",
                "b2b3b39a1f9bf0b9c177ecad": "that is a variance; the question asks for the standard deviation.",
            },
        ),
        FreeText(
            id="q5", points=2, objectives=(4,), name="q5-answer",
            rubric=(
                ("what is exactly true: unscaled attention with W_q / sqrt(d_kv) is the same function as scaled "
                 "attention with W_q, and T5 starts from that point", 0.5),
                ("what is not true with AdamW: Adam's steps ignore the gradient's scale, so the folded query moves "
                 "about sqrt(d_kv) times faster (a larger effective learning rate); only Adafactor's relative steps "
                 "keep the two alike", 0.75),
                ("what to watch in float16: T5's reported overflows are in the hidden states after the feed-forward "
                 "block and residual additions, not in q.k; keep the clamp or use bfloat16, and watch activation "
                 "and logit magnitudes", 0.75),
            ),
        ),
    ),
)
