# Answers to lesson 3's your-turn cells: each block is the whole cell as a learner who got it right leaves it.
# Try the cell in the lesson first (and hint("bucket_of")); read this only when you are stuck.
# ruff: noqa: F821  (each block runs inside the lesson: np, your_turn and the rest come from its setup cell)

# %% your_turn: bucket_of
# Your turn (bucket_of): write bucket_in_side, steps 2 to 4 (the exact region, the log region, the clamp).
def bucket_of(offset, bidirectional=True, num_buckets=32, max_distance=128):
    """The bucket (an int) of one offset j - i (an int), computed as in sections 2.1 to 2.5."""
    if bidirectional:  # step 1, given: two halves; a key on the right uses the upper one
        per_side = num_buckets // 2
        start = per_side if offset > 0 else 0
        n = abs(offset)
    else:  # the decoder: one side of num_buckets; a key on the right counts as n = 0
        per_side, start, n = num_buckets, 0, max(-offset, 0)
    return start + bucket_in_side(n, per_side, max_distance)


def bucket_in_side(n, per_side, max_distance):
    """The bucket of a distance n >= 0 within one side of per_side buckets, from 0 to per_side - 1."""
    max_exact = per_side // 2  # 2. the exact region: each distance below max_exact is its own bucket
    if n < max_exact:
        return n
    # 3. the log region: the bucket grows with log(n), one bucket per factor of growth
    fraction = np.log(n / max_exact) / np.log(max_distance / max_exact)
    bucket = max_exact + int(fraction * (per_side - max_exact))
    return min(bucket, per_side - 1)  # 4. the clamp: every farther distance shares the last bucket


bucket_of = your_turn("bucket_of", bucket_of)
