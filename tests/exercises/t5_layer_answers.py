"""Learner answers to exercise 6's module question: a right one, and each classic mistake.

`T5Layer` is the solution's class (solutions/06_t5_layer.ipynb has the same steps, self- and
cross-attention); each class attribute below switches on one mistake a learner makes, and
`variant(flag=value)` makes the subclass with it. tests/exercises/module_variants.py lists them
with the verdict each must get.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from t5lesson import causal_mask, relative_position_bucket


class T5Layer(nn.Module):
    SQRT_D = False  # divide q.k by sqrt(d_kv)
    SQRT_D_ALL = False  # divide q.k + bias by sqrt(d_kv)
    BIAS_SIGN = 1  # -1: subtract the bias
    OFFSET_SIGN = 1  # -1: bucket query - key instead of key - query
    BIDIRECTIONAL_DECODER = False  # bucket a decoder's offsets with the encoder's rule
    DEFAULT_BUCKETS = False  # 32 buckets up to 128 whatever the layer is built with
    PADDING = True  # apply the padding mask
    CAUSAL = True  # apply the causal mask in a decoder
    MASK_VALUE = None  # None: finfo.min; else the value masked scores get (-1e4: a right rewrite; 0: a mistake)
    QUERY_OFFSET = True  # place cached queries at past_len
    CACHE = True  # use the cached keys and values
    CACHE_ORDER = True  # False: the new keys before the cached ones
    T5_INIT = True  # T5's initialisation of the projections
    NAIVE_SOFTMAX = False  # exp without subtracting the row maximum
    SOFTMAX_DTYPE = None  # e.g. torch.float16: the softmax in that precision
    MERGE = True  # False: merge the heads with a reshape alone (no transpose)
    SPLIT = True  # False: split the heads with a reshape alone
    SHARED_BIAS = True  # False: a layer without a table ignores the bias it is handed
    CROSS = True  # False: no key_value_states (lesson 6's forward)
    CROSS_CAUSAL = False  # apply the causal mask in cross-attention too
    CROSS_KEYS_FROM_ENCODER = True  # False: cross-attention keys from hidden_states
    CROSS_CACHE = True  # False: cross-attention recomputes the encoder's keys and values at every step
    SEGMENTS = True  # False: no segment_ids (lesson 6's forward)
    SEGMENT_MASK = True  # False: segment_ids accepted and ignored (packed examples see each other)
    NAN = False  # return NaN everywhere
    EINSUM = False  # scores and weighted sum with einsum (a right rewrite)
    FLOAT64 = False  # compute in float64 and cast back (a right rewrite)

    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.num_heads, self.d_kv, self.causal = num_heads, d_kv, causal
        self.num_buckets, self.max_distance = num_buckets, max_distance
        if self.DEFAULT_BUCKETS:
            self.max_distance = 128
        inner = num_heads * d_kv
        self.q = nn.Linear(d_model, inner, bias=False)
        self.k = nn.Linear(d_model, inner, bias=False)
        self.v = nn.Linear(d_model, inner, bias=False)
        self.o = nn.Linear(inner, d_model, bias=False)
        if self.T5_INIT:
            nn.init.normal_(self.q.weight, std=(d_model * d_kv) ** -0.5)
            nn.init.normal_(self.k.weight, std=d_model ** -0.5)
            nn.init.normal_(self.v.weight, std=d_model ** -0.5)
            nn.init.normal_(self.o.weight, std=inner ** -0.5)
        self.has_relative_bias = has_relative_bias
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, num_heads)

    def split_heads(self, x):
        b, n, _ = x.shape
        if not self.SPLIT:
            return x.reshape(b, self.num_heads, n, self.d_kv)
        return x.view(b, n, self.num_heads, self.d_kv).transpose(1, 2)

    def scores(self, q, k):
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) if self.EINSUM else q @ k.transpose(-1, -2)
        return scores / math.sqrt(self.d_kv) if self.SQRT_D else scores

    def compute_bias(self, q_len, k_len, query_offset=0):
        query_position = torch.arange(q_len)[:, None] + query_offset
        key_position = torch.arange(k_len)[None, :]
        buckets = relative_position_bucket(self.OFFSET_SIGN * (key_position - query_position),
                                           bidirectional=not self.causal or self.BIDIRECTIONAL_DECODER,
                                           num_buckets=self.num_buckets, max_distance=self.max_distance)
        return self.BIAS_SIGN * self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)

    def allowed(self, q_len, k_len, attention_mask=None, query_offset=0, causal=None, segment_ids=None):
        allowed = torch.ones(q_len, k_len, dtype=torch.bool)
        if (self.causal if causal is None else causal) and self.CAUSAL:
            allowed = torch.from_numpy(causal_mask(q_len, k_len, query_offset))
        allowed = allowed[None, None]
        if attention_mask is not None and self.PADDING:
            allowed = allowed & attention_mask.bool()[:, None, None, :]
        if segment_ids is not None and self.SEGMENT_MASK:  # packed rows: a query sees only its own example
            allowed = allowed & (segment_ids[:, None, :, None] == segment_ids[:, None, None, :])
        return allowed

    def attend(self, scores, allowed, v):
        fill = torch.finfo(scores.dtype).min if self.MASK_VALUE is None else self.MASK_VALUE
        scores = scores.masked_fill(~allowed, fill)
        if self.NAIVE_SOFTMAX:
            e = torch.exp(scores)
            weights = e / e.sum(-1, keepdim=True)
        elif self.SOFTMAX_DTYPE is not None:
            weights = torch.softmax(scores.to(self.SOFTMAX_DTYPE), dim=-1).to(v.dtype)
        else:
            weights = torch.softmax(scores, dim=-1)
        return torch.einsum("bhqk,bhkd->bhqd", weights, v) if self.EINSUM else weights @ v

    def merge_heads(self, context):
        b, _, n, _ = context.shape
        if not self.MERGE:
            return context.reshape(b, n, self.num_heads * self.d_kv)
        return context.transpose(1, 2).reshape(b, n, self.num_heads * self.d_kv)

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None, use_cache=False,
                key_value_states=None, segment_ids=None):
        if self.FLOAT64:
            return self._float64(hidden_states, attention_mask, position_bias, past_key_value, use_cache,
                                 key_value_states, segment_ids)
        if not self.CROSS and key_value_states is not None:
            raise TypeError("forward() got an unexpected keyword argument 'key_value_states'")
        if not self.SEGMENTS and segment_ids is not None:
            raise TypeError("forward() got an unexpected keyword argument 'segment_ids'")
        cross = key_value_states is not None
        q = self.split_heads(self.q(hidden_states))
        if cross and past_key_value is not None and self.CROSS_CACHE:
            k, v = past_key_value
        else:
            source = key_value_states if cross and self.CROSS_KEYS_FROM_ENCODER else hidden_states
            k, v = self.split_heads(self.k(source)), self.split_heads(self.v(source))
        past_len = 0
        if past_key_value is not None and not cross and self.CACHE:
            past_len = past_key_value[0].shape[2]
            if self.CACHE_ORDER:
                k, v = torch.cat([past_key_value[0], k], dim=2), torch.cat([past_key_value[1], v], dim=2)
            else:
                k, v = torch.cat([k, past_key_value[0]], dim=2), torch.cat([v, past_key_value[1]], dim=2)
        q_len, k_len = q.shape[2], k.shape[2]
        if not self.CACHE and attention_mask is not None and not cross:  # the mask of the keys it has
            attention_mask = attention_mask[:, -k_len:]
        if position_bias is None or not self.SHARED_BIAS:
            if self.has_relative_bias and not cross:
                position_bias = self.compute_bias(q_len, k_len, past_len if self.QUERY_OFFSET else 0)
            else:
                position_bias = q.new_zeros(1, self.num_heads, q_len, k_len)
        causal = self.CROSS_CAUSAL if cross else None
        scores = self.scores(q, k) + position_bias
        if self.SQRT_D_ALL:
            scores = scores / math.sqrt(self.d_kv)
        allowed = self.allowed(q_len, k_len, attention_mask, past_len, causal=causal, segment_ids=segment_ids)
        context = self.attend(scores, allowed, v)
        output = self.o(self.merge_heads(context))
        if self.NAN:
            output = output * float("nan")
        return output, position_bias, ((k, v) if use_cache else None)

    def _float64(self, hidden_states, attention_mask, position_bias, past_key_value, use_cache, key_value_states,
                 segment_ids):
        """The same layer run in float64 on a copy, cast back to the input's dtype."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.FLOAT64 = False
        dtype = hidden_states.dtype
        with torch.no_grad():
            self.double()
            try:
                cast = (lambda t: None if t is None else t.double())
                past = None if past_key_value is None else tuple(cast(t) for t in past_key_value)
                out, bias, present = T5Layer.forward(twin, hidden_states.double(), attention_mask, cast(position_bias),
                                                     past, use_cache, cast(key_value_states), segment_ids)
            finally:
                self.to(dtype)
        present = None if present is None else tuple(t.to(dtype) for t in present)
        return out.to(dtype), bias.to(dtype), present


def variant(**flags):
    """A subclass of T5Layer with some flags changed, named after them."""
    name = "T5Layer_" + "_".join(f"{k}_{v}" for k, v in flags.items())
    return type(name, (T5Layer,), {k.upper(): v for k, v in flags.items()})
