"""Learner answers to exercise 6's module question: a right one, and each classic mistake.

`T5Layer` is the solution's class (solutions/06_t5_layer.ipynb has the same steps); the
subclasses below each make one mistake a learner makes, switched on by a class attribute.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from t5lesson import causal_mask, relative_position_bucket


class T5Layer(nn.Module):
    SQRT_D = False  # divide q.k by sqrt(d_kv)
    BIAS_SIGN = 1  # -1: subtract the bias
    OFFSET_SIGN = 1  # -1: bucket query - key instead of key - query
    PADDING = True  # apply the padding mask
    QUERY_OFFSET = True  # place cached queries at past_len
    T5_INIT = True  # T5's initialisation of the projections
    NAIVE_SOFTMAX = False  # exp without subtracting the row maximum

    def __init__(self, d_model, num_heads, d_kv, causal=False, has_relative_bias=True, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.num_heads, self.d_kv, self.causal = num_heads, d_kv, causal
        self.num_buckets, self.max_distance = num_buckets, max_distance
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
        return x.view(b, n, self.num_heads, self.d_kv).transpose(1, 2)

    def scores(self, q, k):
        scores = q @ k.transpose(-1, -2)
        return scores / math.sqrt(self.d_kv) if self.SQRT_D else scores

    def compute_bias(self, q_len, k_len, query_offset=0):
        query_position = torch.arange(q_len)[:, None] + query_offset
        key_position = torch.arange(k_len)[None, :]
        buckets = relative_position_bucket(self.OFFSET_SIGN * (key_position - query_position),
                                           bidirectional=not self.causal, num_buckets=self.num_buckets,
                                           max_distance=self.max_distance)
        return self.BIAS_SIGN * self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)

    def allowed(self, q_len, k_len, attention_mask=None, query_offset=0):
        allowed = torch.ones(q_len, k_len, dtype=torch.bool)
        if self.causal:
            allowed = torch.from_numpy(causal_mask(q_len, k_len, query_offset))
        allowed = allowed[None, None]
        if attention_mask is not None and self.PADDING:
            allowed = allowed & attention_mask.bool()[:, None, None, :]
        return allowed

    def attend(self, scores, allowed, v):
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        if self.NAIVE_SOFTMAX:
            e = torch.exp(scores)
            weights = e / e.sum(-1, keepdim=True)
        else:
            weights = torch.softmax(scores, dim=-1)
        return weights @ v

    def merge_heads(self, context):
        b, _, n, _ = context.shape
        return context.transpose(1, 2).reshape(b, n, self.num_heads * self.d_kv)

    def forward(self, hidden_states, attention_mask=None, position_bias=None, past_key_value=None, use_cache=False):
        q, k, v = (self.split_heads(proj(hidden_states)) for proj in (self.q, self.k, self.v))
        past_len = 0
        if past_key_value is not None:
            past_len = past_key_value[0].shape[2]
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        q_len, k_len = q.shape[2], k.shape[2]
        if position_bias is None:
            if self.has_relative_bias:
                position_bias = self.compute_bias(q_len, k_len, past_len if self.QUERY_OFFSET else 0)
            else:
                position_bias = q.new_zeros(1, self.num_heads, q_len, k_len)
        context = self.attend(self.scores(q, k) + position_bias,
                              self.allowed(q_len, k_len, attention_mask, past_len), v)
        return self.o(self.merge_heads(context)), position_bias, ((k, v) if use_cache else None)


def variant(**flags):
    """A subclass of T5Layer with some flags changed, named after them."""
    name = "T5Layer_" + "_".join(f"{k}_{v}" for k, v in flags.items())
    return type(name, (T5Layer,), {k.upper(): v for k, v in flags.items()})
