# Answers to lesson 2's your-turn cells, each the whole cell as a learner who got it right would leave it.
# Try the cell in the lesson first: its check and hint("train_step") say where you are; look here last.

# What the lesson's setup cell has imported by then (not part of any answer):
import torch
import torch.nn.functional as F

from t5lesson.lessons import folding
from t5lesson.lessons.folding import step_check
from t5lesson.lessons.your_turn import your_turn


# %% your_turn: train_step
# Your turn (train_step): one update of the head on a batch; return the loss.
def train_step(model, opt, query, memory, answer):
    """query [b, 64], memory [b, 16, 64], answer [b] (symbol ids). model has the Linear maps
    q, k, v (64 -> d_kv), readout (d_kv -> 16 answers), and the number multiplier."""
    q, k, v = model.q(query), model.k(memory), model.v(memory)     # [b, d_kv], [b, 16, d_kv] twice
    logits = torch.einsum("bd,bmd->bm", q, k) * model.multiplier   # 1/sqrt(d_kv) only for "scaled"
    weights = logits.softmax(-1)                                   # over the 16 slots
    answer_logits = model.readout(torch.einsum("bm,bmd->bd", weights, v))
    loss = F.cross_entropy(answer_logits, answer)
    opt.zero_grad()
    loss.backward()
    opt.step()                                                     # where Adam and Adafactor differ
    return loss.item()


train_step = your_turn("train_step", train_step, reference=folding.train_step, check=step_check(), hints=[
    "q, k, v = model.q(query), model.k(memory), model.v(memory); torch.einsum(\"bd,bmd->bm\", q, k) "
    "gives the [b, 16] logits; multiply them by model.multiplier.",
    "weights = logits.softmax(-1); torch.einsum(\"bm,bmd->bd\", weights, v) is the read vector; "
    "then opt.zero_grad(), loss.backward(), opt.step(), and return loss.item()."])
