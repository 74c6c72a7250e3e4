"""Lesson 4's view of a trained T5's bias tables: each head's bias against the offset.

`t5lesson.lessons.pretrained` reads the tables of a real checkpoint; this module draws them, and wraps
the hand-made heads of `toy_heads` in the same structure, so the lesson shows those when no
weights are at hand.
"""
from __future__ import annotations

import numpy as np

from .._validate import ArgumentError, check_int
from ..bias import relative_bias
from ..buckets import bucket_config, bucket_ranges
from ..common.figures import COLORS, SMALL, WIDTH, describe, new_figure, series_style, styled
from .pretrained import BiasTables, StackTables
from .toy_heads import toy_bias_table

__all__ = ["toy_tables", "bias_curves_figure", "mark_buckets"]


def toy_tables() -> BiasTables:
    """The four hand-made heads of `t5lesson.lessons.toy_heads` (32 buckets, max_distance 128), as BiasTables."""
    stacks = [StackTables(stack, (toy_bias_table(bidirectional=bidirectional),), (0,), 32, 128, bidirectional)
              for stack, bidirectional in (("encoder", True), ("decoder", False))]
    return BiasTables("hand-made toy heads (lesson 4, section 2)", "toy", *stacks)


def mark_buckets(ax, stack: StackTables, max_offset: int) -> tuple[int, int]:
    """Draw a stack's buckets behind its curves; return (max_exact, where the last bucket starts).

    The exact region is shaded green, thin grey lines separate the logarithmic buckets, black dotted
    lines mark where the last bucket starts. The curves are drawn `steps-mid`, so offset n fills
    n - 0.5 .. n + 0.5 and every edge lies halfway between two offsets: a causal stack's exact band
    ends at 0.5, the right end of offset 0, the last offset it buckets.
    """
    _, max_exact = bucket_config(stack.bidirectional, stack.num_buckets, stack.max_distance)
    ranges = bucket_ranges(stack.bidirectional, stack.num_buckets, stack.max_distance)
    ax.axvspan(-max_exact + 0.5, (max_exact - 0.5) if stack.bidirectional else 0.5, color=COLORS["green"],
               alpha=0.08, lw=0, zorder=0)
    for edge in _log_edges(ranges, max_exact):
        if abs(edge) <= max_offset:
            ax.axvline(edge, color="0.8", lw=0.6, zorder=0)
    last = ranges.last_bucket_start
    for edge in ([-last + 0.5, last - 0.5] if stack.bidirectional else [-last + 0.5]):
        ax.axvline(edge, color=COLORS["black"], lw=1.0, ls=(0, (1, 1.5)), zorder=1)
    return max_exact, last


def _log_edges(ranges, max_exact: int) -> list[float]:
    """The edges between logarithmic buckets, as offsets j - i halfway between two offsets."""
    edges = []
    for r in ranges.ranges:
        if r.lo is not None and r.lo >= max_exact:  # right side: the bucket starts at lo
            edges.append(r.lo - 0.5)
        elif r.hi is not None and r.hi <= -max_exact:  # left side: the end nearest the query is hi
            edges.append(r.hi + 0.5)
    return edges


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
    stacks, head_names, layer, max_offset = _curves_arguments(tables, layer, max_offset, head_names)
    fig = new_figure(min(WIDTH, 3.7 * len(stacks) + 1.8), 3.9)
    axes = fig.subplots(1, len(stacks), sharey=True, squeeze=False)[0]
    for ax, stack in zip(axes, stacks, strict=True):
        bucket_config(stack.bidirectional, stack.num_buckets, stack.max_distance)
        offsets, values = _bias_row(stack.layer(layer), stack, max_offset)
        max_exact, last = mark_buckets(ax, stack, max_offset)
        for h, name in enumerate(head_names):
            ax.plot(offsets, values[h], drawstyle="steps-mid", lw=1.3, label=name,
                    **{**series_style(h), "marker": None})
        _symlog_offset_axis(ax, offsets, max_exact, max_offset, stack.bidirectional)
        which = f", layer {layer}" if stack.per_layer else ""
        side = "bidirectional" if stack.bidirectional else "causal: keys on the left only"
        ax.set_title(f"{stack.stack}{which} ({side})\nlast bucket from |j − i| = {last} (black dots)",
                     fontsize=SMALL + 1)
    heads = len(head_names)
    axes[0].set_ylabel("bias (logit units)")
    axes[-1].legend(fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 if heads <= 12 else 2)
    fig.suptitle(f"relative-position bias per head: {tables.source}", fontsize=SMALL + 2)
    names = " and ".join(f"{s.stack} ({'bidirectional' if s.bidirectional else 'causal'})" for s in stacks)
    return describe(fig, f"The relative-position bias of each of {heads} heads against the offset j − i, one "
                    f"panel for each of {names}, from {tables.source}. Notice the exact region near 0 where every "
                    "offset has its own value, and that past the black dotted line where the last bucket starts every "
                    "curve is flat.")


def _curves_arguments(tables, layer, max_offset, head_names):
    """bias_curves_figure's arguments, checked: (stacks, one name per head, layer, max_offset)."""
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
    return stacks, head_names, layer, check_int("max_offset", max_offset, minimum=2)


def _bias_row(table, stack: StackTables, max_offset: int):
    """(offsets, [heads, offsets] bias) from -max_offset to max_offset; a causal stack stops at 0, as it
    never uses the bias of a future key."""
    row = relative_bias(table, 1, 2 * max_offset + 1, bidirectional=stack.bidirectional,
                        max_distance=stack.max_distance, query_offset=max_offset)
    offsets = np.arange(-max_offset, max_offset + 1)
    values = np.asarray(row)[:, 0, :]
    if not stack.bidirectional:
        keep = offsets <= 0
        offsets, values = offsets[keep], values[:, keep]
    return offsets, values


def _symlog_offset_axis(ax, offsets, max_exact: int, max_offset: int, bidirectional: bool):
    """The offset axis: linear in the exact region, logarithmic beyond it, like the buckets."""
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set_xscale("symlog", linthresh=max_exact, linscale=1.0)
    ax.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.5)
    ticks = _offset_ticks(max_offset, bidirectional)
    ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=SMALL)
    ax.minorticks_off()
    ax.set_xlabel("offset j − i (symmetric log scale)")
