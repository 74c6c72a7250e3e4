"""Exercise 01: the unnormalised T5 score, the two changes, and buckets by hand and by code.

Notebook: solutions/01_unscaled_scores.ipynb (source), exercises/01_unscaled_scores.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.answer_hash`); to change an answer, recompute its
hash with `python -m t5lesson.grading.questions hash QUESTION ANSWER` and run the solution notebook
through the grader (tests/grading/test_generate.py does) to prove it still gets full marks.

Code cases for q7 cover T5's default encoder and decoder tables at every bucket boundary,
offsets far beyond max_distance, and three other configurations (one with an odd number of
buckets). They avoid the few configurations where a float64 logarithm (`math.log`) and the
reference's float32 one put a boundary offset in different buckets (for example num_buckets=18,
max_distance=128 at offsets 8, 16 and 64): a learner who writes the formula right gets full
marks whether they compute in float32 or float64.
"""
from __future__ import annotations

from ..questions import Case, Code, FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

_DEFAULT = (True, 32, 128)


def _topic(rel: int, bidirectional: bool, num_buckets: int, max_distance: int) -> str:
    """What a case exercises, in words a learner can act on (it never states the answer)."""
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_direction // 2
    if not bidirectional and rel > 0:
        return "a future key in a causal table"
    n = abs(rel) if bidirectional else -rel
    side = "a key after the query" if rel > 0 else "a key before the query" if rel < 0 else "offset 0"
    if n < max_exact:
        region = "the exact range"
    elif n >= max_distance:
        region = "beyond max_distance"
    else:
        region = "the logarithmic range"
    return f"{side}, {region}"


def _cases() -> tuple[Case, ...]:
    encoder = [0, 1, 2, 7, 8, 11, 12, 15, 16, 22, 23, 31, 32, 45, 46, 63, 64, 90, 91, 127, 128, 129, 500, 10_000]
    configs = [
        (_DEFAULT, [-n for n in encoder] + encoder[1:]),
        ((False, 32, 128), [5, 1, 0, -1, -15, -16, -18, -19, -20, -21, -112, -113, -128, -1000]),
        ((True, 8, 20), [-1, -2, -3, -4, -5, -9, -10, -19, -20, -21, 2, 3, 4, 20, 21]),
        ((False, 16, 32), [3, 0, -7, -8, -9, -31, -32, -33, -100]),
        ((True, 33, 128), [-8, 8, -100, 100, -15, 15]),
    ]
    cases = []
    for (bidirectional, num_buckets, max_distance), offsets in configs:
        if (bidirectional, num_buckets, max_distance) == _DEFAULT:
            kwargs = ()
        elif num_buckets == 32 and max_distance == 128:
            kwargs = (("bidirectional", bidirectional),)
        else:
            kwargs = (("bidirectional", bidirectional), ("num_buckets", num_buckets), ("max_distance", max_distance))
        for rel in offsets:
            cases.append(Case((rel,), kwargs, _topic(rel, bidirectional, num_buckets, max_distance)))
    return tuple(cases)


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 1: the T5 score, by hand and by code",
    questions=(
        MultipleChoice(
            id="q1", points=1, name="answer_q1", options="ABCDE", key="cceea8c4953b42f1cfd33c4b",
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
            id="q2", points=2, name="answer_q2", options="ABCDE", multiple=True, key="4d2b1d530ca3f36521a44467",
            hints=(
                "exactly two options are right.",
                "one change is about the scale of the scores, the other about where position information enters.",
            ),
            feedback={
                "3914cc5ca84c252dbf95410c": "one change is missing: how does T5 tell attention "
                                            "how far apart two tokens are?",
                "e83fc0bd4028947018bfcaf1": "one change is missing: look at what happens to the size of q.k.",
            },
        ),
        FreeText(id="q3", points=2, name="q3-answer"),
        Numeric(
            id="q4", points=1, name="answer_q4", tolerance=1e-4,
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
            id="q5", points=1, name="answer_q5", key="69cb062b565580945e15663f",
            hints=(
                "first the offset: key position minus query position.",
                "offsets -1..-7 have a bucket each; from -8 on, each bucket covers a range "
                "that grows with the distance.",
                "bucket_ranges() from t5lesson prints the whole table.",
            ),
            feedback={
                "facb3a3e83fca6089a7b5ac1": "that is the bucket of the opposite offset: the offset is key minus query.",
            },
        ),
        Numeric(
            id="q6", points=1, name="answer_q6", key="97435ba8b14ae839d4b2a143",
            hints=(
                "a causal table does not split the buckets in two halves: all 32 serve keys at or before the query.",
                "with 32 buckets for one direction, offsets -1..-15 get a bucket each.",
            ),
            feedback={
                "c90b2e4d16681a488966d761": "that is the encoder's bucket; the decoder uses all "
                                            "its buckets for one direction.",
                "d4ec9609b9132f276183e879": "bucket 0 holds the offset 0 and the future keys; this key is in the past.",
            },
        ),
        Code(
            id="q7", points=4, name="my_bucket",
            reference="t5lesson.buckets:relative_position_bucket", cases=_cases(), case_timeout=1.0,
            blocked=tuple(f"t5lesson.buckets:{name}" for name in (
                "relative_position_bucket", "bucket_ids", "bucket_ranges", "_bucket_numpy", "_bucket_torch",
                "_log_bucket_numpy",
            )) + ("t5lesson.bias:relative_bias", "t5lesson.lessons.bucket_steps:bucket_steps",
                  "t5lesson.reference:reference_bucket", "transformers:",
                  "transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket"),
            hints=(
                "check the three regions in order: the sign (which half), the exact range, the logarithmic range.",
                "in the logarithmic range, use int() to truncate and min() to clamp to the last bucket.",
                "max_exact is half of the buckets of one direction, after halving for bidirectional tables.",
            ),
        ),
    ),
)
