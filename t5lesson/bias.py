"""The relative position bias: one learned scalar per (bucket, head), added to the logits.

    bias[h, i, j] = table[bucket(j - (query_offset + i)), h]

`table` has shape [num_buckets, num_heads], as transformers' `relative_attention_bias.weight`
(Mesh TF and flaxformer store it transposed, [heads, buckets]).

The bias depends on i and j only through j - i, so it is constant along every diagonal (a
Toeplitz matrix). We therefore bucket each *distinct* offset once (q_len + k_len - 1 of them),
look up one row of values per head, and lay that row out as the q_len x k_len matrix with a
sliding-window view. The reference instead buckets all q_len * k_len offsets (one logarithm
each) and gathers a [q_len, k_len, heads] tensor before permuting it.

`query_offset` is the position of the first query: the number of tokens already in the
key/value cache when decoding incrementally. The bias rows for the new queries are then the
last rows of the full bias.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._checks import ArgumentError, check_bool, check_int, is_torch
from .buckets import bucket_config, relative_position_bucket

__all__ = ["relative_bias", "RelativePositionBias", "distinct_offsets"]


def distinct_offsets(q_len: int, k_len: int, query_offset: int = 0) -> np.ndarray:
    """All offsets key - query that occur, from the lowest (last query, first key) upward.

    There are q_len + k_len - 1 of them; row i of the bias is the window starting at index
    q_len - 1 - i.
    """
    first = -(query_offset + q_len - 1)
    return np.arange(first, k_len - query_offset)


def _check_lengths(q_len, k_len, query_offset):
    q_len = check_int("q_len", q_len, minimum=1)
    k_len = check_int("k_len", k_len, minimum=1)
    query_offset = check_int("query_offset", query_offset, minimum=0)
    return q_len, k_len, query_offset


def _check_table(table, bidirectional, max_distance):
    if not (isinstance(table, np.ndarray) or is_torch(table)):
        raise ArgumentError(
            f"table must be a NumPy array or torch tensor of shape [num_buckets, num_heads], got {type(table).__name__}"
        )
    if table.ndim != 2:
        raise ArgumentError(f"table must have shape [num_buckets, num_heads], got shape {tuple(table.shape)}")
    bucket_config(bidirectional, table.shape[0], max_distance)  # raises on a degenerate configuration


def relative_bias(table, q_len, k_len, *, bidirectional=True, max_distance=128, query_offset=0):
    """The bias [num_heads, q_len, k_len] from a table [num_buckets, num_heads].

    Works on NumPy arrays (returns an array) and torch tensors (returns a tensor, differentiable
    with respect to the table). Values are identical to transformers' `T5Attention.compute_bias`
    (which adds a leading batch axis of 1).
    """
    _check_table(table, bidirectional, max_distance)
    q_len, k_len, query_offset = _check_lengths(q_len, k_len, query_offset)
    offsets = distinct_offsets(q_len, k_len, query_offset)
    buckets = relative_position_bucket(offsets, bidirectional, table.shape[0], max_distance)

    if is_torch(table):
        index = torch.from_numpy(buckets).to(table.device)
        per_offset = table[index].t().contiguous()  # [heads, q+k-1], small
        windows = per_offset.unfold(-1, k_len, 1)  # [heads, q_len, k_len], a view: window w starts at offset w
        # Row i is window q_len-1-i. index_select makes the one copy of the output (and is
        # several times faster than flip on these overlapping strides).
        rows = torch.arange(q_len - 1, -1, -1, device=table.device)
        return windows.index_select(1, rows)
    per_offset = np.ascontiguousarray(table[buckets].T)
    windows = np.lib.stride_tricks.sliding_window_view(per_offset, k_len, axis=-1)
    return np.ascontiguousarray(windows[:, ::-1, :])


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
