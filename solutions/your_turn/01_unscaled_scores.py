# Answers to lesson 1's your-turn cells, each the whole cell as a learner who got it right would leave it.
# Try the cell in the lesson first: its check and hint("row_jacobians") say where you are; look here last.

# What the lesson's setup cell has imported by then (not part of any answer):
import numpy as np

import t5lesson as t5
from t5lesson import saturation
from t5lesson.lessons.dot_products import jacobian_cases
from t5lesson.lessons.your_turn import your_turn


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


row_jacobians = your_turn("row_jacobians", row_jacobians, reference=saturation.row_jacobians,
                          cases=jacobian_cases(), hints=[
    "p = t5.softmax(multiplier * keys @ q); dp/ds is diag(p) - p p^T: np.diag(p) - np.outer(p, p).",
    "s_j = multiplier * keys[j] @ q, so ds/dq is the [n_keys, d] matrix multiplier * keys; "
    "dp/dq = (dp/ds) @ (ds/dq)."])
