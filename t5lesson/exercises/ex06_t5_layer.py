"""Exercise 06: T5 attention as a PyTorch module: self- and cross-attention, the cached bias, padding, packed rows.

Notebook: solutions/06_t5_layer.ipynb (source), exercises/06_t5_layer.ipynb (generated).
Keys are salted hashes; recompute one with `t5grade hash QUESTION ANSWER --exercise 06_t5_layer`.

Question 4 grades a class, `MyT5Attention`, with `ModuleCode`
(`t5lesson.grading.questions.module`): the learner's module is built and run inside their kernel on
the hidden cases of `t5_layer_cases` (encoder, right and left padding, a long decoder, cached
decoding, a second layer reusing layer 0's bias, large logits, the initialisation,
cross-attention over encoder states, and rows that pack several examples, `segment_ids`, which no
lesson builds). The layer comes first: self-attention and cross-attention carry a third of the
credit each, packed rows the last third. Only the arrays the module returns come out; the grader
compares them with transformers'
`T5Attention`, loaded with the same weights, in its own process, and names the classic mistakes
it recognises.
"""
from __future__ import annotations

from ..grading.questions.kinds import FreeText, MultipleChoice, Numeric
from ..grading.questions.module import ModuleCode
from . import Exercise, id_of_module, t5_layer_cases

__all__ = ["EXERCISE"]

_CASES = f"{t5_layer_cases.__name__}"
# transformers' T5 attention and every model that copies it (all of each module: the layers, the bucket
# function, the attention functions), and the course's own layer, bias and reference code.
_T5_COPIES = ("t5", "mt5", "umt5", "longt5", "switch_transformers", "udop", "pop2piano", "pix2struct")
_BLOCKED = (
    *(f"transformers.models.{name}.modeling_{name}:*" for name in _T5_COPIES),
    "t5lesson.layer:*", "t5lesson.bias:*", "t5lesson.flex:*", "t5lesson.reference:*", "t5lesson.lessons.layer_build:*",
    "t5lesson.scores:attention", "t5lesson.scores:attention_scores", f"{_CASES}:*",
)

EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 6: a T5 attention layer in PyTorch",
    load_first=(__name__,),  # this module draws its public cases from t5_layer_cases, which grading blocks
    questions=(
        MultipleChoice(
            id="q1", points=2, objectives=(7,), name="answer_q1",
            options="ABCDE", multiple=True, key="092493a21c7aa0bc45296fb2",
            hints=(
                "for each statement, ask where the queries and the keys of cross-attention come from.",
                "in cross-attention the queries and the keys live in two different sequences: "
                "is there a distance between them?",
            ),
            feedback={
                "67f391152ee385196d164eea": "true, but not the whole answer: which position bias does it add?",
                "37842dad79924e988ab21dfc": "true, but not the whole answer: where do its queries and its keys "
                                            "come from?",
                "b70c312ad1cdae93050d8d5d": "no bias table takes part in cross-attention, not even the encoder's.",
                "0747c17d4158ca67e065a813": "a decoder token may look at every encoder token: no causal mask here.",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(7,), name="answer_q2",
            key="aea2aea721a9c5d8cefa22c3",
            hints=(
                "the bias tensor has shape [1, heads, q_len, k_len].",
                "with a cache, q_len counts only the new tokens, k_len counts the cached ones and the new ones.",
            ),
            feedback={
                "aed83cc9b6683b36041d0f94": "the new token is a key too: it attends to itself.",
                "1a026cc2cede809037d2a650": "with a cache only the new token is a query; "
                                            "the old rows were computed before.",
                "45972b96d98c75a572b26ae2": "each head has its own bias values.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(7,), name="answer_q3",
            key="427252d91e6252ef9c7c57a2",
            hints=(
                "two masks apply in a decoder: the causal mask and the padding mask; a key must pass both.",
                "list the key positions 0..6 and strike out the future ones, then the padded ones.",
            ),
            feedback={
                "2a1c2da34329f248bd3e2d94": "the padding mask is missing: the first three keys are padding.",
                "8c4be0cb3264cae7c9a0f060": "the causal mask is missing: position 6 is after the query.",
                "94d6b33156812e0e603c0d92": "both masks apply here, the causal one and the padding one.",
                "205095f468b93cd3d228d5e9": "a query may attend to its own position.",
            },
        ),
        ModuleCode(
            id="q4", points=6, objectives=(7,),
            name="MyT5Attention", driver="t5lesson.exercises.t5_layer_driver",
            reference=f"{_CASES}:reference_case", diagnose=f"{_CASES}:diagnose", shows=f"{_CASES}:shows",
            what="transformers' T5Attention", cases=t5_layer_cases.cases(), case_timeout=5.0,
            hidden="t5lesson.exercises.t5_layer_cases:hidden_cases",
            case_weights=t5_layer_cases.case_weights(), supporting=t5_layer_cases.SUPPORTING,
            blocked=_BLOCKED,
            hints=(
                "run the step-by-step check below the class: the first step that differs is where to look (it "
                "checks self-attention; for cross-attention, ask where its keys come from and which masks apply).",
                "scores = q @ k^T with no 1/sqrt(d_kv); the bias is table[bucket(key - query)], with the queries at "
                "positions query_offset, query_offset + 1, ...; a decoder uses bidirectional=False.",
                "a key is allowed when it passes the causal mask (decoder) AND its attention_mask is 1; with a cache, "
                "query_offset is the number of cached keys, and the new keys go after the cached ones. With "
                "key_value_states, k and v are projections of those states: no bias, no causal mask, the encoder's "
                "attention_mask, and a cache that holds them as they are. With segment_ids, a key is allowed only "
                "where its segment equals the query's; the bias stays as it is (an offset is an offset).",
            ),
        ),
        FreeText(
            id="q5", points=2, objectives=(7,), name="q5-answer",
            rubric=(
                ("the bias is looked up by key position minus query position, and with a cache the new query sits "
                 "at position past_len, after every cached key", 1),
                ("with the offset left at 0 the cached keys look like keys after the query (the future bucket, "
                 "bucket 0 in a decoder): every key gets the wrong bias, and a mask built the same way hides all "
                 "but the first key", 0.5),
                ("in a full pass queries and keys share the numbering 0..L-1, so no offset is needed", 0.5),
            ),
            checklist=(
                "Does your answer say which two positions the bias lookup compares, and where the new query "
                "sits when the cache is not empty?",
                "Does it say what goes wrong for the cached keys, in the bias and in a mask, when the new "
                "query's position is not accounted for, and why?",
                "Does it say why a pass over the whole sequence needs no offset?",
            ),
        ),
    ),
)
