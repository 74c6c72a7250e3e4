# Answers to the your-turn cells of lesson 7 (notebooks/07_tiny_t5.ipynb), one block per cell.
# Try each step yourself first, with hint("NAME") if you are stuck; read this when you have.
# ruff: noqa: F821  (the names come from the lesson's earlier cells)

# %% your_turn: block_forward
# Your turn (block_forward): one block: normalise, attend, add back; cross-attention in the decoder; feed-forward.
def block_forward(block, x, mask, position_bias, past=None, encoder_out=None, encoder_mask=None):
    """Returns (x, position_bias, (self-attention cache, cross-attention cache))."""
    self_past, cross_past = past if past is not None else (None, None)
    decoder = block.cross is not None
    out, position_bias, self_present = block.self_attention(
        block.norm_self(x), attention_mask=mask, position_bias=position_bias, past_key_value=self_past,
        use_cache=decoder)
    x = x + out
    cross_present = None
    if decoder:  # queries from the decoder, keys and values from the encoder's output
        out, _, cross_present = block.cross(block.norm_cross(x), attention_mask=encoder_mask,
                                            key_value_states=encoder_out, past_key_value=cross_past, use_cache=True)
        x = x + out
    x = x + block.ff(block.norm_ff(x))
    return x, position_bias, (self_present, cross_present)


block_forward = your_turn("block_forward", block_forward)

# %% your_turn: greedy
# Your turn (greedy): greedy decoding, with the cache or without it, stopping when every row has ended.
@torch.no_grad()
def greedy(model, input_ids, attention_mask, max_new_tokens, use_cache=True):
    """Returns [batch, 1 + steps]: the start token (PAD), then the tokens chosen, PAD after a row's EOS."""
    encoder_out = model.encode(input_ids, attention_mask)
    out = torch.full((input_ids.shape[0], 1), PAD)  # the start token
    done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    cache = None
    for _ in range(max_new_tokens):
        if use_cache:  # only the newest token; the cache holds the rest
            logits, cache = model.decode(out[:, -1:], encoder_out, attention_mask, cache)
        else:  # the whole prefix again, every step
            logits, _ = model.decode(out, encoder_out, attention_mask)
        token = torch.where(done, PAD, logits[:, -1].argmax(-1))
        out = torch.cat([out, token[:, None]], dim=1)
        done |= token == EOS
        if done.all():
            break
    return out


greedy = your_turn("greedy", greedy)
