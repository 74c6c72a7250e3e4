"""Exercise 02 (lesson 2): where T5 put 1/sqrt(d), what folding gives and what it does not, the bias's scale.

Notebook: solutions/02_where_sqrt_d_went.ipynb (source), exercises/02_where_sqrt_d_went.ipynb.
Lesson 1's numbers and code (the variance of q.k, a softmax weight, the entropy statistic, the
gradient of a saturated row, the masked score matrix) are exercise 01's.

Keys are salted hashes (`t5lesson.grading.questions.answer_hash`, `Numeric.float_key`); recompute one
with `python -m t5lesson.grading.questions hash|float-key ... --exercise ID`.
"""
from __future__ import annotations

from ..questions import FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE"]

EXERCISE = Exercise(
    id=id_of_module(__name__), salted=True,
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
            options="ABCDE", multiple=True, key="1d9128a89b6dd6e1c57bba18",
            hints=(
                "judge each statement on its own: the initialisation, the exact identity, training, and fp16.",
                "for C, ask what Adam does with a constant factor in the gradient; for D, where the reported "
                "overflow happened: in the logits, or in the hidden states?",
            ),
            feedback={
                "5012d90784d6e46955b3a3a5": "not complete: what does adding u do to a key's odds?",
                "af9d395445e7db3b5a60507a": "Adam's step size ignores a constant factor in the gradient; does "
                                            "that keep the folded and scaled heads the same?",
                "ca86f9c235c2da89c9f279b1": "where did the reported fp16 overflow happen: in the logits, or in "
                                            "the hidden states?",
                "e30847cd34bea3fb7f19d7c8": "not complete: look at the identity of lesson 2, section 2.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(4,), name="answer_q3", tolerance=1e-3,
            key="631779c5b1f30c2020215c23",
            hints=(
                "adding b to one key's logit multiplies its odds against any other key by e^b.",
                "inside the scaling, what actually gets added to the logit is u / sqrt(d).",
            ),
            feedback={
                "30e8aed3d1f4c916e708f036": "that is T5's factor, for a bias added on the unscaled scale.",
                "96b14519c3a052e774fee483": "divide by sqrt(d), not by d.",
            },
        ),
        Numeric(
            id="q4", points=1, objectives=(4,), name="answer_q4",
            tolerance=1e-5,
            key="e140e67495ee2cdc87662167",
            hints=(
                "the query projection's std carries one factor for d_model and one for d_kv.",
                "std = (d_model * d_kv) ** -0.5",
            ),
            feedback={
                "b6accc0168aad665a67fd363": "that is d_model ** -0.5, the std of W_k; W_q has the extra d_kv factor.",
                "4bd32fef2674af2dab0adcb1": "that is d_kv ** -0.5 alone; the d_model factor is missing.",
                "4c54a630a3017aab314eb4cb": "that is a variance; the question asks for the standard deviation.",
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
