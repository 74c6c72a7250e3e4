# Answers to lesson 5's your-turn cells: each block is the whole cell as a learner who got it right leaves it.
# Try the cell in the lesson first (and hint("pairs_behind"), hint("training_step")); read this only when stuck.
# ruff: noqa: F821  (each block runs inside the lesson: np, F, IGNORE, your_turn and the rest come from its setup cell)

# %% your_turn: pairs_behind
# Your turn (pairs_behind): for every distance, the training pairs behind the parameter that gives its bias.
def pairs_behind(parameter, train_len):
    """parameter: int array [n], n >= train_len; parameter[d] is the index of the learned parameter
    that gives the bias at distance d, or -1 where none does.

    Returns an int array [n]: for each d, how many (query, key) pairs of one causal training
    sequence of train_len tokens trained parameter[d] (0 where parameter[d] is -1).
    """
    pairs = train_len - np.arange(train_len)  # 1. L - d pairs at each training distance d
    seen = parameter[:train_len]  # which parameter each training distance trains
    totals = np.zeros(parameter.max() + 1 if parameter.max() >= 0 else 1, dtype=int)
    np.add.at(totals, seen[seen >= 0], pairs[seen >= 0])  # 2. a bucket adds up the pairs of all its distances
    return np.where(parameter >= 0, totals[np.maximum(parameter, 0)], 0)  # 3. -1: no parameter, no pairs


pairs_behind = your_turn("pairs_behind", pairs_behind)


# %% your_turn: training_step
# Your turn (training_step): the loss of the side-by-side models, then one update of their weights.
def per_position_loss(logits, targets):
    """Given: the cross-entropy at every position, [models, batch, 64]; 0 where the target is IGNORE."""
    return F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=IGNORE,
                           reduction="none").view(targets.shape)


def training_step(model, optimizer, schedule, tokens, targets):
    """One update on a batch; returns the loss (a 0-d tensor).

    tokens, targets: [models, batch, 64] long tensors; model(tokens) returns (logits
    [models, batch, 64, vocabulary 16], attention weights).
    """
    logits, _ = model(tokens)  # 1. forward
    per_position = per_position_loss(logits, targets)
    real_targets = (targets != IGNORE).flatten(1).sum(1)  # [models]
    per_model = per_position.view(len(targets), -1).sum(1) / real_targets  # 2. each model's mean loss
    loss = per_model.sum()  # a sum, not a mean: each model gets the gradient of its own mean loss
    optimizer.zero_grad()  # 3. without this, the gradients of earlier batches would pile up
    loss.backward()
    optimizer.step()
    schedule.step()
    return loss


training_step = your_turn("training_step", training_step)
