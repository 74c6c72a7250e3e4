# Answers to the your-turn cells of notebooks/00_start_here.ipynb, one block per cell.
# Try each cell yourself first: the lesson's check tells you where your version differs, and
# hint("weight_of_b") gives a hint, one level more each time you run it.
# ruff: noqa: F821  (each block runs inside the lesson: np and your_turn come from its setup cell)

# %% your_turn: weight_of_b
# Your turn (weight_of_b): key B's softmax weight when its score is `gap` above key A's.
def weight_of_b(gap):
    return np.exp(gap) / (1 + np.exp(gap))


weight_of_b = your_turn("weight_of_b", weight_of_b)
