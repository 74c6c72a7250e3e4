"""PyTorch modules: the bias table, and a T5 self-attention layer equal to transformers' T5Attention.

    x -> q, k, v projections (no bias terms) -> split heads
      -> scores = q k^T  (no 1/sqrt(d_kv))  + position bias + mask
      -> softmax in float32 -> weights @ v -> merge heads -> output projection

Only the first layer of a stack owns a bias table (`has_relative_bias=True`); it returns the
bias it computed and every later layer is handed that same tensor (`position_bias=`), so one
table serves the whole stack. Cross-attention has no position bias at all.

Incremental decoding: pass the (keys, values) returned by the previous call as
`past_key_value`; the new queries then sit at positions past_len, past_len + 1, ... and get the
last rows of the full bias (query_offset = past_len).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ._validate import ArgumentError, check_bool, check_int
from .bias import relative_bias
from .buckets import bucket_config
from .scores import attention, causal_mask, combine_masks, padding_mask

__all__ = ["RelativePositionBias", "T5SelfAttention", "AttentionOutput"]


class RelativePositionBias(nn.Module):
    """The learned bias table of one attention stack (owned by layer 0, reused by the rest).

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


class AttentionOutput(NamedTuple):
    output: torch.Tensor  # [batch, q_len, d_model]
    position_bias: torch.Tensor  # [1, heads, q_len, k_len], without the mask: hand it to the next layer
    past_key_value: tuple | None  # (keys, values) [batch, heads, k_len, d_kv] when use_cache=True
    weights: torch.Tensor  # [batch, heads, q_len, k_len]


class T5SelfAttention(nn.Module):
    """T5 self-attention. `causal=False` is the encoder, `causal=True` the decoder."""

    def __init__(self, d_model, num_heads, d_kv, *, causal=False, has_relative_bias=True,
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
        self.relative_bias = None
        if check_bool("has_relative_bias", has_relative_bias):
            self.relative_bias = RelativePositionBias(
                self.num_heads, num_buckets=num_buckets, max_distance=max_distance,
                bidirectional=not self.causal, init=bias_init, d_model=self.d_model)
        self.reset_parameters()

    def reset_parameters(self):
        """T5's initialisation (transformers `_init_weights`, factor 1).

        The query std carries an extra d_kv^-1/2: this is where the 1/sqrt(d_kv) of standard
        attention went. With unit-scale inputs the initial logits q.k have about unit variance,
        just as scaled attention would have.
        """
        with torch.no_grad():
            self.q.weight.normal_(0.0, (self.d_model * self.d_kv) ** -0.5)
            self.k.weight.normal_(0.0, self.d_model ** -0.5)
            self.v.weight.normal_(0.0, self.d_model ** -0.5)
            self.o.weight.normal_(0.0, (self.num_heads * self.d_kv) ** -0.5)

    def split_heads(self, x):
        """[batch, n, heads * d_kv] -> [batch, heads, n, d_kv]: each head gets its own slice."""
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_kv).transpose(1, 2)

    def merge_heads(self, x):
        """[batch, heads, n, d_kv] -> [batch, n, heads * d_kv], the input of the output projection."""
        b, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(b, n, self.num_heads * self.d_kv)

    def _check_inputs(self, hidden_states, attention_mask, past_key_value):
        if not isinstance(hidden_states, torch.Tensor) or hidden_states.ndim != 3 \
                or hidden_states.shape[-1] != self.d_model:
            is_tensor = isinstance(hidden_states, torch.Tensor)
            got = tuple(hidden_states.shape) if is_tensor else type(hidden_states).__name__
            raise ArgumentError(f"hidden_states must be a tensor [batch, seq_len, d_model={self.d_model}], got {got}")
        past_len = 0
        if past_key_value is not None:
            if not self.causal:
                raise ArgumentError("past_key_value (incremental decoding) needs a causal layer (causal=True)")
            keys, _ = past_key_value
            past_len = keys.shape[2]
        if attention_mask is not None:
            want = (hidden_states.shape[0], past_len + hidden_states.shape[1])
            if tuple(attention_mask.shape) != want:
                raise ArgumentError(
                    f"attention_mask must have shape [batch, past_len + seq_len] = {list(want)}, "
                    f"got {list(attention_mask.shape)}"
                )
        return past_len

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None,
                use_cache=False) -> AttentionOutput:
        """hidden_states [batch, seq_len, d_model]; attention_mask [batch, past_len + seq_len] of 1/0."""
        past_len = self._check_inputs(hidden_states, attention_mask, past_key_value)
        q_len = hidden_states.shape[1]
        q = self.split_heads(self.q(hidden_states))
        k = self.split_heads(self.k(hidden_states))
        v = self.split_heads(self.v(hidden_states))
        if past_key_value is not None:  # the cache holds keys/values of earlier positions
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        k_len = k.shape[2]

        if position_bias is None:  # layer 0 computes it; later layers are handed it
            if self.relative_bias is not None:
                position_bias = self.relative_bias(q_len, k_len, query_offset=past_len)
            else:
                position_bias = q.new_zeros(1, self.num_heads, q_len, k_len)

        allowed = None
        if self.causal:
            allowed = torch.from_numpy(causal_mask(q_len, k_len, past_len)).to(q.device)
        if attention_mask is not None:
            allowed = combine_masks(allowed, padding_mask(attention_mask))

        out, weights = attention(q, k, v, bias=position_bias.to(q.dtype), mask=allowed, return_weights=True)
        out = self.o(self.merge_heads(out))
        return AttentionOutput(out, position_bias, (k, v) if use_cache else None, weights)
