"""Exercise 02: lesson 1's numbers and code (part A) and lesson 2's folding (part B).

Notebook: solutions/02_where_sqrt_d_went.ipynb (source), exercises/02_where_sqrt_d_went.ipynb.
Exercise 01 (solutions/01_unscaled_scores.ipynb) already covers picking T5's score and naming
the two changes; this one adds the variance of q.k, a softmax weight, the entropy statistic,
the masked score matrix, the folded initialisation and the placement of the bias.

Keys are salted hashes (`t5lesson.grading.questions.answer_hash`, `Numeric.float_key`); recompute one
with `python -m t5lesson.grading.questions hash|float-key ...`. The two code questions return floats
and float matrices, which the integer-only `Code` kind cannot compare, so they use `FloatCode`
(`t5lesson.grading.plain_code`): `PlainCode`'s comparison, with messages about arrays.
"""
from __future__ import annotations

import numpy as np

from ..plain_code import FloatCode
from ..questions import Case, FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_entropy", "reference_scores"]


# --- references, called in the grader's process with the plain (list) arguments ----------------

def reference_entropy(weights):
    """Entropy in nats of one row of probabilities (t5lesson.softmax_entropy)."""
    from ...saturation import softmax_entropy

    return float(softmax_entropy(np.asarray(weights, dtype=float)))


def reference_scores(q, k, bias, mask):
    """T5's score matrix q k^T + bias, with masked entries at the most negative float."""
    from ...scores import attention_scores

    q, k, bias = (np.asarray(a, dtype=float) for a in (q, k, bias))
    return attention_scores(q, k, bias=bias, mask=np.asarray(mask, dtype=bool))


# --- cases ------------------------------------------------------------------------------------

def _row(values) -> tuple:
    return tuple(float(v) for v in values)


def _entropy_cases() -> tuple[Case, ...]:
    softmax16 = np.exp(np.linspace(-2.0, 1.0, 16))
    softmax16 = softmax16 / softmax16.sum()
    rows = [
        ((0.25, 0.25, 0.25, 0.25), "uniform weights over 4 keys"),
        ((0.0, 1.0, 0.0), "one-hot weights (0 log 0 counts as 0)"),
        ((0.5, 0.5, 0.0, 0.0), "weights with zeros"),
        ((0.7, 0.2, 0.1), "uneven weights"),
        ((1.0,), "a single key"),
        ((1.0 - 1e-9, 1e-9), "almost one-hot"),
        (_row(np.round(softmax16, 15)), "a softmax row over 16 keys"),
    ]
    return tuple(Case((row,), (), topic) for row, topic in rows)


def _matrix(a) -> tuple:
    return tuple(_row(r) for r in np.atleast_2d(a))


def _score_cases() -> tuple[Case, ...]:
    rng = np.random.default_rng(2)
    r = lambda *shape: np.round(rng.standard_normal(shape), 2)
    causal3 = np.tril(np.ones((3, 3)))
    padded = np.array([[1, 1, 1, 0], [1, 1, 1, 0]])
    mixed = np.array([[1, 0, 1, 1], [0, 1, 1, 0]])
    specs = [
        ((2, 3, 2), np.ones((2, 3)), "no mask, d = 2"),
        ((3, 3, 4), causal3, "a causal mask, d = 4"),
        ((2, 4, 3), padded, "the last key is padding"),
        ((2, 4, 8), mixed, "a mixed mask, d = 8"),
        ((1, 1, 1), np.ones((1, 1)), "one query, one key, d = 1"),
        ((4, 4, 16), np.tril(np.ones((4, 4))), "a causal mask, d = 16"),
    ]
    cases = []
    for (n_q, n_k, d), mask, topic in specs:
        q, k, bias = r(n_q, d), r(n_k, d), r(n_q, n_k)
        cases.append(Case((_matrix(q), _matrix(k), _matrix(bias), tuple(tuple(int(m) for m in row) for row in mask)),
                          (), topic))
    return tuple(cases)


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 2: what dropping $\\sqrt{d}$ does, and where T5 put it",
    questions=(
        Numeric(
            id="q1", points=1, name="answer_q1", key="74114d953008d1bf4b4497c6",
            hints=(
                "q.k is a sum of d independent products q_m k_m; variances of independent terms add.",
                "the variance of a product of two independent zero-mean variables is the product of their variances.",
            ),
            feedback={
                "557f30ae92289bd12b547079": "each product q_m k_m has variance sigma^2 times sigma^2, not sigma^2.",
                "a9bb416bb747020552cef62c": "that would be right for unit-variance entries; these have variance 0.25.",
                "ccecfaf6c5cb66d48eec759c": "that is a standard deviation; the question asks for the variance.",
                "1ffdbdebe306be0a814b37bc": "you used the standard deviation 0.5 where a variance belongs.",
            },
        ),
        Numeric(
            id="q2", points=1, name="answer_q2", tolerance=1e-3,
            key="7cedc00aa94447e3c179a067",
            hints=(
                "first build each key's score, q.k plus its bias, with no division; then take the softmax.",
                "the weight of key 1 is exp(score_1) divided by the sum of exp(score_j) over all four keys.",
            ),
            feedback={
                "ad854edcf12e30fe17cd0d1a": "the biases are missing from the scores.",
                "03c615b7a51de15f84bafad8": "you divided q.k by sqrt(d); T5 does not.",
                "e3ffb2e82edc306f3dd03804": "you divided the whole score by sqrt(d); T5 divides nothing.",
            },
        ),
        FloatCode(
            id="q3", points=3, name="my_entropy",
            reference="t5lesson.grading.bank.ex02_where_sqrt_d_went:reference_entropy",
            cases=_entropy_cases(), case_timeout=1.0, tolerance=1e-6,
            blocked=("t5lesson.saturation:softmax_entropy", f"{__name__}:reference_entropy", "scipy.stats:entropy"),
            hints=(
                "the entropy is minus the sum over keys of p log p, with the natural logarithm.",
                "a zero weight contributes nothing (p log p goes to 0 as p goes to 0), but log(0) itself is -inf.",
            ),
        ),
        FreeText(id="q4", points=3, name="q4-answer"),
        MultipleChoice(
            id="q5", points=2, name="answer_q5", options="ABCDE", multiple=True, key="7ecad69317cb46e4458ddd02",
            hints=(
                "three of the five statements are true.",
                "think separately about initialisation, the exact identity, training, and where fp16 overflowed.",
            ),
            feedback={
                "c115f99e9370af1d62cbb516": "one more statement is true: what does adding u do to a key's odds?",
                "1d40c9f0c580bec7e78b69cb": "Adam's step size ignores a constant factor in the gradient; does "
                                            "that keep the folded and scaled heads the same?",
                "5e34087dd156c66b64b74f9f": "where did the reported fp16 overflow happen: in the logits, or in "
                                            "the hidden states?",
                "f6d5d9aa48568f404ebaa0b6": "one more statement is true: look at the identity of lesson 2, section 2.",
            },
        ),
        Numeric(
            id="q6", points=1, name="answer_q6", tolerance=1e-3,
            key="32702a0e9d5d34b20a952753",
            hints=(
                "adding b to one key's logit multiplies its odds against any other key by e^b.",
                "inside the scaling, what actually gets added to the logit is u / sqrt(d).",
            ),
            feedback={
                "bfdce92090021b9bf754818b": "that is T5's factor, for a bias added on the unscaled scale.",
                "1e073d53e4e4c279a7bf87cf": "divide by sqrt(d), not by d.",
            },
        ),
        Numeric(
            id="q7", points=1, name="answer_q7", tolerance=1e-5,
            key="c4311c64e6d0eefde44fcc3f",
            hints=(
                "the query projection's std carries one factor for d_model and one for d_kv.",
                "std = (d_model * d_kv) ** -0.5",
            ),
            feedback={
                "9d4c0077d1159ac59f657df3": "that is d_model ** -0.5, the std of W_k; W_q has the extra d_kv factor.",
                "f267bf204b0959017c9e9f36": "that is d_kv ** -0.5 alone; the d_model factor is missing.",
                "d68df26b6d5550c948176914": "that is a variance; the question asks for the standard deviation.",
            },
        ),
        FloatCode(
            id="q8", points=4, name="my_scores",
            reference="t5lesson.grading.bank.ex02_where_sqrt_d_went:reference_scores",
            cases=_score_cases(), case_timeout=1.0, tolerance=1e-6, masked_below=-1e9,
            blocked=("t5lesson.scores:attention_scores", "t5lesson.scores:attention",
                     "t5lesson.lessons.dot_products:scores_t5", f"{__name__}:reference_scores"),
            hints=(
                "score[i][j] = q[i] . k[j] + bias[i][j], with nothing divided, where mask[i][j] is 1.",
                "where mask[i][j] is 0 the score must be hugely negative: -1e9, -inf or the most negative float.",
                "np.asarray turns the nested lists you receive into arrays; q @ k.T gives every dot product.",
            ),
        ),
        FreeText(id="q9", points=2, name="q9-answer"),
    ),
)
