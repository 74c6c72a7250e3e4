# Answers to lesson 1's your-turn cells, each the whole cell as a learner who got it right would leave it.
# Try the cell in the lesson first: its check and hint("row_jacobians") say where you are; look here last.
# ruff: noqa: F821  (each block runs inside the lesson: np, t5 and your_turn come from its setup cell)

# %% your_turn: row_jacobians
# Your turn (row_jacobians): dp/ds and dp/dq for one query against its keys.
def row_jacobians(q, keys, multiplier=1.0):
    """q [d], keys [n_keys, d]; logits s = multiplier * keys @ q, weights p = t5.softmax(s).

    Returns (dp/ds [n_keys, n_keys], dp/dq [n_keys, d]).
    """
    s = multiplier * keys @ q                  # 1. the logits
    p = t5.softmax(s)                          #    and the weights
    dp_ds = np.diag(p) - np.outer(p, p)        # 2. the softmax's Jacobian: p_a (delta_ab - p_b)
    dp_dq = dp_ds @ (multiplier * keys)        # 3. chain rule: ds/dq = multiplier * keys
    return dp_ds, dp_dq


row_jacobians = your_turn("row_jacobians", row_jacobians)
