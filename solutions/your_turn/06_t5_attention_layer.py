# Answers to the your-turn cells of lesson 6 (notebooks/06_t5_attention_layer.ipynb), one block per cell.
# Try each step yourself first, with hint("NAME") if you are stuck; read this when you have.
# ruff: noqa: F821  (the names come from the lesson's earlier cells)

# %% your_turn: compute_bias
# Your turn (compute_bias): the bias [1, heads, q_len, k_len] from the table, with the query offset.
def compute_bias(self, q_len, k_len, query_offset=0):
    """bias[0, h, i, j] = table[bucket(j - (query_offset + i)), h]; the table is self.relative_attention_bias."""
    query_position = torch.arange(q_len)[:, None] + query_offset
    key_position = torch.arange(k_len)[None, :]
    buckets = t5.relative_position_bucket(key_position - query_position, bidirectional=not self.causal,
                                          num_buckets=self.num_buckets, max_distance=self.max_distance)
    return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)  # [1, heads, q_len, k_len]


compute_bias = your_turn("compute_bias", compute_bias)

# %% your_turn: attend
# Your turn (attend): the masked softmax over the keys, then the weighted sum of the values.
def attend(self, scores, allowed, v):
    """scores [batch, heads, q_len, k_len], bias already added; allowed: bool; v [batch, heads, k_len, d_kv]."""
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    return weights @ v  # [batch, heads, q_len, d_kv]


attend = your_turn("attend", attend)
