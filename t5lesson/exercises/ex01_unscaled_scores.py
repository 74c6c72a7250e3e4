"""Exercise 01 (lesson 1): T5's unnormalised score, the two changes, and what dropping 1/sqrt(d) does.

Notebook: solutions/01_unscaled_scores.ipynb (source), exercises/01_unscaled_scores.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`, `Numeric.float_key`); to change an
answer, recompute its hash with `t5grade hash QUESTION ANSWER [--tolerance T] --exercise ID` and run the
solution notebook through the grader (tests/grading/authoring/test_generate.py does) to prove it still
gets full marks. tests/exercises/test_objectives.py checks that every feedback key can be reached.

The two code questions return floats and float matrices, so they use `FloatCode`
(`t5lesson.grading.questions.structured`): `PlainCode`'s comparison, with messages about arrays. Buckets
are lesson 3's: their questions, the bucket function included, are in exercise 03.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.structured import FloatCode, plain_numbers
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_entropy", "reference_scores", "hidden_entropy_cases", "SQRT_D", "SQRT_D_ALL"]

# One slip, one sentence, in every question that can show it (q1, q4, q6, q8, q9; q2 and the rest
# for the whole score divided).
SQRT_D = "that divides q.k by sqrt(d); T5 does not."
SQRT_D_ALL = "that divides the whole score, the bias included, by sqrt(d); T5 divides nothing."
NO_BIAS = "the position bias is missing from the score."


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
        ((0.5, 0.0, 0.5, 0.0, 0.0), "uniform weights over the 2 keys left of 5, the others masked"),
        ((0.1,) * 10, "uniform weights over 10 keys"),
        ((0.9, 0.1), "two keys, one favoured"),
        ((0.4, 0.3, 0.2, 0.1, 0.0), "falling weights, the last key masked"),
        ((0.0, 0.25, 0.0, 0.75), "two keys left, with zeros between"),
        ((0.6, 0.2, 0.1, 0.05, 0.05, 0.0, 0.0), "a long tail, then two padding keys"),
        ((0.97, 0.01, 0.01, 0.01), "nearly saturated"),
        ((1 / 3, 1 / 3, 1 / 3), "uniform weights over 3 keys"),
    ]
    return tuple(Case((row,), (), topic) for row, topic in rows)


def _weights(rng, n: int, zeros: int = 0, first: float | None = None) -> tuple:
    """A drawn row of n probabilities on a grid of 1/1000, `zeros` of them 0 (at drawn places),
    summing to 1 exactly in thousandths; `first` fixes the largest share in front."""
    live = n - zeros
    if first is not None:
        rest = rng.dirichlet(np.ones(live - 1)) * (1000 - round(first * 1000)) if live > 1 else np.zeros(0)
        counts = np.concatenate([[round(first * 1000)], np.floor(rest)])
    else:
        counts = np.floor(rng.dirichlet(np.ones(live)) * 1000)
    counts = np.maximum(counts, 1)
    counts[int(np.argmax(counts))] += 1000 - counts.sum()  # the grid's remainder on the largest share
    row = np.zeros(n)
    places = np.sort(rng.choice(n, size=live, replace=False)) if first is None else np.arange(live)
    row[places] = counts / 1000
    return _row(row)


def hidden_entropy_cases(rng) -> tuple[Case, ...]:
    """The grading cases of q7: each public case's purpose, with drawn weights and sizes.

    Most rows have masked or padding keys (weight 0), as attention rows do, so an entropy that
    computes 0 log 0 (nan) cannot earn most of the points on the rows without them.
    """
    n_uniform, n_masked = int(rng.choice([5, 6, 8, 12, 20])), int(rng.integers(1, 4))
    tiny = float(rng.choice([1e-8, 3e-9, 5e-10]))
    logits = np.round(rng.normal(size=int(rng.integers(12, 24))), 2)
    soft = np.exp(logits) / np.exp(logits).sum()
    soft = np.concatenate([soft, np.zeros(int(rng.integers(1, 5)))])
    hot = np.zeros(int(rng.integers(3, 7)))
    hot[rng.integers(hot.size)] = 1.0
    rows = [
        ((1 / n_uniform,) * n_uniform + (0.0,) * n_masked, "uniform weights over many keys, some masked"),
        (_row(hot), "one-hot weights (0 log 0 counts as 0)"),
        (_weights(rng, int(rng.integers(4, 7)), zeros=2), "weights with zeros"),
        (_weights(rng, 4, zeros=1), "uneven weights, one key masked"),
        (_row(rng.permutation([1.0 - tiny, tiny, 0.0])), "almost one-hot, one key masked"),
        (_row(np.round(soft, 15)), "a softmax row over many keys, then padding"),
        (_weights(rng, 2, first=float(rng.uniform(0.55, 0.95))), "two keys, one favoured"),
        (_weights(rng, 4), "uneven weights over 4 keys"),
        (_weights(rng, int(rng.integers(5, 8)), zeros=3), "some keys left, with zeros between"),
        (_weights(rng, int(rng.integers(6, 10)), zeros=2, first=float(rng.uniform(0.5, 0.7))),
         "a long tail, then padding"),
        (_weights(rng, int(rng.integers(4, 7)), zeros=1, first=float(rng.uniform(0.95, 0.99))),
         "nearly saturated, then padding"),
        (_weights(rng, 3), "uneven weights over 3 keys"),
    ]
    return tuple(Case((row,), (), topic) for row, topic in rows)


def _matrix(a) -> tuple:
    return tuple(_row(r) for r in np.atleast_2d(a))


def _score_cases(rng=None) -> tuple[Case, ...]:
    """q9's cases: the public ones from a fixed generator, the grading ones (`hidden`) from a drawn one.

    Sizes odd and even, d from 1 to 16, queries and keys in unequal numbers, masks causal, padded
    and mixed.
    """
    rng = np.random.default_rng(2) if rng is None else rng
    r = lambda *shape: np.round(rng.standard_normal(shape), 2)
    padded = np.array([[1, 1, 1, 0], [1, 1, 1, 0]])
    mixed = np.array([[1, 0, 1, 1], [0, 1, 1, 0]])
    # One case without a mask: an answer that forgets the mask (or multiplies by it) earns little.
    specs = [
        ((2, 3, 2), np.ones((2, 3)), "no mask, d = 2"),
        ((3, 3, 4), np.tril(np.ones((3, 3))), "a causal mask, d = 4"),
        ((2, 4, 3), padded, "the last key is padding, d = 3"),
        ((2, 4, 8), mixed, "a mixed mask, d = 8"),
        ((2, 2, 1), np.tril(np.ones((2, 2))), "a causal mask, d = 1"),
        ((4, 4, 16), np.tril(np.ones((4, 4))), "a causal mask, d = 16"),
        ((3, 5, 5), np.array([[1, 1, 1, 0, 0]] * 3), "the last two keys are padding, d = 5"),
    ]
    cases = []
    for (n_q, n_k, d), mask, topic in specs:
        q, k, bias = r(n_q, d), r(n_k, d), r(n_q, n_k)
        cases.append(Case((_matrix(q), _matrix(k), _matrix(bias), tuple(tuple(int(m) for m in row) for row in mask)),
                          (), topic))
    return tuple(cases)


def _score_slip(case: Case, got: np.ndarray) -> str | None:
    """The sentence for a known slip that reproduces `got` on the allowed entries of a q9 case, or None."""
    q, k, bias, mask = (np.asarray(a, dtype=float) for a in case.args)
    live = mask == 1
    dot, root = q @ k.T, math.sqrt(q.shape[1])
    slips = ((dot + bias, None), (dot, NO_BIAS), (dot / root + bias, SQRT_D), ((dot + bias) / root, SQRT_D_ALL))
    for scores, sentence in slips:  # the right scores first: a d = 1 case cannot show the sqrt(d) slips
        if np.allclose(got[live], scores[live], rtol=1e-6, atol=1e-6):
            return sentence
    return None


@dataclass(frozen=True)
class ScoreCode(FloatCode):
    """q9's `FloatCode`: a wrong case that a known slip reproduces is named with the exercise's sentence
    for it (the one q4, q6 and q8 use), before where its values differ."""

    def _explain(self, case: Case, want, got) -> str:
        where = self._case_name(case)
        problem = None if self._run_failure(where, got) is not None else self.problem(want, got)
        array = plain_numbers(got.get("ok")) if problem and isinstance(got, dict) else None
        if array is not None and array.shape == want.shape:
            slip = _score_slip(case, array)
            if slip:
                return f"{where}: {slip} ({problem}.)"
        return super()._explain(case, want, got)


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 1: T5's unscaled score, and what dropping $\\sqrt{d}$ does",
    questions=(
        MultipleChoice(
            id="q1", points=1, objectives=(1,), name="answer_q1",
            options="ABCDE", key="263f1389823ba742b2b83b16",
            hints=(
                "two things set T5 apart: what happens to the size of q.k, and how the position enters.",
                "T5 divides q.k by nothing at all: that rules out the options with a sqrt(d) in them.",
                "for each option left, note two things: is the position term added to q.k or multiplied with it, "
                "and is it looked up by the offset j - i or by the key's position j alone? Lesson 1's formula "
                "says which T5 does.",
            ),
            feedback={
                "848e296c2ba89d495d216af3": SQRT_D + " (With W_q rescaled it is the same model, as lesson 2 "
                                                     "shows, but not the score T5 computes.)",
                "be5ed1cb29f9b21508dd1c63": SQRT_D_ALL,
                "6a5a0e83c9fc1dd131be5a29": "the bias multiplies the score here; in T5 it is added to it.",
                "adb730212d190096e73b943f": "this bias depends on where the key is, "
                                            "not on how far it is from the query.",
            },
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(2,), name="answer_q2",
            options="ABCDEF", multiple=True, key="5bf5c4f629daf8cfcc3155c7",
            hints=(
                "for each option, ask two things: is it about the size of q.k or about where position enters, "
                "and is it what T5 does, or what another model does?",
                "T5's position term is one learned number per bucket of the offset j - i, added to the logit; "
                "T5 neither divides nor learns anything in place of the scale.",
            ),
            feedback={
                "680bfdc72e4429bdb5dbec04": "not complete: how does T5 tell attention how far apart two tokens are?",
                "801e2c76f20cc998903660fa": "not complete: look at what happens to the size of q.k.",
                "33a62b5429a45858068830f4": "a number per absolute key position would be the same whatever the query; "
                                            "T5's depends only on the offset j - i.",
                "0299cec1934b886c443f02db": "a number per absolute key position would be the same whatever the query; "
                                            "T5's depends only on the offset j - i.",
                "9e59a0c1ba76a3e745bf5199": "T5 learns no temperature: q.k enters the softmax as it is.",
                "1d80d4ee3620032a711e9104": "T5 learns no temperature: q.k enters the softmax as it is.",
                "7a03c80cf90bd8aa1da4294a": "a vector added to the keys is Shaw et al.'s relative attention; T5 adds "
                                            "one scalar to the logit.",
                "be5191bb98d648a5a62297c4": "a vector added to the keys is Shaw et al.'s relative attention; T5 adds "
                                            "one scalar to the logit.",
                "ad6d44be9aab07057903c365": SQRT_D_ALL,
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
            checklist=(
                "Does your answer say what leaving q.k undivided does to the size of the scores, and how that "
                "depends on the head dimension d?",
                "Does it say what the added u_b(j-i) does to a score, what it is looked up by, and what it tells "
                "attention that q.k alone cannot?",
            ),
        ),
        Numeric(
            id="q4", points=1, objectives=(1,), name="answer_q4", tolerance=1e-4,
            key="8fd25d72c86bb5fb0c0061a5",
            hints=(
                "the score is the plain dot product plus one entry of the bias table.",
                "the offset is key position minus query position; a key before the query has a negative offset.",
            ),
            feedback={
                "b60b81f29eb5ad1f138ed3aa": SQRT_D,
                "40a968f22a25b915f47dc33e": "you used the bias of the opposite offset: the key comes before the query.",
                "eb40d81bbd3ab64431a4d4fa": NO_BIAS,
                "1dadc8c6132dac3d362bd89d": SQRT_D_ALL,
            },
        ),
        Numeric(
            id="q5", points=1, objectives=(3,), name="answer_q5",
            key="da54ca829f3f571707790d43",
            hints=(
                "q.k is a sum of d independent products q_m k_m; variances of independent terms add.",
                "the variance of a product of two independent zero-mean variables is the product of their variances.",
            ),
            feedback={
                "cf1eede263bf83bc1852a617": "that is d times the variance of one entry. What is the variance of one "
                                            "product q_m k_m of two independent entries?",
                "017392d0852cf8504027a778": "that would be right for unit-variance entries; these have variance 0.25.",
                "c0b23e39c4ff599c125c1e6c": "that is a standard deviation; the question asks for the variance.",
                "1518e78bff79ff25b6a72007": "you used the standard deviation 0.5 where a variance belongs.",
            },
        ),
        Numeric(
            id="q6", points=1, objectives=(1, 3), name="answer_q6",
            tolerance=1e-3,
            key="0bca85b581432e09f6508ba0",
            hints=(
                "first build each key's score, q.k plus its bias, with no division; then take the softmax.",
                "the weight of key 1 is exp(score_1) divided by the sum of exp(score_j) over all four keys.",
            ),
            feedback={
                "acbb15487ee6a1eb78dcfbdc": NO_BIAS,
                "af27f23b0bb14d674b096a02": SQRT_D,
                "5aba40e72fdbda8c297b33a4": SQRT_D_ALL,
            },
        ),
        FloatCode(
            id="q7", points=3, objectives=(3,), name="my_entropy",
            reference="t5lesson.exercises.ex01_unscaled_scores:reference_entropy",
            cases=_entropy_cases(), hidden=f"{__name__}:hidden_entropy_cases", case_timeout=1.0, tolerance=1e-6,
            blocked=("t5lesson.saturation:softmax_entropy", f"{__name__}:reference_entropy", "scipy.stats:entropy"),
            hints=(
                "how is the entropy of a row of probabilities defined, and which logarithm gives it in nats? "
                "What should a key of weight 0 contribute?",
                "the entropy is minus the sum over keys of p log p, with the natural logarithm. A zero weight "
                "contributes nothing (p log p goes to 0 as p goes to 0), but log(0) itself is -inf: leave those "
                "keys out of the sum.",
            ),
        ),
        Numeric(
            id="q8", points=1, objectives=(3,), name="answer_q8",
            tolerance=1e-4, key="8e4fed9d0f56edfc4552b416",
            hints=(
                "first the weights p = softmax(scores); then the Jacobian J = diag(p) - p p^T, a 4 x 4 matrix.",
                "the Frobenius norm is the square root of the sum of the squares of all 16 entries of J.",
            ),
            feedback={
                "0b218fd773abaafe53ea8331": "that is the uniform row's norm; compute p from these scores first.",
                "be9db8a232f583bf42f9a3d4": "that is one entry, p0 (1 - p0); the norm takes every entry of "
                                            "diag(p) - p p^T.",
                "3da59ad6b15542193317ffd3": "that counts the diagonal only; the entries -p_i p_j off it count too.",
                "6326d564a88e6a544f51fd41": SQRT_D + " The scores given are already the head's logits.",
            },
        ),
        ScoreCode(
            id="q9", points=4, objectives=(1,), name="my_scores",
            reference="t5lesson.exercises.ex01_unscaled_scores:reference_scores",
            cases=_score_cases(), hidden=f"{__name__}:_score_cases", case_timeout=1.0, tolerance=1e-6,
            masked_below=-1e8,  # Mesh TF adds -1e9 to the score, which can leave a masked entry just above -1e9
            blocked=("t5lesson.scores:attention_scores", "t5lesson.scores:attention",
                     "t5lesson.lessons.dot_products:scores_t5", f"{__name__}:reference_scores"),
            hints=(
                "T5's score of one query against one key has two parts, added, and nothing divided: which two? "
                "And what must a pair that may not attend get, so that the softmax gives it no weight?",
                "each allowed pair's score is the dot product of query i with key j plus that pair's bias; where "
                "the mask is 0 the score must be hugely negative: -1e9, -inf or the most negative float.",
                "np.asarray turns the nested lists you receive into arrays; q @ k.T gives every dot product.",
            ),
        ),
    ),
)
