"""A tiny model that has to learn its position bias, trained in a few seconds (lesson 4).

There are no pretrained T5 weights offline, so lesson 4 trains its own table. The model is
chosen so that the bias is the *only* source of position information:

    tokens -> embedding -> one causal T5SelfAttention (4 heads, 16 buckets, max_distance 32)
           -> one linear read-out per lag

No positional embeddings, no residual path around the attention, no LayerNorm: to predict the
token `lag` places back, the layer must attend to offset -lag, and only the bias u[h, b(j - i)]
can tell it where that is. The task asks for several lags at once (default 1 and 4), so
different heads have a reason to learn different patterns. The bias starts at zero, so every
pattern you see was learned.

Deterministic on CPU: seeded, and `train_tiny_model` runs torch with one thread while it trains
(more threads can change the order of float sums, hence the last bits of the result).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._validate import ArgumentError, check_int
from ..common.determinism import one_thread_forked_rng
from ..layer import T5SelfAttention, attention_weights
from ..perturbation import perturb_

__all__ = ["LagModel", "lag_batch", "train_tiny_model", "TrainedLagModel"]


def _check_lags(lags, seq_len):
    if not isinstance(lags, (tuple, list)) or not lags:
        raise ArgumentError(f"lags must be a non-empty tuple of positive integers, got {lags!r}")
    lags = tuple(check_int("each lag", lag, minimum=1, maximum=seq_len - 1) for lag in lags)
    if len(set(lags)) != len(lags):
        raise ArgumentError(f"lags must be distinct, got {lags}")
    return lags


def lag_batch(batch_size, seq_len, vocab, lags, generator):
    """(tokens [batch, seq_len], targets [len(lags), batch, seq_len]); target = token `lag` places back.

    Positions with no token `lag` places back get the target -100 (ignored by the loss).
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seq_len = check_int("seq_len", seq_len, minimum=2)
    vocab = check_int("vocab", vocab, minimum=2)
    lags = _check_lags(lags, seq_len)
    if not isinstance(generator, torch.Generator):
        raise ArgumentError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    tokens = torch.randint(vocab, (batch_size, seq_len), generator=generator)
    targets = torch.full((len(lags), batch_size, seq_len), -100, dtype=torch.long)
    for t, lag in enumerate(lags):
        targets[t, :, lag:] = tokens[:, :-lag]
    return tokens, targets


class LagModel(nn.Module):
    """Embedding -> one causal T5 self-attention layer (bias starts at 0) -> a read-out per lag."""

    def __init__(self, vocab=16, d_model=32, num_heads=4, d_kv=8, num_buckets=16, max_distance=32, num_lags=2):
        super().__init__()
        self.vocab = check_int("vocab", vocab, minimum=2)
        num_lags = check_int("num_lags", num_lags, minimum=1)
        self.embed = nn.Embedding(self.vocab, d_model)
        self.attention = T5SelfAttention(d_model, num_heads, d_kv, causal=True, num_buckets=num_buckets,
                                          max_distance=max_distance, bias_init="zeros")
        self.readouts = nn.ModuleList(nn.Linear(d_model, self.vocab) for _ in range(num_lags))

    @property
    def bias_table(self) -> torch.Tensor:
        """The learned [num_buckets, num_heads] table."""
        bias = self.attention.relative_bias
        assert bias is not None, "built with has_relative_bias=True"  # T5SelfAttention's default
        return bias.table

    def forward(self, tokens):
        """logits [num_lags, batch, seq_len, vocab] and the attention weights [batch, heads, q, k]."""
        x = self.embed(tokens)
        out = self.attention(x)
        weights = attention_weights(self.attention, x, out.position_bias)
        return torch.stack([readout(out.output) for readout in self.readouts]), weights


@dataclass
class TrainedLagModel:
    model: LagModel
    lags: tuple[int, ...]
    losses: list[float]  # one per step
    accuracy: list[float]  # per lag, on a fresh batch after training

    @property
    def table(self) -> np.ndarray:
        """The learned bias table [num_buckets, num_heads] as a NumPy array."""
        return self.model.bias_table.detach().numpy().copy()


def train_tiny_model(lags=(1, 4), *, steps=100, seq_len=32, batch_size=32, vocab=16, lr=3e-2, seed=0):
    """Train a `LagModel` on the lag task with AdamW; deterministic for a given seed.

    The global torch random state and thread count are left as they were (see `determinism`).
    """
    seq_len = check_int("seq_len", seq_len, minimum=2)
    lags = _check_lags(lags, seq_len)
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < 1:
        raise ArgumentError(f"lr must be a number in (0, 1), got {lr!r}")

    with one_thread_forked_rng(seed):
        generator = torch.Generator().manual_seed(seed)
        model = perturb_(LagModel(vocab=vocab, num_lags=len(lags)))
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
        losses = []
        for _ in range(steps):
            tokens, targets = lag_batch(batch_size, seq_len, vocab, lags, generator)
            logits, _ = model(tokens)
            loss = loss_fn(logits.reshape(-1, vocab), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            tokens, targets = lag_batch(256, seq_len, vocab, lags, generator)
            predicted = model(tokens)[0].argmax(-1)
            kept = targets != -100
            accuracy = [float((predicted[t] == targets[t])[kept[t]].float().mean()) for t in range(len(lags))]
    return TrainedLagModel(model.eval(), lags, losses, accuracy)
