"""The position bias of a scheme (`schemes`) as a PyTorch module: the learned part of the tiny model.

`schemes` says which parameter serves which offset, with NumPy alone (so the lessons' pair counts
run in the browser); this module holds those parameters and turns them into the [L, L] bias.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._validate import check_int
from ..buckets import bucket_ids
from ..layer import RelativePositionBias
from .schemes import alibi_slopes, get_scheme

__all__ = ["PositionBias"]


class PositionBias(nn.Module):
    """The bias of one scheme for `models` independent models at once: [models, heads, L, L].

    Entry (m, h, i, j) depends only on d = i - j. The models (one per seed) share nothing: their
    tables are the columns of one [parameters, models * heads] table, model-major, so T5's
    `RelativePositionBias` serves them all as if they were models * heads heads. Entries above
    the diagonal (future keys) get the bias of offset 0; the causal mask removes them.
    """

    slopes: torch.Tensor  # ALiBi's, a buffer registered in __init__

    def __init__(self, scheme, num_heads, train_len, models=1):
        super().__init__()
        self.scheme = get_scheme(scheme)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.train_len = check_int("train_len", train_len, minimum=2)
        self.models = check_int("models", models, minimum=1)
        columns = self.models * self.num_heads
        s = self.scheme
        if s.kind == "t5":
            # T5's own module and bucket function, causal, started at zero.
            self.t5 = RelativePositionBias(columns, num_buckets=s.num_buckets, max_distance=s.max_distance,
                                           bidirectional=False, init="zeros")
        elif s.kind == "per-offset":
            self.last_own = s.last_own_offset(self.train_len)  # offsets beyond share or lack a parameter
            self.table = nn.Parameter(torch.zeros(self.last_own + 1, columns))
        elif s.kind == "alibi":
            slopes = np.tile(alibi_slopes(self.num_heads), self.models)
            self.register_buffer("slopes", torch.tensor(slopes, dtype=torch.float32))
        self._offsets = {}

    def _offset_matrix(self, length):
        """[L, L] long tensor of d = max(i - j, 0), cached per length."""
        if length not in self._offsets:
            i = torch.arange(length)
            self._offsets[length] = (i[:, None] - i[None, :]).clamp(min=0)
        return self._offsets[length]

    def per_offset(self, n):
        """Bias at offsets d = 0..n-1, a differentiable tensor [models * heads, n] (None for "none")."""
        n = check_int("n", n, minimum=1)
        s = self.scheme
        d = torch.arange(n)
        if s.kind == "t5":
            return self.t5.table[bucket_ids(-d, False, s.num_buckets, s.max_distance)].t()
        if s.kind == "per-offset":
            values = self.table[d.clamp(max=self.last_own)].t()
            if s.unseen == "zero":  # never trained: the start value, 0, and no gradient
                values = torch.where(d[None, :] <= self.last_own, values, torch.zeros(()))
            return values
        if s.kind == "alibi":
            return -self.slopes[:, None] * d[None, :].float()
        return None

    def forward(self, length):
        """[models, heads, L, L] bias for a sequence of `length` tokens, or None for "none"."""
        length = check_int("length", length, minimum=1)
        if self.scheme.kind == "t5":
            bias = self.t5(length, length)[0]  # t5lesson.RelativePositionBias: [1, M*H, L, L] -> [M*H, L, L]
        else:
            values = self.per_offset(length)
            if values is None:
                return None
            bias = values[:, self._offset_matrix(length)]
        return bias.view(self.models, self.num_heads, length, length)

    def curve(self, n) -> np.ndarray:
        """The bias against offset d = 0..n-1, a NumPy array [models, heads, n] (zeros for "none")."""
        n = check_int("n", n, minimum=1)
        with torch.no_grad():
            values = self.per_offset(n)
        if values is None:
            return np.zeros((self.models, self.num_heads, n))
        return values.double().numpy().reshape(self.models, self.num_heads, n)
