"""Exercise 05: lesson 5, sharing one bias across many distances and reading longer sequences.

Notebook: solutions/05_length_generalisation.ipynb (source), exercises/05_length_generalisation.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); to change an answer, recompute its
hash with `t5grade hash QUESTION ANSWER`. The code question returns a float
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
    (`t5lesson.lengthgen.Scheme.parameter_of_offset` with unseen="clip").
    """
    from ..lengthgen.schemes import Scheme

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
    id=id_of_module(__name__),
    title="Exercise 5: one bias for many distances, and sequences longer than training",
    questions=(
        MultipleChoice(
            id="q1", points=1, objectives=(6,), name="answer_q1",
            options="ABC", key="cceea8c4953b42f1cfd33c4b",
            hints=(
                "ask, for each model, which parameter supplies the bias of a pair 1500 tokens apart, "
                "and how often that parameter was updated in training.",
            ),
            feedback={
                "f35de2d608ca9d2db8528725": "a separate parameter per distance is precise only where it was "
                                            "trained; how often did distance 500 occur in 512-token documents?",
                "e2a0752f1a2488a538a3d2ba": "the two models see the same training data but use it differently "
                                            "for large distances; lesson 5's experiment measured the difference.",
            },
        ),
        MultipleChoice(
            id="q2", points=2, objectives=(6,), name="answer_q2",
            options="ABCDE", key="e83fc0bd4028947018bfcaf1",
            hints=(
                "count: how many (query, key) pairs per training document have offset 5, and how many offset 500?",
                "what matters at test time is whether the parameter used for a far pair was trained on many pairs.",
            ),
            feedback={
                "3914cc5ca84c252dbf95410c": "more parameters are only as good as the signal that trains them; "
                                            "the far ones got almost none.",
                "b8b6241d827ad201299e5c58": "fewer parameters is true, but it is not the reason: clipping a "
                                            "per-distance table inside the training length has no fewer "
                                            "parameters and generalises as well as buckets.",
                "1e07cd964449f797fa12adc3": "count the pairs: offset d occurs L - d times in a sequence of L tokens.",
                "448a8ca75c59bcd71f5e7b92": "the lesson measured the attention on the right key shrinking with "
                                            "length even for T5's buckets.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(6,), name="answer_q3",
            key="46f0a02ede57c7251d5820bf",
            hints=(
                "list the pairs: query i and key i - 480, for every query i that has such a key.",
                "the first such query is at position 480 (positions count from 0).",
            ),
            feedback={
                "de2c31047dac6411b8e28a9f": "one too many: positions run from 0 to 511.",
                "a6ae519ee189267b41863971": "one too few: the query at position 511 counts too.",
                "8432d37f656eb91f76c6a02f": "in a causal model only keys before the query count, not keys after it.",
                "5280d3d091a02d94b9578528": "that is the offset itself; the question asks how many pairs have it.",
            },
        ),
        FloatCode(
            id="q4", points=3, objectives=(6,),
            name="clipped_bias_matrix",
            reference="t5lesson.exercises.ex05_length_generalisation:reference_clipped_bias",
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
