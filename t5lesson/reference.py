"""The reference: Hugging Face transformers' T5Attention, built offline from a hand-made config.

Used by the tests, the benchmarks and lesson 6 to check this package against the real thing.
transformers is imported only when one of these functions is called (it is slow to import).
No weights are downloaded: everything is built from a `T5Config` and copied from our modules.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .perturbation import perturbation

__all__ = ["reference_attention", "reference_bucket", "reference_bias", "reference_bias_layer", "reference_mask",
           "report_match", "t5_attention"]


def _t5() -> tuple[Any, Any]:
    """transformers' T5Config and T5Attention (untyped here: the config takes keyword arguments of its
    base class, such as attn_implementation, that its signature does not list)."""
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention
    return T5Config, T5Attention


def _bucket_function():
    """transformers' bucket function, or, when `T5LESSON_PERTURB` is set, a stand-in for a CPU
    whose float32 log lands just below every tie (see `t5lesson.buckets`): the reference's bucket
    minus one at each tied offset. A lesson that prints a comparison with the reference at a tie
    then prints something else, and the perturbation run of the notebooks catches it."""
    _, T5Attention = _t5()
    original = T5Attention._relative_position_bucket
    if perturbation()[0] == 0.0:
        return original

    def below_at_ties(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        from .buckets import bucket_ranges, relative_position_bucket

        theirs = original(relative_position, bidirectional, num_buckets, max_distance)
        ties = torch.tensor(bucket_ranges(bidirectional, num_buckets, max_distance).ties, dtype=torch.long)
        at_tie = torch.isin(relative_position, ties.to(relative_position.device))
        ours = torch.as_tensor(relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance))
        return torch.where(at_tie, ours - 1, theirs)

    return below_at_ties


def _with_bucket_function(ref):
    ref._relative_position_bucket = _bucket_function()  # an instance attribute shadows the staticmethod
    return ref


def reference_attention(layer):
    """A transformers `T5Attention` with the same configuration and weights as our `T5SelfAttention`."""
    T5Config, T5Attention = _t5()
    config = T5Config(
        d_model=layer.d_model, d_kv=layer.d_kv, num_heads=layer.num_heads, dropout_rate=0.0,
        is_decoder=layer.causal, attn_implementation="eager",
        relative_attention_num_buckets=layer.relative_bias.num_buckets if layer.relative_bias else 32,
        relative_attention_max_distance=layer.relative_bias.max_distance if layer.relative_bias else 128,
    )
    ref = T5Attention(config, has_relative_attention_bias=layer.relative_bias is not None, layer_idx=0,
                      is_causal=layer.causal)
    state = {name: layer.state_dict()[name] for name in ("q.weight", "k.weight", "v.weight", "o.weight")}
    if layer.relative_bias is not None:
        state["relative_attention_bias.weight"] = layer.relative_bias.table.detach()
    ref.load_state_dict(state)
    return _with_bucket_function(ref).eval()


def t5_attention(config: dict, state: dict):
    """A transformers `T5Attention` (eager, no dropout) from a plain configuration and a state dict.

    config: d_model, num_heads, d_kv, causal, has_relative_bias, and optionally num_buckets (32)
    and max_distance (128). state: q.weight, k.weight, v.weight, o.weight and, with a table,
    relative_attention_bias.weight (tensors or nested lists), the names transformers uses.
    transformers' own bucket function is used as it is (no stand-in at ties).
    """
    T5Config, T5Attention = _t5()
    t5_config = T5Config(d_model=config["d_model"], d_kv=config["d_kv"], num_heads=config["num_heads"],
                         dropout_rate=0.0, is_decoder=config["causal"], attn_implementation="eager",
                         relative_attention_num_buckets=config.get("num_buckets", 32),
                         relative_attention_max_distance=config.get("max_distance", 128))
    layer = T5Attention(t5_config, has_relative_attention_bias=config["has_relative_bias"], layer_idx=0,
                        is_causal=config["causal"])
    layer.load_state_dict({name: torch.as_tensor(value, dtype=torch.float32).detach().clone()
                           for name, value in state.items()})
    return layer.eval()


def reference_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """transformers' `_relative_position_bucket` on a NumPy array; returns a NumPy array."""
    rel = torch.as_tensor(np.asarray(relative_position, dtype=np.int64))
    return _bucket_function()(rel, bidirectional, num_buckets, max_distance).numpy()


def reference_bias_layer(table, bidirectional=True, max_distance=128):
    """A transformers T5Attention that owns `table` ([num_buckets, heads]) as its bias table."""
    T5Config, T5Attention = _t5()
    table = torch.as_tensor(table)
    config = T5Config(num_heads=table.shape[1], relative_attention_num_buckets=table.shape[0],
                      relative_attention_max_distance=max_distance, is_decoder=not bidirectional,
                      attn_implementation="eager")
    ref = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    with torch.no_grad():
        ref.relative_attention_bias.weight.copy_(table)
    return _with_bucket_function(ref)


def reference_bias(table, q_len, k_len, *, bidirectional=True, max_distance=128, query_offset=0):
    """transformers' `compute_bias` for a [num_buckets, heads] table: [1, heads, q_len, k_len]."""
    ref = reference_bias_layer(table, bidirectional, max_distance)
    with torch.no_grad():
        return ref.compute_bias(q_len, k_len, past_seen_tokens=query_offset)


def reference_mask(allowed, dtype=torch.float32):
    """The additive mask transformers' eager attention expects: 0 or finfo(dtype).min."""
    allowed = torch.as_tensor(allowed, dtype=torch.bool)
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


def report_match(label, ours, theirs, tol=1e-5) -> bool:
    """Print one line saying whether two tensors agree within `tol`; return whether they do.

    The line names the tolerance, not the exact difference, so it reads the same on every machine.
    """
    ours, theirs = torch.as_tensor(ours), torch.as_tensor(theirs)
    if ours.shape != theirs.shape:
        print(f"{label}: shapes differ, ours {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}  ✗")
        return False
    ok = bool((ours - theirs).abs().max().item() <= tol) if ours.numel() else True
    print(f"{label}: max |ours - transformers| {'<=' if ok else '>'} {tol:g}  {'✓' if ok else '✗'}")
    return ok
