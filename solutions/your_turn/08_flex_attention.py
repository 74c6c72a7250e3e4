# Answers to the your-turn cells of lesson 8 (notebooks/08_flex_attention.ipynb), one block per cell.
# Try each step yourself first, with hint("NAME") if you are stuck; read this when you have.
# ruff: noqa: F821  (the names come from the lesson's earlier cells)

# %% your_turn: flex_attend
# Your turn (flex_attend): T5's attention through FlexAttention: the bias as a score_mod, the masks as a mask_mod.
def flex_attend(layer, q, k, v, query_offset=0, key_padding=None):
    """Returns [batch, heads, q_len, d_kv], the attention context, with no [q_len, k_len] tensor built."""
    batch, _, q_len, _ = q.shape
    k_len = k.shape[2]
    # the q_len + k_len - 1 distinct offsets key - query, lowest first, and the bias of each, per head
    offsets = torch.arange(-(query_offset + q_len - 1), k_len - query_offset)
    buckets = t5.relative_position_bucket(offsets, bidirectional=not layer.causal, num_buckets=layer.num_buckets,
                                          max_distance=layer.max_distance)
    per_offset = layer.relative_attention_bias.weight[buckets].T  # [heads, q_len + k_len - 1]

    def score_mod(score, b, h, q_idx, kv_idx):
        # offset kv_idx - (q_idx + query_offset), minus the lowest offset: query_offset cancels
        return score + per_offset[h, kv_idx - q_idx + q_len - 1]

    def mask_mod(b, h, q_idx, kv_idx):
        allowed = kv_idx >= 0  # every key, as a tensor
        if layer.causal:
            allowed = allowed & (kv_idx <= q_idx + query_offset)
        if key_padding is not None:
            allowed = allowed & key_padding.bool()[b, kv_idx]
        return allowed

    block_mask = create_block_mask(mask_mod, batch, None, q_len, k_len, device="cpu")
    return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=1.0)  # no 1/sqrt(d)


flex_attend = your_turn("flex_attend", flex_attend)
