"""Which attention layers own a relative-position bias table, in transformers' T5 and UMT5 (lesson 4).

Built offline from hand-made configs (nothing is downloaded), tiny so it takes well under a
second after transformers is imported. What the lesson shows, and where it comes from:

- T5 (transformers `models/t5/modeling_t5.py`): `T5Stack` builds its blocks with
  `has_relative_attention_bias=bool(i == 0)`, so only layer 0 of each stack owns a table; it
  returns the bias it computed and the stack hands that tensor to every later layer.
  `T5LayerCrossAttention` builds its `T5Attention` with `has_relative_attention_bias=False`:
  cross-attention has no position bias.
- UMT5 (`models/umt5/modeling_umt5.py`): `UMT5LayerSelfAttention` passes
  `has_relative_attention_bias=True` in every layer, so each layer has its own table; its
  cross-attention has none either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from .._validate import ArgumentError

__all__ = ["TINY_CONFIG", "AttentionModule", "attention_modules", "reference_models", "owners_by_kind"]

class TinyConfig(TypedDict):
    """The keyword arguments of T5Config and UMT5Config that TINY_CONFIG sets."""

    vocab_size: int
    d_model: int
    d_kv: int
    d_ff: int
    num_heads: int
    num_layers: int
    num_decoder_layers: int
    dropout_rate: float


# Small enough to build in milliseconds; only the layer structure matters here.
TINY_CONFIG = TinyConfig(vocab_size=32, d_model=16, d_kv=4, d_ff=32, num_heads=2, num_layers=3,
                         num_decoder_layers=3, dropout_rate=0.0)


@dataclass(frozen=True)
class AttentionModule:
    name: str  # e.g. "decoder.block.1.layer.1.EncDecAttention"
    stack: str  # "encoder" or "decoder"
    layer: int
    kind: str  # "self" or "cross"
    owns_table: bool  # has its own relative_attention_bias parameter
    table_shape: tuple[int, ...] | None


def reference_models() -> dict:
    """{"T5": T5Model, "UMT5": UMT5Model}, both built from TINY_CONFIG, randomly initialised."""
    from transformers import T5Config, T5Model, UMT5Config, UMT5Model

    return {"T5": T5Model(T5Config(**TINY_CONFIG)).eval(), "UMT5": UMT5Model(UMT5Config(**TINY_CONFIG)).eval()}


def attention_modules(model) -> list[AttentionModule]:
    """Every attention module of a (UM)T5 model, in order, and whether it owns a bias table."""
    from torch import nn

    if not isinstance(model, nn.Module):
        raise ArgumentError("model must be a torch.nn.Module (a transformers T5 or UMT5 model), "
                            f"got {type(model).__name__}")
    found = []
    for name, module in model.named_modules():
        if not hasattr(module, "has_relative_attention_bias"):
            continue
        parts = name.split(".")
        if len(parts) < 5 or parts[1] != "block":
            raise ArgumentError(f"unexpected module layout {name!r}: expected <stack>.block.<i>.layer.<j>.<name>")
        table = getattr(module, "relative_attention_bias", None)
        found.append(AttentionModule(
            name=name, stack=parts[0], layer=int(parts[2]),
            kind="cross" if parts[-1] == "EncDecAttention" else "self",
            owns_table=bool(module.has_relative_attention_bias) and table is not None,
            table_shape=tuple(table.weight.shape) if table is not None else None,
        ))
    if not found:
        raise ArgumentError("model has no T5-style attention modules (none has has_relative_attention_bias)")
    return found


def owners_by_kind(model) -> dict[str, list[int]]:
    """{"encoder self": [layers owning a table], "decoder self": [...], "decoder cross": [...]}."""
    out: dict[str, list[int]] = {}
    for m in attention_modules(model):
        out.setdefault(f"{m.stack} {m.kind}", [])
        if m.owns_table:
            out[f"{m.stack} {m.kind}"].append(m.layer)
    return out
