"""Exercise 06: the T5 attention step with a bias, a cache offset and a reused bias; who has a table.

Notebook: solutions/06_t5_layer.ipynb (source), exercises/06_t5_layer.ipynb (generated).
Keys are salted hashes; recompute one with `python -m t5lesson.grading.questions hash QUESTION ANSWER`.

The code question returns an array [heads, q_len, d_v], so it uses `PlainCode`. Its inputs are
plain nested lists (the grader passes JSON data), kept small so results stay under the harvest
limit: 2 heads, at most 4 queries, 6 keys, 3 features.
"""
from __future__ import annotations

import numpy as np

from ...bias import relative_bias
from ...scores import attention, causal_mask
from ..plain_code import PlainCode
from ..questions import Case, FreeText, MultipleChoice, Numeric
from . import Exercise, id_of_module

__all__ = ["EXERCISE", "reference_attend"]


def reference_attend(q, k, v, bias_table=None, position_bias=None, query_offset=0, causal=True):
    """One head-batched T5 attention step: softmax(q k^T + bias + mask) v, with q [heads, q_len, d]."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    q_len, k_len = q.shape[1], k.shape[1]
    if position_bias is None:
        bias = relative_bias(np.asarray(bias_table, dtype=np.float64), q_len, k_len,
                             bidirectional=not causal, query_offset=query_offset)
    else:
        bias = np.asarray(position_bias, dtype=np.float64)
    mask = causal_mask(q_len, k_len, query_offset) if causal else None
    return attention(q, k, v, bias=bias, mask=mask)


def _nested(array):
    return tuple(_nested(a) for a in array) if isinstance(array, np.ndarray) and array.ndim else float(array)


def _case(seed, q_len, k_len, topic, *, query_offset=0, causal=True, reuse=False, size=1.0):
    rng = np.random.default_rng(seed)
    q, k, v = (np.round(rng.normal(scale=size, size=(2, n, 3)), 2) for n in (q_len, k_len, k_len))
    kwargs = [("query_offset", query_offset), ("causal", causal)]
    if reuse:  # a later layer: it gets the bias tensor of layer 0, not a table
        bias = np.round(rng.normal(size=(2, q_len, k_len)), 2)
        kwargs.insert(0, ("position_bias", _nested(bias)))
        args = (_nested(q), _nested(k), _nested(v))
    else:
        table = np.round(rng.normal(size=(32, 2)), 2)
        args = (_nested(q), _nested(k), _nested(v), _nested(table))
    return Case(args, tuple(kwargs), topic)


def _cases() -> tuple[Case, ...]:
    return (
        _case(0, 4, 4, "an encoder layer: no causal mask, both halves of the table", causal=False),
        _case(1, 4, 4, "a decoder layer, full pass"),
        _case(2, 1, 6, "one new token with 5 in the cache", query_offset=5),
        _case(3, 2, 5, "two new tokens with 3 in the cache", query_offset=3),
        _case(4, 3, 3, "a later layer reusing layer 0's bias", reuse=True),
        _case(5, 1, 4, "a later layer, one new token with 3 cached", reuse=True, query_offset=3),
        _case(6, 3, 3, "large unscaled scores (subtract the row maximum before exp)", size=12.0),
    )


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 6: a T5 attention step, with a cache and a shared bias",
    questions=(
        MultipleChoice(
            id="q1", points=2, name="answer_q1", options="ABCDE", multiple=True, key="084c05066638b479285aa2bb",
            hints=(
                "two statements are true.",
                "in cross-attention the queries and the keys live in two different sequences: "
                "is there a distance between them?",
            ),
            feedback={
                "f35de2d608ca9d2db8528725": "one more is true: which position bias does it add?",
                "b7f8b30f9b0fa302b983b427": "one more is true: where do its queries and its keys come from?",
                "20b759a70dab975b88e0567e": "no bias table takes part in cross-attention, not even the encoder's.",
                "6c24c952ca93d15e9b3e4f33": "a decoder token may look at every encoder token: no causal mask here.",
            },
        ),
        Numeric(
            id="q2", points=1, name="answer_q2", key="ea8f5e0f5af9b81af0b73f35",
            hints=(
                "the bias tensor has shape [1, heads, q_len, k_len].",
                "with a cache, q_len counts only the new tokens, k_len counts the cached ones and the new ones.",
            ),
            feedback={
                "896731db3b1608b47e5a38ca": "the new token is a key too: it attends to itself.",
                "8f421c5766719ec20da2d543": "with a cache only the new token is a query; "
                                            "the old rows were computed before.",
                "5d77d5e379b58337e6c971e4": "each head has its own bias values.",
            },
        ),
        Numeric(
            id="q3", points=1, name="answer_q3", key="8c37e12fdd036087a25c589b",
            hints=(
                "which layers compute the bias, and which are handed it?",
                "count per stack (encoder, decoder), and remember what cross-attention adds.",
            ),
            feedback={
                "72829e19dc9388161196e9ae": "one table per layer is UMT5's choice, not T5's.",
                "7bd5909dcf01b21a664450c1": "the encoder and the decoder each have their own.",
                "fdaa40249eca6bead5e2e47c": "cross-attention has no position bias at all.",
            },
        ),
        PlainCode(
            id="q4", points=4, name="my_attend", reference="t5lesson.grading.bank.ex06_t5_layer:reference_attend",
            cases=_cases(), case_timeout=2.0, tolerance=1e-6,
            blocked=("t5lesson.scores:attention", "t5lesson.scores:attention_scores",
                     "t5lesson.layer:T5SelfAttention.forward",
                     "t5lesson.grading.bank.ex06_t5_layer:reference_attend", "transformers:"),
            hints=(
                "scores = q @ k.transpose(0, 2, 1), with no division by sqrt(d); then add the bias.",
                "without position_bias, build it with relative_bias(table, q_len, k_len, "
                "bidirectional=not causal, query_offset=query_offset); with it, use it as it is.",
                "mask future keys with a very negative number (causal_mask gives True where allowed), "
                "subtract each row's maximum, exponentiate, normalise, then multiply by v.",
            ),
        ),
        FreeText(id="q5", points=2, name="q5-answer"),
    ),
)
