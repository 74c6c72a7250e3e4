"""Exercise 05: lesson 5, sharing one bias across many distances and reading longer sequences.

Notebook: solutions/05_length_generalisation.ipynb (source), exercises/05_length_generalisation.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.answer_hash`); to change an answer, recompute its
hash with `python -m t5lesson.grading.questions hash QUESTION ANSWER --exercise ID`. The code question returns a float
matrix, so it uses `FloatCode` (defined with exercise 02: integer-only `Code` cannot compare it).
"""
from __future__ import annotations

import numpy as np

from ..plain_code import FloatCode
from ..questions import Case, FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_clipped_bias"]


def reference_clipped_bias(table, length, clip):
    """Causal bias matrix [length, length]: entry (i, j) = table[min(i - j, clip)] for j <= i, else 0.

    The same mapping from offset to parameter as the lesson's per-offset schemes
    (`t5lesson.lengthgen.Scheme.parameter_of_offset` with unseen="clip").
    """
    from ...lengthgen.schemes import Scheme

    table = np.asarray(table, dtype=float)
    scheme = Scheme("exercise", "", "per-offset", clip=int(clip))
    index = scheme.parameter_of_offset(length, train_len=len(table))  # index[d] = min(d, clip)
    d = np.arange(length)[:, None] - np.arange(length)[None, :]  # i - j
    return np.where(d >= 0, table[index[np.maximum(d, 0)]], 0.0)


def _cases() -> tuple[Case, ...]:
    rng = np.random.default_rng(5)
    r = lambda n: tuple(float(v) for v in np.round(rng.standard_normal(n), 2))
    specs = [
        (r(5), 4, 4, "no offset reaches the clip"),
        (r(5), 8, 4, "clipped at the last entry (Model A)"),
        (r(6), 10, 2, "clipped inside the table: later entries unused"),
        (r(3), 1, 2, "a single token"),
        (r(4), 5, 0, "clip 0: every offset shares one parameter"),
        (r(16), 30, 15, "a longer sequence, 16 parameters"),  # 900 entries: the harvester takes at most 1000
        ((-1.5, 2.0, -0.25, 0.75), 6, 3, "negative and positive biases"),
    ]
    return tuple(Case((table, length, clip), (), topic) for table, length, clip, topic in specs)


EXERCISE = Exercise(
    id=id_of_module(__name__), salted=True,
    title="Exercise 5: one bias for many distances, and sequences longer than training",
    questions=(
        MultipleChoice(
            id="q1", points=1, objectives=(6,), name="answer_q1",
            options="ABC", key="557d28b7066bc5c0f466a592",
            hints=(
                "ask, for each model, which parameter supplies the bias of a pair 1500 tokens apart, "
                "and how often that parameter was updated in training.",
            ),
            feedback={
                "eba8995d8dc5491f35710dc6": "a separate parameter per distance is precise only where it was "
                                            "trained; how often did distance 500 occur in 512-token documents?",
                "b0ebc1c87b5214a174b4f624": "the two models see the same training data but use it differently "
                                            "for large distances; lesson 5's experiment measured the difference.",
            },
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(6,), name="answer_q2",
            options="ABCDE", key="23e95abf55ccdb998133edd1",
            hints=(
                "count: how many (query, key) pairs per training document have offset 5, and how many offset 500?",
                "what matters at test time is whether the parameter used for a far pair was trained on many pairs.",
            ),
            feedback={
                "58a30884ecec5e521bf9c36c": "more parameters are only as good as the signal that trains them; "
                                            "the far ones got almost none.",
                "4dac2d08420163f50faae49e": "fewer parameters is true, but it is not the reason: clipping a "
                                            "per-distance table inside the training length has no fewer "
                                            "parameters and generalises as well as buckets.",
                "babafcc7310ba8466559355a": "count the pairs: offset d occurs L - d times in a sequence of L tokens.",
                "31dbade9794726d940556dd7": "the lesson measured the attention on the right key shrinking with "
                                            "length even for T5's buckets.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(6,), name="answer_q3",
            key="001ded00235cf960c971e80d",
            hints=(
                "list the pairs: query i and key i - 480, for every query i that has such a key.",
                "the first such query is at position 480 (positions count from 0).",
            ),
            feedback={
                "d357bdfad3a41d47fb8a1961": "one too many: positions run from 0 to 511.",
                "4b86e6723a83d4b5a1bae637": "one too few: the query at position 511 counts too.",
                "eb201f34439b7983895e26f1": "in a causal model only keys before the query count, not keys after it.",
                "8fe5d0f65a1a10f2b7012e48": "that is the offset itself; the question asks how many pairs have it.",
            },
        ),
        FloatCode(
            id="q4", points=3, objectives=(6,),
            name="clipped_bias_matrix",
            reference="t5lesson.grading.bank.ex05_length_generalisation:reference_clipped_bias",
            cases=_cases(), case_timeout=1.0, tolerance=1e-9,
            blocked=(f"{__name__}:reference_clipped_bias", "t5lesson.lengthgen.schemes:Scheme.parameter_of_offset",
                     "t5lesson.lengthgen.schemes:PositionBias.per_offset"),
            hints=(
                "entry (i, j) uses the offset d = i - j: how many steps back key j is from query i.",
                "offsets larger than clip all use table[clip]; keys after the query (j > i) get 0.0.",
                "np.minimum(d, clip) turns a matrix of offsets into a matrix of table indices in one step.",
            ),
        ),
        FreeText(
            id="q5", points=3, objectives=(6,), name="q5-answer",
            rubric=(
                ("inputs never longer than training: far buckets buy nothing, and a per-offset table (or more exact "
                 "buckets) keeps distinctions a wide bucket merges, e.g. copying from an exact long distance", 1),
                ("a max_distance beyond the training length leaves the far buckets untrained; the lesson's numbers "
                 "for it, and the fix (max_distance inside the training length, or longer training)", 1),
                ("alternatives judged with the lesson's evidence: a per-offset table clipped inside the training "
                 "length does as well as buckets; a fixed distance penalty (ALiBi) extrapolates for recency but "
                 "could not copy with one layer", 1),
            ),
        ),
    ),
)
