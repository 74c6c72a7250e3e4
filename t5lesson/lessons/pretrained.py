"""The relative-position bias tables of a real, trained T5 checkpoint (lesson 4, "What a trained T5 learned").

    from t5lesson.lessons.pretrained import load_bias_tables
    from t5lesson.lessons.pretrained_figures import bias_curves_figure
    tables = load_bias_tables("t5-small")          # a hub id, or a local folder
    tables.encoder.table                           # float32 [num_buckets, heads]
    tables.decoder.table
    print(tables.summary())

The checkpoint is loaded with transformers' `AutoModel.from_pretrained`, and the tables are read
from the attention modules that own a `relative_attention_bias` (an `nn.Embedding` of shape
`[num_buckets, heads]`, transformers `models/t5/modeling_t5.py`, `T5Attention`). Each stack
keeps the bucketing it uses: `num_buckets` and `max_distance` from the config
(`relative_attention_num_buckets`, `relative_attention_max_distance`) and `bidirectional =
not is_decoder`, as `T5Attention.compute_bias` passes it to `_relative_position_bucket`.

Model families: T5 and mT5 keep one table per stack, in layer 0 (`T5Stack` builds its blocks
with `has_relative_attention_bias=bool(i == 0)`); UMT5 keeps one table per self-attention layer
(`models/umt5/modeling_umt5.py`). `StackTables.tables` always holds every table of a stack, one
per owning layer; `StackTables.table` is the single table of a T5-style stack and, for a
per-layer stack, raises an error that says to pick a layer.

Nothing is downloaded unless you ask for a hub id that is not cached yet. Offline, or when the
weights are missing, `WeightsNotAvailable` (an `OSError`) says how to get them. Bad arguments
raise `t5lesson.ArgumentError`.

Lesson 4 draws these tables with `t5lesson.lessons.pretrained_figures`, which also wraps its
hand-made heads in the same structure, so it can draw the same figure with or without weights.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import ArgumentError, check_bool, check_int

__all__ = ["SUPPORTED_MODEL_TYPES", "WeightsNotAvailable", "StackTables", "BiasTables", "load_bias_tables",
           "tables_from_model", "how_to_get_weights"]

SUPPORTED_MODEL_TYPES = ("t5", "mt5", "umt5")


class WeightsNotAvailable(OSError):
    """The checkpoint could not be found on this machine, nor downloaded. The message says how to get it."""


def how_to_get_weights(name: str = "t5-small") -> str:
    """The instructions that `WeightsNotAvailable` and lesson 4 give for getting real weights."""
    local = f"{name.split('/')[-1]}-local"
    return (  # lines of at most 88 characters: they are printed in a notebook
        "To see a real T5's bias tables, either\n"
        "  - run this where the internet is reachable (Colab, for example) and pass a hub id\n"
        f"    such as {name!r}: transformers downloads the checkpoint once and caches it; or\n"
        "  - on a machine with internet access, save a copy to a folder, in Python:\n"
        "        from transformers import AutoModel\n"
        f"        AutoModel.from_pretrained({name!r}).save_pretrained({local!r})\n"
        f"    then bring that folder here and pass its path: load_bias_tables({local!r})."
    )


@dataclass(frozen=True)
class StackTables:
    """The bias table(s) of one stack (encoder or decoder) and the bucketing they are read with.

    tables: one float32 array [num_buckets, heads] per layer that owns a table, in layer order.
    layers: the index of the layer that owns each table (T5: (0,); UMT5: (0, 1, ..., n-1)).
    """

    stack: str
    tables: tuple
    layers: tuple
    num_buckets: int
    max_distance: int
    bidirectional: bool

    @property
    def per_layer(self) -> bool:
        """True when the stack has more than one table (UMT5: one per layer)."""
        return len(self.tables) > 1

    @property
    def heads(self) -> int:
        return int(self.tables[0].shape[1])

    @property
    def table(self) -> np.ndarray:
        """The stack's one table [num_buckets, heads]; an error for a stack with one table per layer."""
        if self.per_layer:
            raise ArgumentError(f"the {self.stack} has one table per layer ({len(self.tables)} tables, UMT5 style), "
                                f"so there is no single table: use .tables[i] for layer .layers[i], or .layer(n)")
        return self.tables[0]

    def layer(self, n) -> np.ndarray:
        """The table owned by layer n (for T5, only layer 0 owns one and every later layer reuses it)."""
        n = check_int("n", n, minimum=0)
        if n in self.layers:
            return self.tables[self.layers.index(n)]
        if not self.per_layer:
            return self.tables[0]  # T5: later layers reuse layer 0's bias
        raise ArgumentError(f"the {self.stack} has tables for layers {list(self.layers)}, got n={n}")

    def describe(self) -> str:
        kind = "bidirectional" if self.bidirectional else "causal"
        owners = (f"one table per layer, {len(self.tables)} layers (UMT5 style)" if self.per_layer
                  else f"one table, in layer {self.layers[0]}, shared by every layer of the stack")
        return (f"{self.stack}: {owners};\n    each [num_buckets={self.num_buckets}, heads={self.heads}], "
                f"{kind}, max_distance={self.max_distance}")


@dataclass(frozen=True)
class BiasTables:
    """Every relative-position bias table of one model: `encoder`, and `decoder` (None if it has none)."""

    source: str
    model_type: str  # "t5", "mt5", "umt5", or "toy"
    encoder: StackTables
    decoder: StackTables | None

    @property
    def per_layer(self) -> bool:
        return self.encoder.per_layer or (self.decoder is not None and self.decoder.per_layer)

    def stacks(self) -> list:
        return [s for s in (self.encoder, self.decoder) if s is not None]

    def summary(self) -> str:
        lines = [f"{self.source}; model type: {self.model_type}"]
        lines += ["  " + s.describe() for s in self.stacks()]
        if self.decoder is None:
            lines.append("  decoder: none in this checkpoint")
        return "\n".join(lines)


def _check_name(name_or_path) -> str:
    if isinstance(name_or_path, os.PathLike):
        name_or_path = os.fspath(name_or_path)
    if not isinstance(name_or_path, str):
        raise ArgumentError("name_or_path must be a hub id such as 't5-small' or the path of a local folder, "
                            f"got {name_or_path!r} of type {type(name_or_path).__name__}")
    if not name_or_path.strip():
        raise ArgumentError("name_or_path must not be empty: give a hub id such as 't5-small' or a local folder")
    return name_or_path


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or os.path.isabs(name) or name.count("/") > 1 or "\\" in name


def tables_from_model(model, source: str = "model") -> BiasTables:
    """The tables of a transformers T5, mT5 or UMT5 model already in memory (copied to NumPy, float32)."""
    from torch import nn

    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        raise ArgumentError(f"model must be a transformers T5, mT5 or UMT5 model, got {type(model).__name__}")
    model_type = getattr(model.config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ArgumentError(f"{source} is a {model_type!r} model; only {', '.join(SUPPORTED_MODEL_TYPES)} keep "
                            "T5's relative-position bias tables")
    found: dict[str, list] = {"encoder": [], "decoder": []}
    bidirectional: dict[str, set] = {"encoder": set(), "decoder": set()}
    for name, module in model.named_modules():
        table = getattr(module, "relative_attention_bias", None)
        if table is None or not getattr(module, "has_relative_attention_bias", False):
            continue
        parts = name.split(".")  # <stack>.block.<i>.layer.<j>.SelfAttention
        if len(parts) < 3 or parts[0] not in found or parts[1] != "block":
            raise ArgumentError(f"unexpected module layout {name!r}: expected <encoder|decoder>.block.<i>...")
        found[parts[0]].append((int(parts[2]), table.weight.detach().float().cpu().numpy().copy()))
        bidirectional[parts[0]].add(not module.is_decoder)
    if not found["encoder"]:
        raise ArgumentError(f"{source} has no encoder bias table")
    num_buckets = getattr(model.config, "relative_attention_num_buckets", None)
    max_distance = getattr(model.config, "relative_attention_max_distance", None)
    if not isinstance(num_buckets, int) or not isinstance(max_distance, int):
        raise ArgumentError(f"{source}'s config names no bucket count and max distance of its position bias")
    stacks = {}
    for stack, items in found.items():
        if not items:
            stacks[stack] = None
            continue
        items.sort(key=lambda item: item[0])
        (is_bidirectional,) = bidirectional[stack]
        stacks[stack] = StackTables(stack, tuple(t for _, t in items), tuple(n for n, _ in items), num_buckets,
                                    max_distance, is_bidirectional)
    return BiasTables(source, model_type, stacks["encoder"], stacks["decoder"])


def load_bias_tables(name_or_path, *, local_files_only=False) -> BiasTables:
    """Load a T5-family checkpoint with `from_pretrained` and return its bias tables.

    name_or_path: a hub id (t5-small, t5-base, google/t5-v1_1-base, google/flan-t5-small, ...) or
    a local folder written by `save_pretrained`. local_files_only=True never touches the network
    (a hub id must then be in the local cache). Raises WeightsNotAvailable when the weights are
    neither here nor downloadable, ArgumentError for anything that is not a T5-family checkpoint.
    """
    name = _check_name(name_or_path)
    local_files_only = check_bool("local_files_only", local_files_only)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ArgumentError(f"{name!r} is a file; give the folder that holds config.json and the weights")
        if not (path / "config.json").is_file():
            raise ArgumentError(f"{name!r} has no config.json: it is not a folder written by save_pretrained")
        name = str(path)
    elif _looks_like_path(name):
        raise WeightsNotAvailable(f"no folder {name!r} on this machine.\n" + how_to_get_weights())

    from transformers import AutoConfig, AutoModel

    try:
        config = AutoConfig.from_pretrained(name, local_files_only=local_files_only)
    except OSError as error:
        raise WeightsNotAvailable(f"could not load {name!r}: it is not on this machine, and it could not be "
                                  f"downloaded ({str(error).splitlines()[0]}).\n" + how_to_get_weights()) from error
    except ValueError as error:  # e.g. huggingface_hub's HFValidationError for a malformed id
        raise ArgumentError(f"{name!r} is neither a local folder nor a valid hub id: {error}") from error
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        raise ArgumentError(f"{name!r} is a {config.model_type!r} model; only {', '.join(SUPPORTED_MODEL_TYPES)} "
                            "keep T5's relative-position bias tables")
    try:
        model, info = AutoModel.from_pretrained(name, local_files_only=local_files_only, output_loading_info=True)
    except OSError as error:
        raise WeightsNotAvailable(f"found the config of {name!r} but not its weights "
                                  f"({str(error).splitlines()[0]}).\n" + how_to_get_weights()) from error
    missing = {key for key in info.get("missing_keys", ()) if "relative_attention_bias" in key}
    if any(key.startswith("encoder.") for key in missing):
        raise ArgumentError(f"{name!r} holds no trained encoder bias table (missing: {sorted(missing)})")
    tables = tables_from_model(model, source=name)
    if any(key.startswith("decoder.") for key in missing):  # e.g. a saved T5EncoderModel: no decoder weights
        tables = BiasTables(tables.source, tables.model_type, tables.encoder, None)
    return tables
