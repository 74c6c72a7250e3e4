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
    mixed = (-1.5, 2.0, -0.25, 0.75, 1.25) if public else tuple(float(v) for v in np.round(
        rng.permutation(np.concatenate([-rng.uniform(0.1, 2, 2), rng.uniform(0.1, 2, 3)])), 2))
    # Most cases clip inside the table and have keys after their queries, so that each slip (the sign,
    # the clip, the diagonal, the future keys) costs more than two thirds of the points; the boundary
    # cases (no offset reaching the clip, one token, clip 0) stay, as three of eleven.
    specs = [
        (r(5), 4, 4, "no offset reaches the clip"),
        (r(5), 8, 4, "clipped at the last entry (Model A)"),
        (r(6), 10, 2, "clipped inside the table: later entries unused"),
        (r(3), 1, 2, "a single token"),
        (r(4), 5, 0, "clip 0: every offset shares one parameter"),
        (r(16), 30, 11, "a longer sequence, clipped inside 16 parameters"),  # 900 entries: the harvester takes 1000
        (mixed, 6, 2, "negative and positive biases, clipped inside"),
        (r(8), 9, 5, "an odd length, clipped inside"),
        (r(3), 7, 1, "clip 1: only distance 0 has a parameter of its own"),
        (r(7), 12, 3, "clipped well inside a longer table"),
        (r(9), 11, 6, "an odd length, clipped past the middle"),
    ]
    return tuple(Case((table, length, clip), (), topic) for table, length, clip, topic in specs)


EXERCISE = Exercise(
    id=id_of_module(__name__),
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
                "f248a88bc0046a458b1179af": "fewer parameters is true, but it is not the reason: what counts is how "
                                            "many training pairs reached the parameter a far pair uses (question 1 "
                                            "counted them for Model A), not how many parameters there are.",
                "15b633a079ba0132d4d31bac": "count the pairs: offset d occurs L - d times in a sequence of L tokens.",
                "fa2088ba2bb5895041080fcc": "buckets give far keys a trained bias; they do not remove those keys. "
                                            "A query of a 2,000-token document has more far keys than one of 512 "
                                            "tokens to spread its attention over, with buckets or without.",
            },
        ),
        Numeric(
            id="q4", points=1, objectives=(6,), name="answer_q4",
            key="e6bdfe9047ae45e7efce02a8",
            hints=(
                "which distances share the one parameter, and how many pairs does each of them have in one "
                "512-token document?",
                "distance d has 512 - d pairs, for every d from 100 to 511. The terms fall by one from the first "
                "to the last: what is the first, what is the last, and how many are there?",
            ),
            feedback={
                "59db3a6663d5033a83de77b0": "that is how many distances share the parameter; each of them brings "
                                            "its own pairs.",
                "5ae4c7184cf3ce918400f7d4": "one pair too many at every distance: distance 511 has a single pair "
                                            "(question 1).",
                "4d708774090671418a7969db": "distance 100 itself uses the shared parameter too.",
                "48f142b14a1427f44150457b": "that is distance 511's count alone; the shared parameter pools every "
                                            "distance from 100 on.",
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
                ("inputs never longer than training: far buckets buy nothing there, and a wide bucket merges "
                 "distances a task may need to tell apart (lesson 5: most pairs of a long document share T5's last "
                 "bucket, so one layer cannot tell them apart); a per-offset table or more exact buckets instead", 1),
                ("a bucket helps only if training pairs reach it: with max_distance beyond the training length the "
                 "last buckets hold only distances training never shows (the L - d count gives them 0 pairs, like "
                 "the never-trained table); the fix is max_distance inside the training length, or longer "
                 "training", 1),
                ("an alternative judged on lesson 5's evidence: what generalised was a trained value for every far "
                 "distance, so a per-offset table clipped inside the training length (its shared parameter pools "
                 "many pairs, by the same count) should do as well as buckets; or another argued alternative", 1),
            ),
            checklist=(
                "Does your answer name a situation where buckets cost something, say what is lost there, and "
                "say what you would use instead?",
                "Does it say under which setting some buckets would get no training, how you know, and what "
                "you would change?",
                "Does it weigh at least one alternative to buckets, and say which of lesson 5's counts or "
                "results your judgement rests on?",
            ),
        ),
    ),
)
