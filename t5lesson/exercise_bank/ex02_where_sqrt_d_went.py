"""Exercise 02: lesson 1's numbers and code (part A) and lesson 2's folding (part B).

Notebook: solutions/02_where_sqrt_d_went.ipynb (source), exercises/02_where_sqrt_d_went.ipynb.
Exercise 01 (solutions/01_unscaled_scores.ipynb) already covers picking T5's score and naming
the two changes; this one adds the variance of q.k, a softmax weight, the entropy statistic,
the masked score matrix, the folded initialisation and the placement of the bias.

Keys are salted hashes (`t5lesson.questions.answer_hash`, `Numeric.float_key`); recompute one
with `python -m t5lesson.questions hash|float-key ...`. The two code questions return floats
and float matrices, which the integer-only `Code` kind cannot compare, so they use `FloatCode`
below: the same harvesting and partial credit, with a numeric tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
import importlib
from functools import cached_property

import numpy as np

from ..questions import CORRECT, ERROR, INCORRECT, PARTIAL, Case, Code, FreeText, MultipleChoice, Numeric
from ..questions import _describe, _missing
from . import Exercise

__all__ = ["EXERCISE", "FloatCode", "reference_entropy", "reference_scores"]


def _plain_numbers(value):
    """A plain harvested value as a float array, or None if it holds anything but numbers.

    Numbers arrive as {"t": "int"/"float", "v": ...} (non-finite floats as their repr string),
    arrays as {"t": "array", "shape": [...], "v": [...]}, lists as {"t": "list", "v": [...]}.
    """
    if not isinstance(value, dict):
        return None
    kind, v = value.get("t"), value.get("v")
    if kind in ("int", "float"):
        try:
            return np.array(float(v))
        except (TypeError, ValueError):
            return None
    if kind in ("list", "array") and isinstance(v, list):
        items = [_plain_numbers(item) for item in v]
        if any(item is None for item in items):
            return None
        if kind == "array":
            flat = np.array([float(item) for item in items]) if items else np.zeros(0)
            shape = value.get("shape")
            try:
                return flat.reshape(shape) if isinstance(shape, list) else flat
            except ValueError:
                return None
        try:
            return np.array(items, dtype=float)
        except ValueError:  # ragged lists
            return None
    return None


@dataclass(frozen=True)
class FloatCode(Code):
    """A function returning a number or an array of numbers, compared within `tolerance`.

    A case is right when the result has the reference's shape and every entry is within
    `tolerance` (absolute or relative) of it. Entries where the reference is at or below
    `masked_below` (a masked score) count as right when the learner's entry is at or below it
    too: T5 uses the most negative float, Mesh TF -1e9, and -inf works as well.
    """

    tolerance: float = 1e-6
    masked_below: float | None = None

    @cached_property
    def expected(self) -> tuple[np.ndarray, ...]:
        module, _, attr = self.reference.partition(":")
        function = getattr(importlib.import_module(module), attr)
        return tuple(np.asarray(function(*c.args, **dict(c.kwargs)), dtype=float) for c in self.cases)

    def _problem(self, want: np.ndarray, got) -> str | None:
        """None if the case is right, else a short description of what is wrong."""
        value = got.get("ok") if isinstance(got, dict) else None
        array = _plain_numbers(value)
        if array is None:
            return f"returned {_describe(value)}; it should return {'a number' if want.ndim == 0 else 'numbers'}"
        if array.shape != want.shape:
            return f"returned shape {tuple(array.shape)}, the right answer has shape {tuple(want.shape)}"
        masked = want <= self.masked_below if self.masked_below is not None else np.zeros(want.shape, bool)
        if masked.any() and not (array[masked] <= self.masked_below).all():
            return "a position that may not be attended to is not pushed far enough down"
        if np.isnan(array).any():
            return "the result contains nan (is something like 0 * log 0 or inf - inf computed?)"
        close = np.isclose(array[~masked], want[~masked], rtol=self.tolerance, atol=self.tolerance)
        if not close.all():
            return f"{int((~close).sum())} of {close.size} values are not right"
        return None

    def score(self, record):
        if _missing(record):
            return self.not_attempted()
        if record.get("status") == "not_callable":
            what = _describe(record.get("value"))
            return self.outcome(INCORRECT, 0, f"{self.name} should be a function, but it is {what}.")
        results = record.get("cases")
        if record.get("status") != "ran" or not isinstance(results, list) or len(results) != len(self.cases):
            return self.outcome(ERROR, 0, f"the results of {self.name} could not be read back.")
        if all(isinstance(r, dict) and r.get("not_implemented") for r in results):
            return self.not_attempted()
        right, first_miss, first_error = 0, None, None
        for case, want, got in zip(self.cases, self.expected, results, strict=True):
            if isinstance(got, dict) and "ok" in got and self._problem(want, got) is None:
                right += 1
                continue
            if first_error is None and isinstance(got, dict) and ("error" in got or "timeout" in got):
                first_error = (case, want, got)
            if first_miss is None:
                first_miss = (case, want, got)
        total = len(self.cases)
        if right == total:
            return self.outcome(CORRECT, 1, f"all {total} cases right.")
        if right == 0 and first_error is not None and first_error == first_miss:
            return self.outcome(ERROR, 0, self._explain_case(*first_error))
        message = f"{right} of {total} cases right. {self._explain_case(*first_miss)}"
        if first_error is not None and first_error != first_miss:
            message += f" Also: {self._explain_case(*first_error)}"
        return self.outcome(PARTIAL if right else INCORRECT, Fraction(right, total), message)

    def _explain_case(self, case: Case, want, got) -> str:
        """One sentence about a failed case, named by its topic (the inputs are long lists)."""
        number = self.cases.index(case) + 1
        where = f"case {number} ({case.topic})" if case.topic else f"case {number}"
        if not isinstance(got, dict):
            return f"{where}: no result."
        if got.get("timeout"):
            return f"{where} took longer than {self.case_timeout:g} s."
        if got.get("skipped"):
            return f"{where} was not run: earlier cases were too slow."
        if got.get("not_implemented"):
            return f"{where} raised NotImplementedError."
        if "error" in got:
            place = f" in {got['where']}" if got.get("where") else ""
            return f"{where} raised {got['error']}{place}."
        return f"{where}: {self._problem(want, got)}. Hint: {self.first_hint()}"


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
    id="02_where_sqrt_d_went",
    title="Exercise 2: what dropping sqrt(d) does, and where T5 put it",
    questions=(
        Numeric(
            id="q1", points=1, name="answer_q1", title="The variance of q.k",
            key="74114d953008d1bf4b4497c6",
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
            id="q2", points=1, name="answer_q2", title="A softmax weight from T5 scores", tolerance=1e-3,
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
            id="q3", points=3, name="my_entropy", title="Implement the entropy statistic",
            reference="t5lesson.exercise_bank.ex02_where_sqrt_d_went:reference_entropy",
            cases=_entropy_cases(), case_timeout=1.0, tolerance=1e-6,
            blocked=("t5lesson.saturation:softmax_entropy", f"{__name__}:reference_entropy", "scipy.stats:entropy"),
            hints=(
                "the entropy is minus the sum over keys of p log p, with the natural logarithm.",
                "a zero weight contributes nothing (p log p goes to 0 as p goes to 0), but log(0) itself is -inf.",
            ),
        ),
        FreeText(id="q4", points=3, name="q4-answer", title="Evaluate the design choice (marked by your instructor)"),
        MultipleChoice(
            id="q5", points=2, name="answer_q5", title="What folding does and does not do",
            options="ABCDE", multiple=True, key="7ecad69317cb46e4458ddd02",
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
            id="q6", points=1, name="answer_q6", title="A bias inside the scaling", tolerance=1e-3,
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
            id="q7", points=1, name="answer_q7", title="The folded initialisation", tolerance=1e-5,
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
            id="q8", points=4, name="my_scores", title="Implement T5's masked, biased, unscaled scores",
            reference="t5lesson.exercise_bank.ex02_where_sqrt_d_went:reference_scores",
            cases=_score_cases(), case_timeout=1.0, tolerance=1e-6, masked_below=-1e9,
            blocked=("t5lesson.scores:attention_scores", "t5lesson.scores:attention", "t5lesson.scaling:scores_t5",
                     f"{__name__}:reference_scores"),
            hints=(
                "score[i][j] = q[i] . k[j] + bias[i][j], with nothing divided, where mask[i][j] is 1.",
                "where mask[i][j] is 0 the score must be hugely negative: -1e9, -inf or the most negative float.",
                "np.asarray turns the nested lists you receive into arrays; q @ k.T gives every dot product.",
            ),
        ),
        FreeText(id="q9", points=2, name="q9-answer", title="Advise a colleague (marked by your instructor)"),
    ),
)
