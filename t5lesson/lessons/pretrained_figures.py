"""Lesson 4's view of a trained T5's bias tables: each head's bias against the offset.

`t5lesson.pretrained` reads the tables of a real checkpoint; this module draws them, and wraps
the hand-made heads of `toy_heads` in the same structure, so the lesson shows those when no
weights are at hand.
"""
from __future__ import annotations

import numpy as np

from .._validate import ArgumentError, check_int
from ..bias import relative_bias
from ..buckets import bucket_config, bucket_ranges
from ..pretrained import BiasTables, StackTables
from .figures import COLORS, SMALL, WIDTH, describe, new_figure, series_style, styled
from .toy_heads import toy_bias_table

__all__ = ["toy_tables", "bias_curves_figure"]


def toy_tables() -> BiasTables:
    """The four hand-made heads of `t5lesson.lessons.toy_heads` (32 buckets, max_distance 128), as BiasTables."""
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
    separate the logarithmic buckets, black dotted lines mark where the last bucket starts.
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

    fig = new_figure(min(WIDTH, 3.7 * len(stacks) + 1.8), 3.9)
    axes = fig.subplots(1, len(stacks), sharey=True, squeeze=False)[0]
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
        ax.axvspan(-max_exact + 0.5, (max_exact - 0.5) if stack.bidirectional else 0, color=COLORS["green"],
                   alpha=0.08, lw=0, zorder=0)
        for edge in edges:
            if abs(edge) <= max_offset:
                ax.axvline(edge, color="0.8", lw=0.6, zorder=0)
        for edge in ([-last + 0.5, last - 0.5] if stack.bidirectional else [-last + 0.5]):
            ax.axvline(edge, color=COLORS["black"], lw=1.0, ls=(0, (1, 1.5)), zorder=1)
        for h in range(heads):
            ax.plot(offsets, values[h], drawstyle="steps-mid", lw=1.3, label=head_names[h],
                    **{**series_style(h), "marker": None})
        ax.axhline(0, color="0.6", lw=0.6)
        ax.set_xscale("symlog", linthresh=max_exact, linscale=1.0)
        ax.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.5)
        ticks = _offset_ticks(max_offset, stack.bidirectional)
        ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=SMALL)
        ax.minorticks_off()
        which = f", layer {layer}" if stack.per_layer else ""
        side = "bidirectional" if stack.bidirectional else "causal: keys on the left only"
        ax.set_title(f"{stack.stack}{which} ({side})\nlast bucket from |j − i| = {last} (black dots)",
                     fontsize=SMALL + 1)
        ax.set_xlabel("offset j − i (symmetric log scale)")
    axes[0].set_ylabel("bias (logit units)")
    axes[-1].legend(fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 if heads <= 12 else 2)
    fig.suptitle(f"relative-position bias per head: {tables.source}", fontsize=SMALL + 2)
    names = " and ".join(f"{s.stack} ({'bidirectional' if s.bidirectional else 'causal'})" for s in stacks)
    return describe(fig, f"The relative-position bias of each of {heads} heads against the offset j − i, one "
                    f"panel for each of {names}, from {tables.source}. Notice the exact region near 0 where every "
                    "offset has its own value, and that past the black dotted line where the last bucket starts every "
                    "curve is flat.")
