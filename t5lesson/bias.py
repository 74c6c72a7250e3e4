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

The learned table itself, as a PyTorch module, is `t5lesson.layer.RelativePositionBias`.
"""
from __future__ import annotations

import numpy as np

from ._validate import ArgumentError, check_int, is_torch, loaded_torch
from .buckets import bucket_config, bucket_ids

__all__ = ["relative_bias", "distinct_offsets"]


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
    buckets = bucket_ids(offsets, bidirectional, table.shape[0], max_distance)

    if is_torch(table):
        return _toeplitz_torch(table, buckets, q_len, k_len)
    return _toeplitz_numpy(table[buckets].T, k_len)


def _toeplitz_numpy(per_offset, k_len):
    """[heads, q+k-1] values per distinct offset -> [heads, q_len, k_len], one copy of the output."""
    windows = np.lib.stride_tricks.sliding_window_view(per_offset, k_len, axis=-1)  # a view: window w starts at w
    return windows[:, ::-1, :].copy(order="C")  # row i is window q_len-1-i; always a fresh C-order copy


def _toeplitz_torch(table, buckets, q_len, k_len):
    torch = loaded_torch()
    index = torch.from_numpy(buckets).to(table.device)
    per_offset = table[index].t().contiguous()  # [heads, q+k-1], small
    needs_grad = table.requires_grad and torch.is_grad_enabled()
    if table.device.type == "cpu" and not needs_grad and table.dtype in (torch.float16, torch.float32, torch.float64):
        # NumPy copies the row-reversed window view at memcpy speed; torch has no negative
        # strides, and its index_select/flip on these overlapping strides is about 5x slower.
        return torch.from_numpy(_toeplitz_numpy(per_offset.numpy(), k_len))
    windows = per_offset.unfold(-1, k_len, 1)  # [heads, q_len, k_len] view, window w starts at w
    rows = torch.arange(q_len - 1, -1, -1, device=table.device)
    return windows.index_select(1, rows)  # differentiable with respect to the table
