"""The relative-position bias tables of a real, trained T5 checkpoint (lesson 4, "What a trained T5 learned").

    from t5lesson.lessons.pretrained import load_bias_tables, bias_curves_figure
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

`toy_tables()` wraps the hand-made heads of `t5lesson.lessons.toy_heads` in the same structure, so a
lesson can draw the same figure with or without real weights.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import ArgumentError, check_bool, check_int
from ..bias import relative_bias
from ..buckets import bucket_config, bucket_ranges
from .figures import SMALL, WIDTH, new_figure, styled

__all__ = ["SUPPORTED_MODEL_TYPES", "WeightsNotAvailable", "StackTables", "BiasTables", "load_bias_tables",
           "tables_from_model", "toy_tables", "bias_curves_figure", "how_to_get_weights"]

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
    num_buckets = int(model.config.relative_attention_num_buckets)
    max_distance = int(model.config.relative_attention_max_distance)
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


def toy_tables() -> BiasTables:
    """The four hand-made heads of `t5lesson.lessons.toy_heads` (32 buckets, max_distance 128), as BiasTables."""
    from .toy_heads import toy_bias_table

    stacks = [StackTables(stack, (toy_bias_table(bidirectional=bidirectional),), (0,), 32, 128, bidirectional)
              for stack, bidirectional in (("encoder", True), ("decoder", False))]
    return BiasTables("hand-made toy heads (lesson 4, section 2)", "toy", *stacks)


def _bucket_edges(stack: StackTables) -> tuple[list[float], int, int]:
    """(edges between log-region buckets as offsets j - i, halfway between two offsets; max_exact; last start)."""
    _, max_exact = bucket_config(stack.bidirectional, stack.num_buckets, stack.max_distance)
    ranges = bucket_ranges(stack.bidirectional, stack.num_buckets, stack.max_distance)
    edges = []
    for r in ranges.ranges:
        if r.lo is not None and r.lo >= max_exact:  # right side: the bucket starts at lo
            edges.append(r.lo - 0.5)
        elif r.hi is not None and r.hi <= -max_exact:  # left side: the end nearest the query is hi
            edges.append(r.hi + 0.5)
    return edges, max_exact, ranges.last_bucket_start


def _offset_ticks(max_offset: int, bidirectional: bool) -> list[int]:
    # No +-1, +-2: in the linear region around 0 they would crowd the 0 label.
    steps = (4, 16, 64, 256, 1024, 4096) if bidirectional else (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    left = [-d for d in steps if d <= max_offset]
    ticks = sorted(left) + [0]
    return ticks + [-t for t in reversed(left)] if bidirectional else ticks


@styled
def bias_curves_figure(tables: BiasTables, *, layer=0, max_offset=None, head_names=None):
    """One panel per stack: each head's bias against the offset j - i, with the bucket edges.

    The offset axis is symmetric-log (linear in the exact region, shaded green, where every
    offset has its own bucket; logarithmic beyond, like the buckets themselves); thin grey lines
    separate the logarithmic buckets, orange dashed lines mark where the last bucket starts.
    layer: which layer's table to draw when a stack has one per layer (UMT5).
    max_offset: how far to draw (default: twice max_distance).
    """
    if not isinstance(tables, BiasTables):
        raise ArgumentError(f"tables must be BiasTables (from load_bias_tables or toy_tables), "
                            f"got {type(tables).__name__}")
    layer = check_int("layer", layer, minimum=0)
    stacks = tables.stacks()
    heads = stacks[0].heads
    if head_names is None:
        head_names = [f"head {h}" for h in range(heads)]
    if len(head_names) != heads or any(s.heads != heads for s in stacks):
        raise ArgumentError(f"need one name per head ({heads}), got {len(head_names)}")
    if max_offset is None:
        max_offset = 2 * max(s.max_distance for s in stacks)
    max_offset = check_int("max_offset", max_offset, minimum=2)

    from matplotlib import colormaps

    fig = new_figure(min(WIDTH, 3.7 * len(stacks) + 1.8), 3.9)
    axes = fig.subplots(1, len(stacks), sharey=True, squeeze=False)[0]
    colours = colormaps["tab10" if heads <= 10 else "tab20"]
    for ax, stack in zip(axes, stacks, strict=True):
        bucket_config(stack.bidirectional, stack.num_buckets, stack.max_distance)
        table = stack.layer(layer)
        row = relative_bias(table, 1, 2 * max_offset + 1, bidirectional=stack.bidirectional,
                            max_distance=stack.max_distance, query_offset=max_offset)
        offsets = np.arange(-max_offset, max_offset + 1)
        values = np.asarray(row)[:, 0, :]
        if not stack.bidirectional:  # a causal stack never uses the bias of a future key
            keep = offsets <= 0
            offsets, values = offsets[keep], values[:, keep]
        edges, max_exact, last = _bucket_edges(stack)
        ax.axvspan(-max_exact + 0.5, (max_exact - 0.5) if stack.bidirectional else 0, color="tab:green",
                   alpha=0.08, lw=0, zorder=0)
        for edge in edges:
            if abs(edge) <= max_offset:
                ax.axvline(edge, color="0.8", lw=0.6, zorder=0)
        for edge in ([-last + 0.5, last - 0.5] if stack.bidirectional else [-last + 0.5]):
            ax.axvline(edge, color="tab:orange", lw=1.2, ls="--", zorder=1)
        for h in range(heads):
            ax.plot(offsets, values[h], drawstyle="steps-mid", lw=1.3, color=colours(h % colours.N),
                    label=head_names[h])
        ax.axhline(0, color="0.6", lw=0.6)
        ax.set_xscale("symlog", linthresh=max_exact, linscale=1.0)
        ax.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.5)
        ticks = _offset_ticks(max_offset, stack.bidirectional)
        ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=SMALL)
        ax.minorticks_off()
        which = f", layer {layer}" if stack.per_layer else ""
        side = "bidirectional" if stack.bidirectional else "causal: keys on the left only"
        ax.set_title(f"{stack.stack}{which} ({side})\nlast bucket from |j − i| = {last} (orange)", fontsize=SMALL + 1)
        ax.set_xlabel("offset j − i (symmetric log scale)")
    axes[0].set_ylabel("bias (logit units)")
    axes[-1].legend(fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 if heads <= 12 else 2)
    fig.suptitle(f"relative-position bias per head: {tables.source}", fontsize=SMALL + 2)
    return fig
