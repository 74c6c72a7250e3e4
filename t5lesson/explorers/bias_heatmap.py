"""Lesson 4: the bias heatmap explorer.

Three panels for one head of a bias table [num_buckets, heads]:
1. the bias alone, bias[i, j] = u[bucket(j - i), head] (`relative_bias`): constant along diagonals;
2. bias plus mask: in the decoder the causal mask removes future keys (grey);
3. the attention weights softmax_j(q_i . k_j + bias + mask) for fixed random q, k whose dot
   products have standard deviation `content` (0: position alone decides).

Queries sit at positions query_offset .. seq_len - 1: decoding with a cache of query_offset
tokens computes only those last rows of the full bias, and attends to all seq_len keys.

The default tables are the hand-made heads of `t5lesson.lessons.toy_heads`; pass `tables=` to show
others (a learned table, say).
"""
from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from .._validate import ArgumentError
from ..bias import relative_bias
from ..buckets import bucket_config
from ..common.figures import SMALL, WIDTH
from ..lessons.toy_heads import HEAD_NAMES, toy_bias_table
from ..scores import attention_scores, causal_mask, softmax
from .base import Param, register
from .raster import AxisTicks, Heatmap, TextBlock, freeze
from .render import BlitRender

MAX_LEN = 64
D_HEAD = 16  # size of the random q and k vectors
MODES = ("encoder", "decoder")


def _random_qk(seed=0):
    """Fixed q, k [MAX_LEN, D_HEAD] with unit-variance entries, so q.k has variance D_HEAD."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((MAX_LEN, D_HEAD)), rng.standard_normal((MAX_LEN, D_HEAD))


def _check_tables(tables, head_names, max_distance):
    if not isinstance(tables, dict) or not tables or set(tables) - set(MODES):
        raise ArgumentError(f"tables must be a dict with keys among {list(MODES)}, got {tables!r:.80}")
    heads = 0
    for index, (mode, table) in enumerate(tables.items()):
        if not isinstance(table, np.ndarray) or table.ndim != 2 or not np.issubdtype(table.dtype, np.floating):
            raise ArgumentError(f"tables[{mode!r}] must be a float NumPy array [num_buckets, heads]")
        bucket_config(mode == "encoder", table.shape[0], max_distance)
        if index and table.shape[1] != heads:
            raise ArgumentError(f"all tables must have the same number of heads, got {heads} and {table.shape[1]}")
        heads = table.shape[1]
    head_names = tuple(head_names) if head_names is not None else tuple(f"head {h}" for h in range(heads))
    if len(head_names) != heads or not all(isinstance(n, str) for n in head_names):
        raise ArgumentError(f"head_names must be {heads} strings, one per head, got {head_names!r}")
    return head_names


@register
class BiasHeatmapExplorer(BlitRender):
    """One head's bias, bias plus mask, and attention weights, for a table [num_buckets, heads]."""

    params = (
        Param("head", 1, 0, len(HEAD_NAMES) - 1, 1, label="head"),
        Param("seq_len", 16, 2, MAX_LEN, 1, label="sequence length"),
        Param("query_offset", 0, 0, MAX_LEN - 1, 1, label="tokens in cache"),
        Param("attention", "decoder", options=MODES, label="attention"),
        Param("content", 1.0, 0.0, 4.0, 0.25, label="std of q·k"),
    )
    figsize = (WIDTH, 3.7)
    description = ("Three heatmaps over query i (rows) and key j (columns) for one head: its bias, the bias with"
                   " the mask (masked pairs grey), and the attention weights after adding random q·k of the "
                   "chosen spread. Notice that the bias depends only on j − i, so it is constant along each "
                   "diagonal, and that a larger q·k spread drowns it out.")

    def __init__(self, tables=None, head_names=None, max_distance=128, **params):
        if tables is None:
            tables = {"encoder": toy_bias_table(True, 32, max_distance),
                      "decoder": toy_bias_table(False, 32, max_distance)}
            head_names = HEAD_NAMES if head_names is None else head_names
        self.head_names = _check_tables(tables, head_names, max_distance)
        self.tables, self.max_distance = dict(tables), int(max_distance)
        heads, modes = len(self.head_names), tuple(m for m in MODES if m in tables)
        # This instance's controls: as many heads as the table has, only the modes it has tables for.
        self.params = (
            Param("head", min(1, heads - 1), 0, heads - 1, 1, label="head"),
            *type(self).params[1:3],
            Param("attention", "decoder" if "decoder" in modes else modes[0], options=modes, label="attention"),
            type(self).params[4],
        )
        self.q, self.k = _random_qk()
        super().__init__(**params)

    def build(self, fig):
        # Fixed positions: constrained layout would cost more than drawing the figure.
        fig.set_layout_engine("none")
        limit = max(float(np.abs(t).max()) for t in self.tables.values()) or 1.0
        self.axes = [fig.add_axes((x, 0.15, 0.235, 0.74)) for x in (0.07, 0.325, 0.675)]
        # Heatmaps drawn as prepared pixels (see raster.py): an imshow would resample on every move.
        bias_cmap = _grey_bad("RdBu_r")
        self.images = [Heatmap(self.axes[0], bias_cmap, -limit, limit), Heatmap(self.axes[1], bias_cmap, -limit, limit),
                       Heatmap(self.axes[2], "viridis", 0, 1)]
        for ax in self.axes:
            ax.set_xlabel("key position j")
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(5, integer=True))
            # Fixed label and title places: placing them automatically measures every tick label.
            ax.xaxis.set_label_coords(0.5, -0.12)
            for spine in ax.spines.values():  # frame over the tick marks, as when blitted (moving_artists)
                spine.set_zorder(2.6)
        self.axes[0].set_ylabel("query position i")
        self.axes[0].yaxis.set_label_coords(-0.17, 0.5)
        # Ticks that follow the sequence length, drawn with every move from cached label pixels
        # (raster.py), so the background never changes with the limits.
        self.ticks = [AxisTicks(ax, "x") for ax in self.axes] + [
            AxisTicks(ax, "y", labels=ax is not self.axes[1]) for ax in self.axes]
        # Titles as cached pixels (raster.py): they change with the head, the mode, the content.
        self.titles = [TextBlock(fig, ax.get_position().x0 + ax.get_position().width / 2,
                                 ax.get_position().y1 + 0.02, SMALL + 1) for ax in self.axes]
        bias_bar = fig.colorbar(_mappable(self.images[1]), cax=fig.add_axes((0.57, 0.15, 0.012, 0.74)))
        bias_bar.set_label("bias (logit units)", labelpad=2)
        weight_bar = fig.colorbar(_mappable(self.images[2]), cax=fig.add_axes((0.92, 0.15, 0.012, 0.74)))
        weight_bar.set_label("attention weight", labelpad=2)
        freeze(fig, [bias_bar.ax, weight_bar.ax])  # fixed limits: draw them once (see raster.py)

    def draw(self, head, seq_len, query_offset, attention, content):
        self.clamped = query_offset > seq_len - 1
        query_offset = min(query_offset, seq_len - 1)
        bidirectional = attention == "encoder"
        q_len, k_len = seq_len - query_offset, seq_len
        bias = relative_bias(self.tables[attention], q_len, k_len, bidirectional=bidirectional,
                             max_distance=self.max_distance, query_offset=query_offset)[head]
        allowed = None if bidirectional else causal_mask(q_len, k_len, query_offset)
        # T5's unscaled score; q is shrunk so that q.k has standard deviation `content`.
        q = self.q[query_offset:seq_len] * (content / np.sqrt(D_HEAD))
        weights = softmax(attention_scores(q, self.k[:seq_len], bias=bias, mask=allowed))
        shown = [bias, bias if allowed is None else np.where(allowed, bias, np.nan), weights]

        extent = (-0.5, k_len - 0.5, seq_len - 0.5, query_offset - 0.5)  # rows are absolute positions
        for image, data in zip(self.images, shown, strict=True):
            image.set_data(data)
            image.set_extent(extent)
        self.bias, self.weights, self.allowed = bias, weights, allowed
        name = self.head_names[head]
        self.titles[0].set_text(f"head {head}: bias" if name == f"head {head}" else f"head {head} ({name}): bias")
        self.titles[1].set_text("bias + mask" if allowed is None else "bias + causal mask (grey)")
        self.titles[2].set_text(f"weights, q·k std {content:g}")

    def moving_artists(self):
        # Spines last: the images fill the axes and would cover half of each frame line.
        return [*self.images, *self.titles, *(spine for ax in self.axes for spine in ax.spines.values()),
                *self.ticks]

    def _background_key(self):
        return ()  # nothing in the background depends on the limits: the ticks are drawn with each move

    def readout(self):
        v = self.values
        seq_len, attention = v["seq_len"], v["attention"]
        offset = min(v["query_offset"], seq_len - 1)
        q_len = seq_len - offset
        rows = ""
        if offset:
            why = "the encoder has no cache, this only shows them" if attention == "encoder" else \
                f"{offset} tokens already cached"
            rows = f"only query rows {offset}..{seq_len - 1} ({why}); "
        if self.clamped:
            rows = f"tokens in cache clamped to {seq_len - 1} (at least one query); " + rows
        return (f"{attention}, {rows}bias [{q_len}, {seq_len}] from {q_len + seq_len - 1} distinct offsets j − i "
                "(each diagonal is constant); every row of the weights sums to 1")


def _mappable(heatmap):
    from matplotlib.cm import ScalarMappable

    return ScalarMappable(heatmap.norm, heatmap.cmap)


def _grey_bad(name):
    """A copy of a colormap that paints NaN (a masked pair) light grey."""
    from matplotlib import colormaps

    return colormaps[name].with_extremes(bad="0.8")
