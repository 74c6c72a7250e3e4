"""Exercise 01 (lesson 1): T5's unnormalised score, the two changes, and what dropping 1/sqrt(d) does.

Notebook: solutions/01_unscaled_scores.ipynb (source), exercises/01_unscaled_scores.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`, `Numeric.float_key`); to change an
answer, recompute its hash with `t5grade hash QUESTION ANSWER [--tolerance T]` and run the
solution notebook through the grader (tests/grading/test_generate.py does) to prove it still
gets full marks. tests/grading/test_objectives.py checks that every feedback key can be reached.

The two code questions return floats and float matrices, so they use `FloatCode`
(`t5lesson.grading.questions.structured`): `PlainCode`'s comparison, with messages about arrays. Buckets
are lesson 3's: their questions, the bucket function included, are in exercise 03.
"""
from __future__ import annotations

import numpy as np

from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.structured import FloatCode
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_entropy", "reference_scores"]


# --- references, called in the grader's process with the plain (list) arguments ----------------

def reference_entropy(weights):
    """Entropy in nats of one row of probabilities (t5lesson.softmax_entropy)."""
    from ..saturation import softmax_entropy

    return float(softmax_entropy(np.asarray(weights, dtype=float)))


def reference_scores(q, k, bias, mask):
    """T5's score matrix q k^T + bias, with masked entries at the most negative float."""
    from ..scores import attention_scores

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
    title="Exercise 1: T5's unscaled score, and what dropping $\\sqrt{d}$ does",
    questions=(
        MultipleChoice(
            id="q1", points=1, objectives=(1,), name="answer_q1",
            options="ABCDE", key="cceea8c4953b42f1cfd33c4b",
            hints=(
                "two things set T5 apart: what happens to the size of q.k, and how the position enters.",
                "T5 divides q.k by nothing at all.",
                "the position term is added to the score, and it depends only on the offset j - i "
                "(through its bucket).",
            ),
            feedback={
                "f35de2d608ca9d2db8528725": "that score still divides q.k by sqrt(d); T5 leaves q.k as it is.",
                "e2a0752f1a2488a538a3d2ba": "here the position bias is divided by sqrt(d) too; "
                                            "in T5 nothing is divided.",
                "b7f8b30f9b0fa302b983b427": "the bias multiplies the score here; in T5 it is added to it.",
                "4fb7e615fae8a11f4c74fb16": "this bias depends on where the key is, "
                                            "not on how far it is from the query.",
            },
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(2,), name="answer_q2",
            options="ABCDEF", multiple=True, key="4d2b1d530ca3f36521a44467",
            hints=(
                "for each option, ask two things: is it about the size of q.k or about where position enters, "
                "and is it what T5 does, or what another model does?",
                "T5's position term is one learned number per bucket of the offset j - i, added to the logit; "
                "T5 neither divides nor learns anything in place of the scale.",
            ),
            feedback={
                "3914cc5ca84c252dbf95410c": "not complete: how does T5 tell attention how far apart two tokens are?",
                "e83fc0bd4028947018bfcaf1": "not complete: look at what happens to the size of q.k.",
                "35c18c01c8b3218a846eba5c": "a number per absolute key position would be the same whatever the query; "
                                            "T5's depends only on the offset j - i.",
                "27a29e4d58f758f856c19304": "a number per absolute key position would be the same whatever the query; "
                                            "T5's depends only on the offset j - i.",
                "ada48a0524d1da91cb740cf9": "T5 learns no temperature: q.k enters the softmax as it is.",
                "b5094d92475981f2774707b1": "T5 learns no temperature: q.k enters the softmax as it is.",
                "8fc6adfb6085097f780e7ac0": "a vector added to the keys is Shaw et al.'s relative attention; T5 adds "
                                            "one scalar to the logit.",
                "6d50dc2abbbcf838aa0a43bb": "a vector added to the keys is Shaw et al.'s relative attention; T5 adds "
                                            "one scalar to the logit.",
                "3a30f9cf4f7f79ddcbbcfec8": "T5 divides nothing by sqrt(d), the bias included.",
            },
        ),
        FreeText(
            id="q3", points=2, objectives=(2,), name="q3-answer",
            rubric=(
                ("dropping 1/sqrt(d) leaves q.k at its natural size, whose spread grows with d "
                 "(variance d for unit-variance entries), so the softmax gets sharper as heads grow", 1),
                ("the added u_b(j-i) raises or lowers a score by the offset between key and query (distance and "
                 "direction): it is how word order enters, one learned value per bucket and head, the same for "
                 "every pair at that offset", 1),
            ),
        ),
        Numeric(
            id="q4", points=1, objectives=(1,), name="answer_q4", tolerance=1e-4,
            key="03292d5b14f81032ab253150",
            hints=(
                "the score is the plain dot product plus one entry of the bias table.",
                "the offset is key position minus query position; a key before the query has a negative offset.",
            ),
            feedback={
                "dfa4f60d46fa0ca7ac45936f": "you divided q.k by sqrt(d); T5 does not.",
                "a17e4c217d009af2a31fc6ee": "you used the bias of the opposite offset: the key comes before the query.",
                "6f667d41d746414da02ba9c8": "the position bias is missing.",
                "49f475cac0dd5f713f1dc023": "nothing is divided by sqrt(d) in T5, the bias included.",
            },
        ),
        Numeric(
            id="q5", points=1, objectives=(3,), name="answer_q5",
            key="67b0594f26333e67a7606a32",
            hints=(
                "q.k is a sum of d independent products q_m k_m; variances of independent terms add.",
                "the variance of a product of two independent zero-mean variables is the product of their variances.",
            ),
            feedback={
                "6d13bd6e7534f9ee0608e55b": "each product q_m k_m has variance sigma^2 times sigma^2, not sigma^2.",
                "c2609c9d74f81ba912f75e2b": "that would be right for unit-variance entries; these have variance 0.25.",
                "c05cdc6db759c88a30684589": "that is a standard deviation; the question asks for the variance.",
                "7373e54c5ed59e03a8d51c1a": "you used the standard deviation 0.5 where a variance belongs.",
            },
        ),
        Numeric(
            id="q6", points=1, objectives=(1, 3), name="answer_q6",
            tolerance=1e-3,
            key="41360165fbcfd1c57b28a93e",
            hints=(
                "first build each key's score, q.k plus its bias, with no division; then take the softmax.",
                "the weight of key 1 is exp(score_1) divided by the sum of exp(score_j) over all four keys.",
            ),
            feedback={
                "48de780df9b3adbe9c86c60a": "the biases are missing from the scores.",
                "0f12c90f7d8739c71e09a714": "you divided q.k by sqrt(d); T5 does not.",
                "ff519049071c52bd38b96092": "you divided the whole score by sqrt(d); T5 divides nothing.",
            },
        ),
        FloatCode(
            id="q7", points=3, objectives=(3,), name="my_entropy",
            reference="t5lesson.exercises.ex01_unscaled_scores:reference_entropy",
            cases=_entropy_cases(), case_timeout=1.0, tolerance=1e-6,
            blocked=("t5lesson.saturation:softmax_entropy", f"{__name__}:reference_entropy", "scipy.stats:entropy"),
            hints=(
                "the entropy is minus the sum over keys of p log p, with the natural logarithm.",
                "a zero weight contributes nothing (p log p goes to 0 as p goes to 0), but log(0) itself is -inf.",
            ),
        ),
        Numeric(
            id="q8", points=1, objectives=(3,), name="answer_q8",
            tolerance=1e-4, key="7b4c90b4c263ad933f42f98a",
            hints=(
                "first the weights p = softmax(scores); then the Jacobian J = diag(p) - p p^T, a 4 x 4 matrix.",
                "the Frobenius norm is the square root of the sum of the squares of all 16 entries of J.",
            ),
            feedback={
                "86bc49b051010a138e2a5252": "that is the uniform row's norm; compute p from these scores first.",
                "8024c988906d7a1c501c4b96": "that is one entry, p0 (1 - p0); the norm takes every entry of "
                                            "diag(p) - p p^T.",
                "4c9e44f158d989fff5793942": "that counts the diagonal only; the entries -p_i p_j off it count too.",
            },
        ),
        FloatCode(
            id="q9", points=4, objectives=(1,), name="my_scores",
            reference="t5lesson.exercises.ex01_unscaled_scores:reference_scores",
            cases=_score_cases(), case_timeout=1.0, tolerance=1e-6, masked_below=-1e9,
            blocked=("t5lesson.scores:attention_scores", "t5lesson.scores:attention",
                     "t5lesson.lessons.dot_products:scores_t5", f"{__name__}:reference_scores"),
            hints=(
                "score[i][j] = q[i] . k[j] + bias[i][j], with nothing divided, where mask[i][j] is 1.",
                "where mask[i][j] is 0 the score must be hugely negative: -1e9, -inf or the most negative float.",
                "np.asarray turns the nested lists you receive into arrays; q @ k.T gives every dot product.",
            ),
        ),
    ),
)
