# Answers to lesson 4's your-turn cells: each block is the whole cell as a learner who got it right leaves it.
# Try the cell in the lesson first (and hint("bias_from_table")); read this only when you are stuck.
# ruff: noqa: F821  (each block runs inside the lesson: np, t5, your_turn and the rest come from its setup cell)

# %% your_turn: bias_from_table
# Your turn (bias_from_table): the [heads, q_len, k_len] bias from a table, queries after query_offset cached tokens.
def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128, query_offset=0):
    """bias[h, i, j] = table[bucket(key position - query position), h], for a table [num_buckets, heads].

    The query of row i sits at position query_offset + i, the key of column j at position j.
    """
    queries = query_offset + np.arange(q_len)  # 1. positions: the cached tokens come first
    keys = np.arange(k_len)
    offsets = keys[None, :] - queries[:, None]  # 2. [q_len, k_len], key minus query
    buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0], max_distance)  # 3.
    return table[buckets].transpose(2, 0, 1)  # 4. [q_len, k_len, heads] -> [heads, q_len, k_len]


bias_from_table = your_turn("bias_from_table", bias_from_table)
