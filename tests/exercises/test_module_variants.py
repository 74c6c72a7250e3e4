"""Exercise 6 q4 against a private set of layers, one mistake each (tests/exercises/module_variants.py).

Every mistake is told apart by some hidden case (less than full marks), and its feedback holds the
diagnosis only where that is the likely cause; right rewrites keep full marks. (That lesson 6's own
layer, pasted in, earns at most a third: test_pasting_lessons.py.)
"""
from __future__ import annotations

import pytest
import torch
from module_variants import VARIANTS
from t5_layer_answers import T5Layer
from test_module_code import QUESTION, SEEDS, failed_cases, score

from t5lesson.exercises import t5_layer_cases as layer_cases
from t5lesson.grading.verdict import CORRECT, INCORRECT, PARTIAL


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: "check's cases" if seed is None else f"drawn from {seed!r}")
@pytest.mark.parametrize("entry", VARIANTS, ids=[v.name for v in VARIANTS])
def test_every_mistake_is_told_apart_and_named_only_where_likely(entry, seed):
    outcome = score(entry.layer, seed)
    if entry.full:
        assert (outcome.status, outcome.points) == (CORRECT, QUESTION.points), outcome.message
        return
    assert outcome.points < QUESTION.points and outcome.status in (PARTIAL, INCORRECT), outcome.message
    for words in entry.says:
        assert words in outcome.message, (entry.name, outcome.message)
    for words in entry.never:
        assert words not in outcome.message, (entry.name, outcome.message)
    assert "one of these mistakes" not in outcome.message  # the other cases settle which one it is


def test_cases_differ_in_weight_by_what_they_test():
    weights = dict(zip((c.topic for c in QUESTION.cases), QUESTION.case_weights, strict=True))
    cross = sum(w for topic, w in weights.items() if topic.startswith(layer_cases.CROSS))
    packed = sum(w for topic, w in weights.items() if topic.startswith(layer_cases.PACKED))
    assert cross * 3 == sum(weights.values())  # cross-attention: a third of the question
    assert packed * 3 == sum(weights.values())  # packed rows, one step beyond the lessons: the last third
    assert weights["T5's initialisation of the projections"] < min(w for t, w in weights.items() if "init" not in t)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_transformers_layer_behind_a_decorator_is_blocked_and_flagged(seed):
    """The cheat of the review: transformers' bucket function and attention layer, reached through
    decorated methods (T5Attention.forward is wrapped by a decorator), earn nothing and are named."""
    from transformers.models.t5 import modeling_t5

    from t5lesson.grading import harvest

    assert modeling_t5.T5Attention.forward.__code__.co_freevars  # a decorated closure, as in the review

    class Cheat(torch.nn.Module):
        def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                     max_distance=128):
            super().__init__()
            inner = num_heads * d_kv
            self.q, self.k = torch.nn.Linear(d_model, inner, bias=False), torch.nn.Linear(d_model, inner, bias=False)
            self.v, self.o = torch.nn.Linear(d_model, inner, bias=False), torch.nn.Linear(inner, d_model, bias=False)
            if has_relative_bias:
                self.relative_attention_bias = torch.nn.Embedding(num_buckets, num_heads)
            self.config = dict(d_model=d_model, num_heads=num_heads, d_kv=d_kv, causal=causal,
                               num_buckets=num_buckets, max_distance=max_distance)

        def forward(self, x, attention_mask=None, position_bias=None, past_key_value=None, use_cache=False,
                    key_value_states=None):
            n = x.shape[1]
            rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]
            modeling_t5.T5Attention._relative_position_bucket(rel)
            c = self.config
            config = modeling_t5.T5Config(d_model=c["d_model"], d_kv=c["d_kv"], num_heads=c["num_heads"],
                                          is_decoder=c["causal"], attn_implementation="eager")
            table = hasattr(self, "relative_attention_bias")
            layer = modeling_t5.T5Attention(config, has_relative_attention_bias=table)
            layer.load_state_dict(self.state_dict(), strict=False)
            out = layer(x, key_value_states=key_value_states, position_bias=position_bias)
            return out[0], out[1], None

    outcome = score(Cheat, seed)
    assert outcome.points == 0, outcome.message
    assert f"{harvest.BLOCKED_MESSAGE} (transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket)" \
        in outcome.message
    rel = torch.arange(3)[None, :] - torch.arange(3)[:, None]
    assert modeling_t5.T5Attention._relative_position_bucket(rel).shape == (3, 3)  # restored afterwards

    class Careful(T5Layer):
        """Calls the reference's bucket function and, refused, quietly falls back to its own code."""

        def compute_bias(self, q_len, k_len, query_offset=0):
            try:
                modeling_t5.T5Attention._relative_position_bucket(torch.arange(k_len)[None, :])
            except RuntimeError:
                pass
            return super().compute_bias(q_len, k_len, query_offset)

    outcome = score(Careful, seed)
    failed = failed_cases(outcome)
    assert {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} <= failed, outcome.message  # every case that used it: no credit
    assert harvest.BLOCKED_MESSAGE in outcome.message


def test_blocking_covers_closures_and_restores_them():
    import functools
    import sys
    import types

    from t5lesson.grading import harvest

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs)
        return wrapper

    module = types.ModuleType("fake_reference")
    exec("def helper(x):\n    return x + 1\n", module.__dict__)
    module.helper.__module__ = "fake_reference"
    module.wrapped = decorate(module.helper)
    module.wrapped.__module__ = "fake_reference"
    sys.modules["fake_reference"] = module
    try:
        saved = module.wrapped  # a name bound before grading is blocked too
        restore = harvest.blocking(["fake_reference:wrapped"])
        for function in (saved, module.helper):
            with pytest.raises(RuntimeError, match="fake_reference"):
                function(1)
        restore()
        assert saved(1) == 2 and module.helper(1) == 2
    finally:
        del sys.modules["fake_reference"]

