# Answers to lesson 2's your-turn cells, each the whole cell as a learner who got it right would leave it.
# Try the cell in the lesson first: its check and hint("train_step") say where you are; look here last.
# ruff: noqa: F821  (each block runs inside the lesson: torch, F and your_turn come from its setup cell)

# %% your_turn: train_step
# Your turn (train_step): one update of the head on a batch; return the loss.
def train_step(model, opt, query, memory, answer):
    """query [b, d_model], memory [b, slots, d_model], answer [b] (symbol ids); here d_model = 64
    and 16 slots. model has the Linear maps q, k, v (d_model -> d_kv), readout (d_kv -> answers),
    and the number multiplier."""
    q, k, v = model.q(query), model.k(memory), model.v(memory)     # [b, d_kv], [b, slots, d_kv] twice
    logits = torch.einsum("bd,bmd->bm", q, k) * model.multiplier   # 1/sqrt(d_kv) only for "scaled"
    weights = logits.softmax(-1)                                   # over the slots
    answer_logits = model.readout(torch.einsum("bm,bmd->bd", weights, v))
    loss = F.cross_entropy(answer_logits, answer)
    opt.zero_grad()
    loss.backward()
    opt.step()                                                     # where Adam and Adafactor differ
    return loss.item()


train_step = your_turn("train_step", train_step)
