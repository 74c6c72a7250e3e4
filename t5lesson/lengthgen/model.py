"""The tiny model of the experiment: one causal attention layer and nothing else.

    x = embed(tokens)                         token embeddings only, no absolute positions
    h = LayerNorm(x)                          pre-LayerNorm
    a = attention(q(h), k(h), v(h), bias)     T5 style: unscaled q.k + position bias + causal mask
    logits = unembed(LayerNorm(x + o(a)))

With no positional embeddings and no MLP, everything the model knows about relative order comes
from the position bias, so changing the scheme changes only that. (The causal mask still tells a
query how many keys it sees, through the softmax's normaliser: a hint of absolute position.)

One instance holds several independent models (one per seed) side by side: every weight has a
leading "model" axis and the models never mix. Training three seeds together costs little more
than training one, because at this size the time goes into per-operation overhead, not
arithmetic. Model m is initialised from torch.manual_seed(seeds[m]) exactly as it would be alone,
and for a given seed the weights are the same whatever the scheme (every table starts at zero).
Initialisation follows T5 (transformers `_init_weights`, factor 1): the query std carries the
1/sqrt(d_kv) that the unscaled scores leave out.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .._validate import ArgumentError, check_int
from ..layer import init_stds
from ..scores import additive_mask, attention_scores, causal_mask
from .position_bias import PositionBias

__all__ = ["TinyAttentionModel"]


class TinyAttentionModel(nn.Module):
    """forward(tokens [models, batch, L]) -> (logits [models, batch, L, vocab], weights [models, batch, heads, L, L]).

    seeds: one independent model per seed, side by side.
    """

    embed: torch.Tensor  # registered in __init__ (one [models, ...] parameter each), as are the ones below
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor
    unembed: torch.Tensor

    def __init__(self, vocab_size, d_model, num_heads, scheme, train_len, seeds=(0,)):
        super().__init__()
        self.vocab_size = check_int("vocab_size", vocab_size, minimum=2)
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if self.d_model % self.num_heads:
            raise ArgumentError(f"d_model must be a multiple of num_heads, got d_model={d_model}, "
                                f"num_heads={num_heads}")
        if not isinstance(seeds, (tuple, list)) or not seeds:
            raise ArgumentError(f"seeds must be a non-empty tuple of seeds (one model each), got {seeds!r}")
        self.seeds = tuple(check_int("each seed", s, minimum=0) for s in seeds)
        self.d_kv = self.d_model // self.num_heads
        m, d, v = len(self.seeds), self.d_model, self.vocab_size
        shapes = {"embed": (v, d), "q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "unembed": (v, d)}
        stds = {"embed": 1.0, **init_stds(d, self.num_heads, self.d_kv), "unembed": d ** -0.5}
        weights = {name: torch.empty(m, *shape) for name, shape in shapes.items()}
        for index, seed in enumerate(self.seeds):  # each model from its own seed, in a fixed order
            generator = torch.Generator().manual_seed(seed)
            for name in shapes:
                weights[name][index].normal_(0.0, stds[name], generator=generator)
        for name, value in weights.items():
            self.register_parameter(name, nn.Parameter(value))
        self.norm_weight, self.final_norm_weight = (nn.Parameter(torch.ones(m, 1, 1, d)) for _ in range(2))
        self.norm_bias, self.final_norm_bias = (nn.Parameter(torch.zeros(m, 1, 1, d)) for _ in range(2))
        self.position = PositionBias(scheme, self.num_heads, train_len, models=m)
        self._masks = {}

    def _norm(self, x, weight, bias):
        return F.layer_norm(x, (self.d_model,)) * weight + bias

    @staticmethod
    def _linear(x, weight):  # x [M, B, L, in], weight [M, out, in] -> [M, B, L, out]
        m, b, n, _ = x.shape
        return torch.bmm(x.reshape(m, b * n, -1), weight.transpose(1, 2)).view(m, b, n, -1)

    def _split(self, x):  # [M, B, L, d_model] -> [M, B, heads, L, d_kv]
        m, b, n, _ = x.shape
        return x.view(m, b, n, self.num_heads, self.d_kv).transpose(2, 3)

    def _mask(self, length):
        """Additive causal mask [L, L]: 0 where allowed, the most negative float32 where not."""
        if length not in self._masks:
            self._masks[length] = additive_mask(torch.from_numpy(causal_mask(length, length)), torch.float32)
        return self._masks[length]

    def forward(self, tokens):
        models = len(self.seeds)
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3 or tokens.dtype != torch.long \
                or tokens.shape[0] != models:
            got = f"{tuple(tokens.shape)} {tokens.dtype}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise ArgumentError(f"tokens must be a long tensor [models={models}, batch, length], got {got}")
        length = tokens.shape[2]
        # Model m's rows of the stacked table start at m * vocab: one embedding lookup for all models.
        shifted = tokens + (torch.arange(models) * self.vocab_size)[:, None, None]
        x = F.embedding(shifted, self.embed.view(-1, self.d_model))  # [M, B, L, d]
        h = self._norm(x, self.norm_weight, self.norm_bias)
        q, k, v = (self._split(self._linear(h, w)) for w in (self.q, self.k, self.v))
        bias = self.position(length)  # [M, H, L, L]
        # The mask is folded into the bias once per step (one addition over [M, H, L, L] instead
        # of one over every sequence of the batch); both broadcast over the batch axis.
        bias_and_mask = self._mask(length) if bias is None else bias + self._mask(length)
        scores = attention_scores(q, k, bias=bias_and_mask.unsqueeze(-3 if bias is None else 1), scale=1.0)
        # torch.softmax directly: every score is finite here (the mask is float32's most negative
        # number, not -inf), so the package softmax's guard against -inf, a clamp whose backward
        # pass costs a fifth of a training step at this size, has nothing to do.
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights, v)
        x = x + self._linear(out.transpose(2, 3).reshape(x.shape), self.o)
        return self._linear(self._norm(x, self.final_norm_weight, self.final_norm_bias), self.unembed), weights
