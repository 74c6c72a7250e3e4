"""Lesson 4's your-turn cell (bias_from_table): slips in positions, offsets, buckets and axes."""
from __future__ import annotations

import numpy as np
from harness import TurnCheck, your_turn_answer

import t5lesson as t5
from t5lesson.bias import relative_bias

ANSWER = your_turn_answer("04_bias_heatmaps", "bias_from_table")
HEAD = "def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128, query_offset=0):\n"


def differs(function, seed):
    """Random tables (odd and even bucket counts, 1 to 4 heads), lengths, settings and cache offsets."""
    rng = np.random.default_rng(seed)
    for _ in range(150):
        bidirectional = bool(rng.integers(2))
        num_buckets = int(rng.integers(4, 40))
        max_distance = int(rng.integers(num_buckets // 2 + 2, 60))
        table = rng.normal(size=(num_buckets, int(rng.integers(1, 5))))
        q_len, k_len = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        query_offset = int(rng.choice([0, int(rng.integers(0, 40))]))
        got = np.asarray(function(table, q_len, k_len, bidirectional, max_distance, query_offset))
        want = relative_bias(table, q_len, k_len, bidirectional=bidirectional, max_distance=max_distance,
                             query_offset=query_offset)
        if got.shape != want.shape or not np.allclose(got, want):
            return (f"bias_from_table(a [{num_buckets}, {table.shape[1]}] table, {q_len}, {k_len}, {bidirectional}, "
                    f"{max_distance}, {query_offset}) differs")
    return None


def body(*lines: str) -> str:
    return HEAD + "".join(f"    {line}\n" for line in lines)


BUCKETS = "buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0], max_distance)"
WRONG = {
    "query_offset forgotten (the review's 'no offset')": body(
        "offsets = np.arange(k_len)[None, :] - np.arange(q_len)[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)"),
    "query minus key (the review's sign slip)": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = queries[:, None] - np.arange(k_len)[None, :]", BUCKETS, "return table[buckets].transpose(2, 0, 1)"),
    "32 buckets written in": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, bidirectional, 32, max_distance)",
        "return table[np.minimum(buckets, table.shape[0] - 1)].transpose(2, 0, 1)"),
    "the offset added to the keys too": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = (query_offset + np.arange(k_len))[None, :] - queries[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)"),
    "head axis moved with the wrong transpose ([heads, k_len, q_len])": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]", BUCKETS, "return table[buckets].T"),
    "always the encoder's buckets": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, True, table.shape[0], max_distance)",
        "return table[buckets].transpose(2, 0, 1)"),
    "max_distance left at its default": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0])",
        "return table[buckets].transpose(2, 0, 1)"),
    "the offset subtracted from the queries": body(
        "queries = np.arange(q_len) - query_offset",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]", BUCKETS, "return table[buckets].transpose(2, 0, 1)"),
    "a square bias built for k_len, its last q_len rows kept (right only when the queries end the keys)": body(
        "offsets = np.arange(k_len)[None, :] - np.arange(k_len)[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)[:, k_len - q_len:]"),
}

RIGHT = {
    "transformers' compute_bias: a memory and a context position, torch": HEAD + '''    import torch

    context_position = torch.arange(q_len, dtype=torch.long)[:, None] + query_offset
    memory_position = torch.arange(k_len, dtype=torch.long)[None, :]
    relative_position = memory_position - context_position
    bucket = t5.relative_position_bucket(relative_position, bidirectional=bidirectional,
                                         num_buckets=table.shape[0], max_distance=max_distance)
    values = torch.nn.functional.embedding(bucket, torch.as_tensor(table))
    return values.permute([2, 0, 1]).numpy()
''',
    "a loop over the pairs with einsum-free indexing, head axis built first": HEAD + '''    heads = table.shape[1]
    bias = np.zeros((heads, q_len, k_len), dtype=table.dtype)
    for i in range(q_len):
        for j in range(k_len):
            b = t5.relative_position_bucket(j - (query_offset + i), bidirectional, table.shape[0], max_distance)
            bias[:, i, j] = table[int(b)]
    return bias
''',
}

CHECKS = [TurnCheck(id="your turn bias_from_table", answer=ANSWER, wrong=WRONG, right=RIGHT, differs=differs,
                    namespace=lambda: {"np": np, "t5": t5}, entry="bias_from_table", max_mutants=30)]
