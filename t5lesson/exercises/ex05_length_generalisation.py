"""Exercise 05: lesson 5, sharing one bias across many distances and reading longer sequences.

Notebook: solutions/05_length_generalisation.ipynb (source), exercises/05_length_generalisation.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); to change an answer, recompute its
hash with `t5grade hash QUESTION ANSWER --exercise ID`. The code question returns a float
matrix, so it uses `FloatCode` (defined with exercise 02: integer-only `Code` cannot compare it).
"""
from __future__ import annotations

import numpy as np

from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.structured import FloatCode
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_clipped_bias"]


def reference_clipped_bias(table, length, clip):
    """Causal bias matrix [length, length]: entry (i, j) = table[min(i - j, clip)] for j <= i, else 0.

    The same mapping from offset to parameter as the lesson's per-offset schemes
    (`t5lesson.lengthgen.Scheme.parameter_of_offset` with unseen="clip"; a test keeps the two equal),
    written with NumPy alone so that check() runs where torch does not (the live site).
    """
    table = np.asarray(table, dtype=float)
    d = np.arange(length)[:, None] - np.arange(length)[None, :]  # i - j
    return np.where(d >= 0, table[np.minimum(np.maximum(d, 0), int(clip))], 0.0)


def _cases(rng=None) -> tuple[Case, ...]:
    """q5's cases: the public ones from a fixed generator, the grading ones (`hidden`) with drawn tables."""
    public = rng is None
    rng = np.random.default_rng(5) if public else rng
    r = lambda n: tuple(float(v) for v in np.round(rng.standard_normal(n), 2))
    mixed = (-1.5, 2.0, -0.25, 0.75) if public else tuple(float(v) for v in np.round(
        rng.permutation(np.concatenate([-rng.uniform(0.1, 2, 2), rng.uniform(0.1, 2, 2)])), 2))
    specs = [
        (r(5), 4, 4, "no offset reaches the clip"),
        (r(5), 8, 4, "clipped at the last entry (Model A)"),
        (r(6), 10, 2, "clipped inside the table: later entries unused"),
        (r(3), 1, 2, "a single token"),
        (r(4), 5, 0, "clip 0: every offset shares one parameter"),
        (r(16), 30, 15, "a longer sequence, 16 parameters"),  # 900 entries: the harvester takes at most 1000
        (mixed, 6, 3, "negative and positive biases"),
    ]
    return tuple(Case((table, length, clip), (), topic) for table, length, clip, topic in specs)


EXERCISE = Exercise(
    id=id_of_module(__name__), salted=True,
    title="Exercise 5: one bias for many distances, and sequences longer than training",
    questions=(
        Numeric(
            id="q1", points=1, objectives=(6,), name="answer_q1",
            key="99ab39b381d83f61fb50b8a1",
            hints=(
                "a pair at distance d is a query at position i and the key at position i - d; both must lie "
                "in 0..511.",
                "write the condition on i for distance 511: i - 511 >= 0 and i <= 511. How many whole numbers "
                "satisfy both?",
            ),
            feedback={
                "7783cdfe9be86cc6d9207841": "that is the distance itself; the question asks how many pairs have it.",
                "888d28dc5ee4b49a40cc157e": "that many queries exist, but how many of them have a key 511 positions "
                                            "back?",
                "6eba113974b8f5f39cfa8235": "the last token (position 511) and the first (position 0) are 511 apart.",
                "c381bf18a134e6abf23f525d": "in a causal model a pair counts once: the key is before the query.",
            },
        ),
        MultipleChoice(
            id="q2", points=1, objectives=(6,), name="answer_q2",
            options="ABCDE", key="babafcc7310ba8466559355a",
            hints=(
                "for each model, ask which parameter gives the bias of a pair 1,500 tokens apart, and how many "
                "training pairs updated that parameter (question 1 counted them for Model A).",
                "Model B's last bucket covers every distance from its lower boundary on. Count roughly how many "
                "pairs of a 512-token document fall in it, and compare with your answer to question 1.",
            ),
            feedback={
                "58a30884ecec5e521bf9c36c": "precision needs training: the parameter Model A uses for every distance "
                                            "beyond 511 was updated by very few pairs.",
                "23e95abf55ccdb998133edd1": "growing the table adds parameters that no training pair ever updated; "
                                            "nothing trains them at test time.",
                "4dac2d08420163f50faae49e": "count the pairs of a 2,000-token document at distances of 512 or more: "
                                            "they are not a small minority.",
                "31dbade9794726d940556dd7": "how well trained is distance 511's parameter? Question 1 counted its "
                                            "training pairs.",
            },
        ),
        MultipleChoice(
            id="q3", points=2, objectives=(6,), name="answer_q3",
            options="ABCDE", key="ab681072f9ce35ca7b9d6fd0",
            hints=(
                "count: how many (query, key) pairs per training document have offset 5, and how many offset 500?",
                "what matters at test time is whether the parameter used for a far pair was trained on many pairs.",
            ),
            feedback={
                "5fd63f3e4e6ba4fa88391857": "more parameters are only as good as the signal that trains them; the far "
                                            "ones got almost none.",
                "f248a88bc0046a458b1179af": "fewer parameters is true, but it is not the reason: in lesson 5b "
                                            "(section 2) a per-offset table clipped at 32 (33 parameters, against "
                                            "64 for the unclipped Model A and 16 buckets for T5) generalised as well "
                                            "as buckets.",
                "15b633a079ba0132d4d31bac": "count the pairs: offset d occurs L - d times in a sequence of L tokens.",
                "fa2088ba2bb5895041080fcc": "lesson 5b (section 5) measured the attention on the right key shrinking "
                                            "with length even for T5's buckets.",
            },
        ),
        Numeric(
            id="q4", points=1, objectives=(6,), name="answer_q4",
            key="ebe1f905b794ce85e569ed87",
            hints=(
                "list the pairs: query i and key i - 480, for every query i that has such a key.",
                "a query at position i has a key 480 positions back only when i - 480 >= 0. Which positions i, "
                "up to 511, qualify?",
            ),
            feedback={
                "ba3748eed1715fad3c973f05": "one too many: positions run from 0 to 511.",
                "76764f92436bee74a10a14ef": "one too few: the query at position 511 counts too.",
                "fb6f389b51135fb83026d3ae": "in a causal model only keys before the query count, not keys after it.",
                "d9756d224cbcf7df4902bd5b": "that is the offset itself; the question asks how many pairs have it.",
            },
        ),
        FloatCode(
            id="q5", points=3, objectives=(6,),
            name="clipped_bias_matrix",
            reference="t5lesson.exercises.ex05_length_generalisation:reference_clipped_bias",
            cases=_cases(), hidden=f"{__name__}:_cases", case_timeout=1.0, tolerance=1e-9,
            blocked=(f"{__name__}:reference_clipped_bias", "t5lesson.lengthgen.schemes:Scheme.parameter_of_offset",
                     "t5lesson.lengthgen.position_bias:PositionBias.per_offset"),
            hints=(
                "entry (i, j) uses the offset d = i - j: how many steps back key j is from query i.",
                "offsets larger than clip all use table[clip]; keys after the query (j > i) get 0.0.",
                "np.minimum(d, clip) turns a matrix of offsets into a matrix of table indices in one step.",
            ),
        ),
        FreeText(
            id="q6", points=3, objectives=(6,), name="q6-answer",
            rubric=(
                ("inputs never longer than training: far buckets buy nothing, and a per-offset table (or more exact "
                 "buckets) keeps distinctions a wide bucket merges, e.g. copying from an exact long distance", 1),
                ("a max_distance beyond the training length leaves the far buckets untrained; lesson 5b's numbers "
                 "for it, and the fix (max_distance inside the training length, or longer training)", 1),
                ("alternatives judged with the lessons' evidence: a per-offset table clipped inside the training "
                 "length does as well as buckets; a fixed distance penalty (ALiBi) extrapolates for recency but "
                 "could not copy with one layer", 1),
            ),
            checklist=(
                "Does it name a case where inputs stay within the training length, and say what buckets cost "
                "there and what you would use instead?",
                "Does it say what goes wrong when the buckets' range reaches past the training length, with the "
                "numbers of lesson 5b, and how to fix it?",
                "Does it weigh at least one alternative (a clipped per-offset table, a fixed distance penalty "
                "such as ALiBi) against the results of lessons 5 and 5b?",
            ),
        ),
    ),
)
