"""Static figures of lessons 3 and 4 (relative positions, buckets, pair counts, bias tables).

Each function returns a matplotlib `Figure` built without pyplot (no global state, nothing shown
by accident); `common.figures.as_image` turns it into a PNG the notebook displays. All numbers drawn come
from the package: `relative_position_bucket`, `relative_bias`, `t5lesson.lessons.pair_counts`.

Sign convention: offset = key - query (j - i); negative = the key is to the left.
"""
from __future__ import annotations

import numpy as np

from .._validate import ArgumentError, check_bool, check_int
from ..bias import relative_bias
from ..buckets import bucket_config, bucket_ids, bucket_ranges
from ..common.figures import (
    COLORS,
    DIVERGING,
    NORMAL,
    SEQUENTIAL,
    SMALL,
    WIDTH,
    describe,
    new_figure,
    series_style,
    styled,
)
from .pair_counts import bucket_pair_counts, offset_pair_counts

__all__ = ["offset_matrix_figure", "pair_count_figure", "bias_table_figure", "bias_by_offset"]

def _annotated_matrix(ax, values, cmap, title, vmin, vmax, masked=None):
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    colours = colormaps[cmap].with_extremes(bad="0.85")
    shown = values.astype(float) if masked is None else np.where(masked, np.nan, values.astype(float))
    ax.imshow(shown, cmap=colours, vmin=vmin, vmax=vmax)
    norm = Normalize(vmin, vmax)
    for (i, j), v in np.ndenumerate(values):
        if masked is not None and masked[i, j]:
            colour = "0.45"
        else:  # white on dark cells, black on light ones
            r, g, b, _ = colours(norm(v))
            colour = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
        ax.text(j, i, str(v), ha="center", va="center", fontsize=SMALL, color=colour)
    n = values.shape[0]
    ax.set(xticks=range(n), yticks=range(n), xlabel="key position j", ylabel="query position i", title=title)
    ax.title.set_fontsize(NORMAL)


@styled
def offset_matrix_figure(seq_len=8, num_buckets=32, max_distance=128):
    """Three annotated matrices for a short sequence: j - i, its encoder bucket, its decoder bucket.

    In the decoder panel the pairs the causal mask removes are greyed out.
    """
    seq_len = check_int("seq_len", seq_len, minimum=2, maximum=16)
    bucket_config(True, num_buckets, max_distance)
    bucket_config(False, num_buckets, max_distance)
    positions = np.arange(seq_len)
    offsets = positions[None, :] - positions[:, None]  # [i, j] -> j - i
    fig = new_figure(WIDTH, 3.4)
    axes = fig.subplots(1, 3)
    limit = seq_len - 1
    _annotated_matrix(axes[0], offsets, DIVERGING, "offset j − i", -limit, limit)
    encoder = bucket_ids(offsets, True, num_buckets, max_distance)
    decoder = bucket_ids(offsets, False, num_buckets, max_distance)
    _annotated_matrix(axes[1], encoder, SEQUENTIAL, "encoder bucket(j − i)", 0, num_buckets - 1)
    _annotated_matrix(axes[2], decoder, SEQUENTIAL, "decoder bucket(j − i), mask in grey", 0, num_buckets - 1,
                      masked=offsets > 0)
    return describe(fig, f"Three {seq_len} by {seq_len} grids of numbers for query i (rows) and key j (columns): the "
                    "offset j − i, its encoder bucket and its decoder bucket, with future keys greyed out. Notice that "
                    "every diagonal holds one offset, so one bucket, and that the decoder gives all keys on the right "
                    "nothing.")


@styled
def pair_count_figure(seq_len=512, compare_len=64, bidirectional=True, num_buckets=32, max_distance=128):
    """Left: pairs per offset (L - |d|) with bucket boundaries. Right: pairs per bucket, two lengths.

    On the log axis a bucket with no pair has no bar; it gets a cross at the bottom instead (in
    its length's colour), and a bucket no offset ever reaches says "never used".
    """
    seq_len = check_int("seq_len", seq_len, minimum=2, maximum=100_000)
    compare_len = check_int("compare_len", compare_len, minimum=2, maximum=100_000)
    bidirectional = check_bool("bidirectional", bidirectional)
    bucket_config(bidirectional, num_buckets, max_distance)
    fig = new_figure(WIDTH, 3.6)
    left, right = fig.subplots(1, 2, width_ratios=(1.1, 1.0))

    offsets, counts = offset_pair_counts(seq_len, causal=not bidirectional)
    table = bucket_ranges(bidirectional, num_buckets, max_distance)
    left.plot(offsets, counts, color=COLORS["blue"], lw=1.5)
    start = table.last_bucket_start
    left.axvspan(-seq_len, -start + 0.5, color=COLORS["orange"], alpha=0.2, lw=0,
                 label=f"last bucket: offsets <= {-start}" + (f" or >= {start}" if bidirectional else ""))
    if bidirectional:
        left.axvspan(start - 0.5, seq_len, color=COLORS["orange"], alpha=0.2, lw=0)
    left.set(xlabel="offset j − i", ylabel="(query, key) pairs per sequence", xlim=(offsets[0], offsets[-1]),
             title=f"pairs per offset: L − |j − i|, for L = {seq_len}")
    left.title.set_fontsize(NORMAL)
    left.legend(loc="upper left")

    width = 0.4
    index = np.arange(num_buckets)
    for shift, length, colour in ((-width / 2, compare_len, COLORS["orange"]), (width / 2, seq_len, COLORS["blue"])):
        pairs = bucket_pair_counts(length, bidirectional, num_buckets, max_distance)
        right.bar(index + shift, np.where(pairs > 0, pairs, np.nan), width, color=colour, label=f"L = {length}")
        empty = [b for b in index if pairs[b] == 0 and b not in table.unused]
        if empty:
            right.plot(np.array(empty) + shift, np.full(len(empty), 1.0), "x", color=colour, ms=7, mew=2,
                       label=f"no pair at L = {length}")
    for b in table.unused:
        right.text(b, 1.3, "never used", rotation=90, ha="center", va="bottom", fontsize=SMALL,
                   color=COLORS["vermillion"])
    right.set(yscale="log", xlabel="bucket", ylabel="pairs per sequence (log scale)", ylim=(0.7, None),
              title="pairs per bucket")
    right.title.set_fontsize(NORMAL)
    right.set_xticks(range(0, num_buckets, 4))
    right.legend(loc="upper left")
    kind = "encoder" if bidirectional else "decoder"
    return describe(fig, f"Left: (query, key) pairs per offset in one sequence of {seq_len} tokens, a tent that is "
                    f"highest at offset 0, with the last bucket's offsets shaded. Right: pairs per {kind} bucket, bars "
                    f"on a log scale for lengths {compare_len} and {seq_len}; notice that the last bucket collects "
                    f"most pairs of a long sequence and that some buckets get no pair at length {compare_len}.")


def bias_by_offset(table, max_offset, *, bidirectional=True, max_distance=128):
    """(offsets, bias [heads, offsets]): the bias a table gives every offset -max_offset..max_offset.

    Read off `relative_bias` for one query sitting at position max_offset among 2*max_offset + 1 keys.
    """
    max_offset = check_int("max_offset", max_offset, minimum=1)
    row = relative_bias(table, 1, 2 * max_offset + 1, bidirectional=bidirectional, max_distance=max_distance,
                        query_offset=max_offset)
    return np.arange(-max_offset, max_offset + 1), np.asarray(row)[:, 0, :]


@styled
def bias_table_figure(table, head_names, *, bidirectional=True, max_distance=128, max_offset=40, title=""):
    """Left: the table [num_buckets, heads] as a heatmap. Right: each head's bias over the offsets."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or len(head_names) != table.shape[1]:
        raise ArgumentError(f"need a table [num_buckets, heads] and one name per head, got shape {table.shape} "
                            f"and {len(head_names)} names")
    bucket_config(bidirectional, table.shape[0], max_distance)
    fig = new_figure(WIDTH, 3.6)
    left, right = fig.subplots(1, 2, width_ratios=(0.8, 1.2))
    limit = float(np.abs(table).max()) or 1.0
    image = left.imshow(table, cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    left.set(xticks=range(table.shape[1]), xlabel="head (names in the legend)", ylabel="bucket",
             title="bias table u[bucket, head], in logits")
    left.title.set_fontsize(NORMAL)
    fig.colorbar(image, ax=left)

    offsets, bias = bias_by_offset(table, max_offset, bidirectional=bidirectional, max_distance=max_distance)
    if not bidirectional:
        keep = offsets <= 0  # the decoder never uses the bias of a future key: the mask removes it
        offsets, bias = offsets[keep], bias[:, keep]
    for h, (values, name) in enumerate(zip(bias, head_names, strict=True)):
        right.plot(offsets, values, drawstyle="steps-mid", lw=1.6, label=f"{h}: {name}",
                   **{**series_style(h), "marker": None})
    right.axhline(0, color="0.6", lw=0.6)
    right.set(xlabel="offset j − i", ylabel="bias (logit units)",
              title=title or ("bias per offset (encoder)" if bidirectional else "bias per offset (decoder)"))
    right.title.set_fontsize(NORMAL)
    right.grid(alpha=0.3)
    right.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: it never hides a line
    kind = "encoder" if bidirectional else "decoder"
    return describe(fig, f"Left: the {kind} bias table of {table.shape[1]} heads over {table.shape[0]} buckets as a "
                    "red-blue heatmap (red positive, blue negative). Right: each head's bias against the offset j − i "
                    f"from −{max_offset} to {max_offset if bidirectional else 0}, a staircase that is flat within a "
                    "bucket; notice how each head favours near or far keys, or one side.")
