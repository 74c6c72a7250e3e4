"""A private set of wrong (and rightly rewritten) layers for exercise 6's module question.

Each entry: a name, the layer (a `t5_layer_answers.variant` or a class of its own), and what the
grader must say: `full` for a right rewrite (full marks), else the words the feedback must hold
(None: no diagnosis is the likely cause, so the feedback must only say where and how it differs)
and the words it must not hold. tests/exercises/test_module_variants.py grades every entry.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from t5_layer_answers import T5Layer, variant


@dataclass(frozen=True)
class Variant:
    name: str
    layer: type
    says: tuple[str, ...] = ()  # every one of these is in the message
    never: tuple[str, ...] = ()  # none of these is
    full: bool = False  # a right rewrite: full marks


class Garbage(T5Layer):
    """Runs, and returns zeros: computes nothing useful."""

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None, use_cache=False,
                key_value_states=None, segment_ids=None):
        zeros = torch.zeros_like(hidden_states)
        bias = torch.zeros(1, self.num_heads, hidden_states.shape[1], hidden_states.shape[1])
        return zeros, bias, ((zeros, zeros) if use_cache else None)


DIFFERS = "differs from transformers' T5Attention"
OVERFLOW = "exp overflows"
BIAS_WORDS = ("the bias is subtracted", "query − key", "no position bias")

VARIANTS = (
    Variant("right", T5Layer, full=True),
    Variant("einsum", variant(einsum=True), full=True),
    Variant("float64", variant(float64=True), full=True),
    Variant("mask -1e4", variant(mask_value=-1e4), full=True),
    Variant("sqrt(d) scaling", variant(sqrt_d=True), ("divided by sqrt(d_kv)",)),
    Variant("sqrt(d) on scores and bias", variant(sqrt_d_all=True), ("the scores and the bias are divided",)),
    Variant("bias sign", variant(bias_sign=-1), ("the bias is subtracted",)),
    Variant("offset sign", variant(offset_sign=-1), ("query − key",)),
    Variant("bidirectional buckets in the decoder", variant(bidirectional_decoder=True),
            ("the decoder buckets offsets as the encoder does",)),
    Variant("max_distance ignored", variant(default_buckets=True), ("up to distance 128",)),
    Variant("no padding mask", variant(padding=False), ("attends to a padded key",)),
    Variant("no causal mask", variant(causal=False), ("apply the causal mask",)),
    Variant("mask value 0", variant(mask_value=0.0), ("masked scores are set to 0",)),
    Variant("query offset", variant(query_offset=False), ("as if the new token were at position 0",)),
    Variant("cache ignored", variant(cache=False), ("cached keys and values are not used",)),
    Variant("cache keys in the wrong order", variant(cache_order=False), ("in front of the cached ones",),
            never=BIAS_WORDS),
    Variant("no head merge transpose", variant(merge=False), ("merged with a reshape alone",)),
    Variant("no head split transpose", variant(split=False), ("split with a reshape alone",)),
    Variant("float16 softmax", variant(softmax_dtype=torch.float16), ("within about 0.001",), never=(OVERFLOW,)),
    Variant("naive softmax", variant(naive_softmax=True), ("exp overflows",)),
    Variant("NaN everywhere", variant(nan=True), ("nan or inf",), never=(OVERFLOW + "; subtract",)),
    Variant("bias not shared", variant(shared_bias=False), ("ignored the position_bias handed to it",)),
    Variant("no T5 initialisation", variant(t5_init=False), ("T5's initialisation",)),
    Variant("lesson 6's forward (no cross-attention)", variant(cross=False), ("key_value_states",)),
    Variant("causal mask in cross-attention", variant(cross_causal=True), ("cross-attention applies the causal",)),
    Variant("cross-attention keys from hidden_states", variant(cross_keys_from_encoder=False),
            ("must match the size",)),  # the encoder's mask does not fit: the error says where
    Variant("cross-attention recomputes its keys at every step", variant(cross_cache=False),
            ("ran W_k and W_v on the encoder's states again",)),
    Variant("lesson 6's forward (no segment_ids)", variant(segments=False), ("segment_ids",)),
    Variant("packed examples see each other", variant(segment_mask=False), ("in a packed row, tokens attend",)),
    Variant("computes nothing", Garbage, ("initialisation alone earns nothing",)),
)
