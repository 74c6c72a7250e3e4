"""Exercise 02 (lesson 2): where T5 put 1/sqrt(d), what folding gives and what it does not, the bias's scale.

Notebook: solutions/02_where_sqrt_d_went.ipynb (source), exercises/02_where_sqrt_d_went.ipynb.
Lesson 1's numbers and code (the variance of q.k, a softmax weight, the entropy statistic, the
gradient of a saturated row, the masked score matrix) are exercise 01's.

Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`, `Numeric.float_key`); recompute one
with `t5grade hash QUESTION ANSWER [--tolerance T] --exercise ID`.
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
                ("why the 1/sqrt(d) exists: Var(q.k) grows like d, so unscaled logits saturate the softmax (near "
                 "one-hot rows whose Jacobian with respect to the logits shrinks: every key but the top one gets "
                 "almost no gradient), supported by a number from the lessons", 0.75),
                ("the motivation, kept apart from inference: the paper gives no reason and no ablation; the code's "
                 "stated one is that the scale is folded into the query initialiser, equivalent under Adafactor "
                 "(flaxformer/T5X); the compute it saves is negligible", 0.5),
                ("how T5 compensates: W_q's initialisation carries the extra d_kv^-1/2, so the first logits are as "
                 "in scaled attention, and under Adafactor's parameter-relative steps the two train alike", 0.75),
                ("what can still go wrong: under Adam the folded query effectively learns faster and nothing bounds "
                 "the logits afterwards, which matters in low precision", 0.5),
                ("the bias: added on the unscaled logit scale, u shifts a key's log-odds by u in a head of any size; "
                 "inside a 1/sqrt(d) it would need to be sqrt(d) times larger; it does not stand in for the scale",
                 0.5),
            ),
            checklist=(
                "Does your answer say why standard attention divides by sqrt(d), what an unscaled head of large d "
                "would do to the softmax and to its gradients, and back that with a number from lesson 1?",
                "Does it say what motivated the choice, and keep apart what the paper says, what the code says and "
                "what you infer yourself?",
                "Does it say how T5 compensates, at initialisation and under its optimiser?",
                "Does it say what can still go wrong when the optimiser or the precision changes?",
                "Does it say where the bias is added, what that means for how large a useful bias must be, and "
                "whether the bias takes the place of the scale?",
            ),
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(4,), name="answer_q2",
            options="ABCDE", multiple=True, key="1d9128a89b6dd6e1c57bba18",
            hints=(
                "judge each statement on its own: the initialisation, the exact identity, training, and fp16.",
                "for C, ask what Adam does with a constant factor in the gradient; for D, look up which tensor "
                "lesson 2 says the reported float16 overflows were found in.",
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
                "the key projection W_k starts at std d_model ** -0.5, as any projection of unit-variance inputs "
                "would; W_q starts smaller than that.",
                "W_q carries one extra factor: the 1/sqrt(.) that scaled attention would have applied to q.k. "
                "Which dimension is that square root of, for one head?",
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
            checklist=(
                "Does your answer say what is exactly true about the folded head and the scaled head, and from "
                "where T5's training starts?",
                "Does it say what changes under AdamW, and why: what Adam does with the gradient's scale, and what "
                "that means for how fast the folded query learns?",
                "Does it say where T5's float16 problems were actually found, and what to keep or watch?",
            ),
        ),
        MultipleChoice(
            id="q6", points=1, objectives=(4,), name="answer_q6",
            options="ABCDE", key="a4463d9fb2477f7f032ce008",
            hints=(
                "sort the options into three piles: what the paper says, what the code says, and what someone "
                "inferred or assumed.",
                "the paper's list of how T5 differs from the Transformer of Vaswani et al. (section 2.1) does not "
                "mention the scale at all. Which option gives a reason the code states where it draws W_q?",
            ),
            feedback={
                "45ce66dc961498d1b61cb79d": "the paper's experiments (section 3) vary objectives, architectures and "
                                            "data, but none of them compares scaled with unscaled attention.",
                "95a82ce9cb9a83b78ba83ee8": "the paper never mentions the scale, and a term that ignores the tokens' "
                                            "content cannot keep q.k in range (question 7 asks why).",
                "92bc1ef6dccb2aa729f4f34c": "one multiply per query entry per layer is a negligible share of a layer's "
                                            "work, and the paper gives no reason at all.",
                "f4bcf8c622d0419584f73334": "how far a model extrapolates depends on its position bias, and the paper "
                                            "makes no claim about the scale and length.",
            },
        ),
        MultipleChoice(
            id="q7", points=1, objectives=(4,), name="answer_q7",
            options="ABCDE", key="989e2f9756f11ebcef57ebc0",
            hints=(
                "the 1/sqrt(d) controls how widely the logits q.k spread across keys. What does that spread depend "
                "on, and what does the bias u depend on?",
                "a term that does not depend on the tokens' content cannot make the spread of q.k smaller. Which "
                "part of a fresh T5 does make it smaller, and which option says so?",
            ),
            feedback={
                "aea6d6bebc5e050c3b42bc31": "training can move u, but u is the same for every pair at one offset "
                                            "whatever the tokens are; the spread that 1/sqrt(d) controls comes from "
                                            "q.k, which depends on them.",
                "7a3eba62e4bcccbfae28514d": 'in T5 nothing is divided: u is added to the raw q.k (lesson 1).',
                "941fa6511606cab2b78037eb": "a table per layer (as in UMT5) still adds numbers that ignore the content;"
                                            " more tables do not make q.k smaller.",
                "cf353e30acfd464b298421da": "the encoder's self-attention has a bias table too; only cross-attention "
                                            "has none.",
            },
        ),
    ),
)
