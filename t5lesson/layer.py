"""PyTorch modules: the bias table, and a T5 attention layer equal to transformers' T5Attention.

    x -> q, k, v projections (no bias terms) -> split heads
      -> scores = q k^T  (no 1/sqrt(d_kv))  + position bias, masked
      -> softmax in float32 -> weights @ v -> merge heads -> output projection

`T5SelfAttention` has the interface of exercise 6 and of the class lesson 6 builds, so a
learner's class and this one are interchangeable (lesson 7 runs on either):

    layer = T5SelfAttention(d_model, num_heads, d_kv, causal=False, has_relative_bias=True,
                            num_buckets=32, max_distance=128)
    parameters q.weight, k.weight, v.weight, o.weight and, when the layer owns the table,
        relative_attention_bias.weight: transformers' `T5Attention` names
    output, position_bias, present = layer(hidden_states, attention_mask=None, position_bias=None,
                                           past_key_value=None, use_cache=False, key_value_states=None)
    steps: split_heads, scores, compute_bias(q_len, k_len, query_offset=0), allowed, attend, merge_heads

Only the first layer of a stack owns a bias table (`has_relative_bias=True`); it returns the
bias it computed and every later layer is handed that same tensor (`position_bias=`), so one
table serves the whole stack.

Incremental decoding: pass the (keys, values) returned by the previous call as
`past_key_value`; the new queries then sit at positions past_len, past_len + 1, ... and get the
last rows of the full bias (query_offset = past_len).

Cross-attention (`key_value_states` = the encoder's output): keys and values come from those
states, there is no position bias and no causal mask, and `attention_mask` is the encoder's
padding. With a cache, every call still passes `key_value_states` (it says "cross-attention"),
and from the second call on the cached keys and values are used as they are: the encoder's
states do not change while the decoder writes.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ._validate import ArgumentError, check_bool, check_int
from .bias import relative_bias
from .buckets import bucket_config, relative_position_bucket
from .scores import causal_mask

__all__ = ["RelativePositionBias", "T5SelfAttention", "AttentionOutput", "attention_weights"]


class RelativePositionBias(nn.Module):
    """The learned bias table of one attention stack, on its own (lengthgen's schemes use it).

    forward(q_len, k_len, query_offset=0) -> [1, num_heads, q_len, k_len]

    init:
      "normal"  (default) N(0, d_model^-1/2), transformers' `T5PreTrainedModel._init_weights`;
      "glorot"  Glorot-uniform over the [heads, buckets] table, as Mesh TF and flaxformer;
      "zeros"   all zero, useful in experiments that want every offset to start equal.
    """

    def __init__(self, num_heads, *, num_buckets=32, max_distance=128, bidirectional=True,
                 init="normal", d_model=None):
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.bidirectional = check_bool("bidirectional", bidirectional)
        bucket_config(self.bidirectional, num_buckets, max_distance)
        self.num_buckets, self.max_distance = int(num_buckets), int(max_distance)
        # Same layout and name as transformers, so weights copy over directly.
        self.relative_attention_bias = nn.Embedding(self.num_buckets, self.num_heads)
        self.reset_parameters(init, d_model)

    def reset_parameters(self, init="normal", d_model=None):
        weight = self.relative_attention_bias.weight
        with torch.no_grad():
            if init == "normal":
                d_model = check_int("d_model", d_model, minimum=1) if d_model is not None else None
                if d_model is None:
                    raise ArgumentError('init="normal" needs d_model: the std is d_model ** -0.5')
                weight.normal_(0.0, d_model ** -0.5)
            elif init == "glorot":
                bound = math.sqrt(6.0 / (self.num_buckets + self.num_heads))
                weight.uniform_(-bound, bound)
            elif init == "zeros":
                weight.zero_()
            else:
                raise ArgumentError(f'init must be "normal", "glorot" or "zeros", got {init!r}')

    @property
    def table(self) -> torch.Tensor:
        """The [num_buckets, num_heads] parameter."""
        return self.relative_attention_bias.weight

    def forward(self, q_len, k_len, query_offset=0):
        bias = relative_bias(self.table, q_len, k_len, bidirectional=self.bidirectional,
                             max_distance=self.max_distance, query_offset=query_offset)
        return bias.unsqueeze(0)

    def extra_repr(self) -> str:
        kind = "bidirectional" if self.bidirectional else "causal"
        return f"heads={self.num_heads}, buckets={self.num_buckets}, max_distance={self.max_distance}, {kind}"


def init_stds(d_model: int, num_heads: int, d_kv: int) -> dict[str, float]:
    """T5's initial std of each projection, by name ("q", "k", "v", "o"), in the order they are drawn.

    The one place these numbers are written: the layer draws with them, lesson 6 checks a learner's
    class against them, exercise 6 grades with them, and lesson 7's model (`lessons.tiny_t5`) and the
    length experiment's (`lengthgen.model`) start from them. The query's extra d_kv^-1/2 is where the
    1/sqrt(d_kv) of standard attention went.
    """
    return {"q": (d_model * d_kv) ** -0.5, "k": d_model ** -0.5, "v": d_model ** -0.5,
            "o": (num_heads * d_kv) ** -0.5}


class AttentionOutput(NamedTuple):
    """What a T5 attention layer returns: a tuple, so `output, position_bias, present = layer(x)` works."""
    output: torch.Tensor  # [batch, q_len, d_model]
    position_bias: torch.Tensor  # [1, heads, q_len, k_len], without the mask: hand it to the next layer
    past_key_value: tuple | None  # (keys, values) [batch, heads, k_len, d_kv] when use_cache=True


class T5SelfAttention(nn.Module):
    """T5 attention: `causal=False` is the encoder, `causal=True` the decoder; cross-attention with
    `key_value_states`. Its steps are the ones lesson 6 builds, in the same order of operations."""

    _table_view: RelativePositionBias | None  # set in __init__, outside nn.Module's registry

    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True,
                 num_buckets=32, max_distance=128, bias_init="normal"):
        super().__init__()
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.d_kv = check_int("d_kv", d_kv, minimum=1)
        self.causal = check_bool("causal", causal)
        inner = self.num_heads * self.d_kv
        self.q = nn.Linear(self.d_model, inner, bias=False)
        self.k = nn.Linear(self.d_model, inner, bias=False)
        self.v = nn.Linear(self.d_model, inner, bias=False)
        self.o = nn.Linear(inner, self.d_model, bias=False)
        bucket_config(not self.causal, num_buckets, max_distance)
        self.num_buckets, self.max_distance = int(num_buckets), int(max_distance)
        table = None
        if check_bool("has_relative_bias", has_relative_bias):
            table = RelativePositionBias(self.num_heads, num_buckets=num_buckets, max_distance=max_distance,
                                         bidirectional=not self.causal, init=bias_init, d_model=self.d_model)
            self.relative_attention_bias = table.relative_attention_bias  # transformers' name and place
        # Kept outside nn.Module's registry: the same Embedding, seen as a RelativePositionBias, so the
        # state_dict holds the table once, under transformers' name.
        object.__setattr__(self, "_table_view", table)
        self.reset_parameters()

    @property
    def has_relative_bias(self) -> bool:
        return self._table_view is not None

    @property
    def relative_bias(self) -> RelativePositionBias | None:
        """The layer's table as a `RelativePositionBias` (the same parameter), or None without one."""
        return self._table_view

    def reset_parameters(self):
        """T5's initialisation (transformers `_init_weights`, factor 1).

        The query std carries an extra d_kv^-1/2: this is where the 1/sqrt(d_kv) of standard
        attention went. With unit-scale inputs the initial logits q.k have about unit variance,
        just as scaled attention would have.
        """
        stds = init_stds(self.d_model, self.num_heads, self.d_kv)
        with torch.no_grad():
            for name in "qkvo":
                getattr(self, name).weight.normal_(0.0, stds[name])

    # --- the steps, as lesson 6 builds them (each works on any layer with the contract's attributes) ---

    def split_heads(self, x):
        """[batch, n, heads * d_kv] -> [batch, heads, n, d_kv]: each head gets its own slice."""
        batch, n, _ = x.shape
        return x.view(batch, n, self.num_heads, self.d_kv).transpose(1, 2)

    def scores(self, q, k):
        """q k^T and nothing else: no 1/sqrt(d_kv)."""
        return q @ k.transpose(-1, -2)

    def compute_bias(self, q_len, k_len, query_offset=0):
        """[1, heads, q_len, k_len]: table[bucket(key position - query position)], queries from query_offset."""
        query_position = torch.arange(q_len)[:, None] + query_offset
        key_position = torch.arange(k_len)[None, :]
        buckets = relative_position_bucket(key_position - query_position, bidirectional=not self.causal,
                                           num_buckets=self.num_buckets, max_distance=self.max_distance)
        table = self.relative_attention_bias
        return table(torch.as_tensor(buckets, device=table.weight.device)).permute(2, 0, 1).unsqueeze(0)

    def allowed(self, q_len, k_len, attention_mask=None, query_offset=0):
        """Boolean [batch or 1, 1, q_len, k_len]: the causal mask (decoder) AND the padding mask."""
        return allowed_keys(q_len, k_len, self.causal, attention_mask, query_offset)

    def attend(self, scores, allowed, v):
        """Masked softmax (in float32, as t5lesson.softmax) and the weighted sum of the values."""
        scores = scores.masked_fill(~allowed.to(scores.device), torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        return weights @ v  # [batch, heads, q_len, d_kv]

    def merge_heads(self, context):
        """[batch, heads, n, d_kv] -> [batch, n, heads * d_kv], the input of the output projection."""
        batch, _, n, _ = context.shape
        return context.transpose(1, 2).reshape(batch, n, self.num_heads * self.d_kv)

    # --- the whole layer ---

    def _check_inputs(self, hidden_states, attention_mask, past_key_value, key_value_states):
        def is_states(x):
            return isinstance(x, torch.Tensor) and x.ndim == 3 and x.shape[-1] == self.d_model

        def shape_of(x):
            return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__

        if not is_states(hidden_states):
            raise ArgumentError(f"hidden_states must be a tensor [batch, seq_len, d_model={self.d_model}], "
                                f"got {shape_of(hidden_states)}")
        cross = key_value_states is not None
        if cross:
            if not is_states(key_value_states) or key_value_states.shape[0] != hidden_states.shape[0]:
                raise ArgumentError(f"key_value_states (the encoder's output) must be a tensor [batch="
                                    f"{hidden_states.shape[0]}, enc_len, d_model={self.d_model}], "
                                    f"got {shape_of(key_value_states)}")
            if self.has_relative_bias:
                raise ArgumentError("cross-attention has no position bias: build it with has_relative_bias=False")
        past_len = 0
        if past_key_value is not None:
            if not self.causal and not cross:
                raise ArgumentError("past_key_value (incremental decoding) needs a causal layer (causal=True) "
                                    "or cross-attention (key_value_states=)")
            if not isinstance(past_key_value, (tuple, list)) or len(past_key_value) != 2:
                raise ArgumentError("past_key_value must be the (keys, values) pair the previous call returned")
            past_len = past_key_value[0].shape[2]
        if attention_mask is not None:
            k_len = key_value_states.shape[1] if cross else past_len + hidden_states.shape[1]
            want = (hidden_states.shape[0], k_len)
            if tuple(attention_mask.shape) != want:
                what = "[batch, enc_len] (the encoder's padding)" if cross else "[batch, past_len + seq_len]"
                raise ArgumentError(f"attention_mask must have shape {what} = {list(want)}, "
                                    f"got {list(attention_mask.shape)}")
        return 0 if cross else past_len

    def project(self, hidden_states, past_key_value=None, key_value_states=None):
        """(q, k, v), each [batch, heads, length, d_kv]: the projections, with the cache's keys and values."""
        q = self.split_heads(self.q(hidden_states))
        if key_value_states is not None and past_key_value is not None:  # cross, later steps: the cache as it is
            return (q, *past_key_value)
        source = hidden_states if key_value_states is None else key_value_states
        k, v = self.split_heads(self.k(source)), self.split_heads(self.v(source))
        if past_key_value is not None:  # self-attention: the cached keys and values go first
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        return q, k, v

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                use_cache=False, key_value_states=None) -> AttentionOutput:
        """hidden_states [batch, seq_len, d_model]; attention_mask of 1/0, [batch, past_len + seq_len]
        (self-attention) or [batch, enc_len] (cross-attention, the encoder's padding)."""
        past_len = self._check_inputs(hidden_states, attention_mask, past_key_value, key_value_states)
        q, k, v = self.project(hidden_states, past_key_value, key_value_states)
        q_len, k_len = q.shape[2], k.shape[2]
        if position_bias is None:  # layer 0 computes it; a layer without a table is handed it
            if self.has_relative_bias:
                position_bias = self.compute_bias(q_len, k_len, query_offset=past_len)
            else:
                position_bias = q.new_zeros(1, self.num_heads, q_len, k_len)
        if key_value_states is None:
            allowed = self.allowed(q_len, k_len, attention_mask, query_offset=past_len)
        else:  # cross-attention: every decoder token may see every real encoder token
            allowed = allowed_keys(q_len, k_len, False, attention_mask)
        context = self.attend(self.scores(q, k) + position_bias, allowed, v)
        return AttentionOutput(self.o(self.merge_heads(context)), position_bias, (k, v) if use_cache else None)


def allowed_keys(q_len, k_len, causal, attention_mask=None, query_offset=0):
    """Boolean [batch or 1, 1, q_len, k_len], True where a query may see a key: causal AND padding."""
    allowed = torch.ones(1, 1, q_len, k_len, dtype=torch.bool)
    if causal:
        allowed = allowed & torch.from_numpy(causal_mask(q_len, k_len, query_offset))
    if attention_mask is not None:
        allowed = allowed.to(attention_mask.device) & attention_mask.bool()[:, None, None, :]
    return allowed


def attention_weights(layer, hidden_states, position_bias, attention_mask=None, key_value_states=None,
                      query_offset=0):
    """The attention weights [batch, heads, q_len, k_len] of one call (no cache) of any layer with the
    contract's steps (q, k, split_heads, scores, allowed), recomputed from its inputs: for figures."""
    with torch.no_grad():
        q = layer.split_heads(layer.q(hidden_states))
        source = hidden_states if key_value_states is None else key_value_states
        k = layer.split_heads(layer.k(source))
        q_len, k_len = q.shape[2], k.shape[2]
        if key_value_states is None:
            allowed = layer.allowed(q_len, k_len, attention_mask, query_offset=query_offset)
        else:
            allowed = allowed_keys(q_len, k_len, False, attention_mask)
        scores = (layer.scores(q, k) + position_bias).masked_fill(~allowed, torch.finfo(q.dtype).min)
        return torch.softmax(scores.float(), dim=-1).to(q.dtype)
