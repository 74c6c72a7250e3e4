"""Lesson 3: the bucket-boundary explorer.

Left: the bucket of every offset (key - query, j - i) in a chosen range, as a step plot on a
symmetric-log axis (so the exact region near 0 and the offsets in the thousands both show),
with max_exact, max_distance and the start of the last bucket marked, and buckets no offset
ever reaches drawn as red lines. Right: the boundary table of `bucket_ranges` (unused rows in
red) and the legend.

A degenerate setting (max_distance <= max_exact) is not a bad slider value but a lesson: the
figure then shows the package's error message instead of a plot.
"""
from __future__ import annotations

import functools
import math
import textwrap

import numpy as np
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import blended_transform_factory

from .._validate import ArgumentError
from ..buckets import BucketTable, bucket_ranges, relative_position_bucket
from ..common.figures import COLORS, DPI, SMALL, WIDTH
from .base import Param, register
from .raster import AxisTicks, GlyphAtlas, PixelBlock, freeze
from .render import BlitRender

ROWS_PER_COLUMN = 16
UNUSED_COLOR = COLORS["vermillion"]
CHAR_PX = 15  # table characters are 7.5 CSS px wide: a 9 pt monospace font, the course's smallest size
_ATLAS = {}
# Slider stops: every value near max_exact (where settings break), then about 1.25x apart.
MAX_DISTANCES = (*range(8, 21), 24, 28, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024)
OFFSET_RANGES = tuple(2 ** k for k in range(4, 13))  # 16 .. 4096


def table_columns(table, rows_per_column=ROWS_PER_COLUMN):
    """The boundary table as columns of (text, never used?) rows, `rows_per_column` rows each."""
    rows = table.rows()
    width = max(len(text) for _, text in rows)
    return [[(f"{b:>2}  {text:<{width}}", text == "never used") for b, text in rows[start:start + rows_per_column]]
            for start in range(0, len(rows), rows_per_column)]


def _atlas(dpi) -> GlyphAtlas:
    if dpi not in _ATLAS:  # built once per process: rendering every character takes a while
        _ATLAS[dpi] = GlyphAtlas(cell_width_px=CHAR_PX, dpi=dpi)
    return _ATLAS[dpi]


_ROWS: dict = {}  # (dpi, text, colour) -> uint8 RGBA pixels of one table line: lines recur across settings


def _row_pixels(atlas, dpi, text, colour) -> np.ndarray:
    key = (dpi, text, colour)
    if key not in _ROWS:
        if len(_ROWS) > 4096:
            _ROWS.clear()
        _ROWS[key] = atlas.line_bytes(text, colour, alpha=True)
    return _ROWS[key]


def _column_rows(table, dpi) -> list:
    """Per column of the table: the cached pixels of its lines (the heading first)."""
    atlas = _atlas(dpi)
    return [[_row_pixels(atlas, dpi, text, colour) for text, colour in
             [("bkt offsets j-i", "0.35")] + [(text, UNUSED_COLOR if unused else "black") for text, unused in column]]
            for column in table_columns(table)]


def _paste_table(out, columns, top, gap) -> None:
    """Copy the table's lines into `out` (white), columns side by side `gap` pixels apart, from row `top`."""
    left = 0
    for rows in columns:
        y = top
        for r in rows:
            out[y:y + r.shape[0], left:left + r.shape[1]] = r
            y += r.shape[0]
        left += max(r.shape[1] for r in rows) + gap


def _table_size(columns, gap) -> tuple:
    height = max(sum(r.shape[0] for r in rows) for rows in columns)
    width = sum(max(r.shape[1] for r in rows) for rows in columns) + gap * (len(columns) - 1)
    return height, width


def table_pixels(table, dpi) -> np.ndarray:
    """uint8 RGB image of the boundary table, columns side by side, unused buckets in red.

    Built from cached pixels of each line (the same as rendering the column at once: a line
    shorter than its column is padded with white, as the atlas pads it with spaces).
    """
    columns, gap = _column_rows(table, dpi), 3 * _atlas(dpi).cell[1]
    out = np.full((*_table_size(columns, gap), 4), 255, dtype=np.uint8)
    _paste_table(out, columns, 0, gap)
    return out[..., :3]


def titled_block(title, table, dpi) -> np.ndarray:
    """RGBA uint8 pixels: the title line, a blank line, then the table (if any).

    Written straight into one white array, copying each cached line once (joining padded
    pieces copies every pixel several times), since the block changes with most moves.
    """
    atlas = _atlas(dpi)
    head = np.concatenate([atlas.line_bytes(title, alpha=True), atlas.line_bytes(" " * len(title), alpha=True)])
    columns, gap = (_column_rows(table, dpi), 3 * _atlas(dpi).cell[1]) if table is not None else ([], 0)
    height, width = _table_size(columns, gap) if columns else (0, 0)
    out = np.full((head.shape[0] + height, max(head.shape[1], width), 4), 255, dtype=np.uint8)
    out[:head.shape[0], :head.shape[1]] = head
    if columns:
        _paste_table(out, columns, head.shape[0], gap)
    return out


@functools.lru_cache(maxsize=512)
def _table(bidirectional, num_buckets, max_distance) -> BucketTable | str:
    """`bucket_ranges`, or its error message for a degenerate setting; kept, since sliders go back
    and forth."""
    try:
        return bucket_ranges(bidirectional, num_buckets, max_distance)
    except ArgumentError as error:
        return str(error)


@functools.lru_cache(maxsize=512)
def _steps(bidirectional, num_buckets, max_distance, offset_range):
    """(offsets, buckets) of the step line: only the first and last offset of each run of equal
    buckets (the same steps-mid line, with a few points per bucket instead of one per offset)."""
    offsets = np.arange(-offset_range, offset_range + 1)
    buckets = np.asarray(relative_position_bucket(offsets, bidirectional, num_buckets, max_distance))
    change = np.diff(buckets) != 0
    keep = np.concatenate([[True], change]) | np.concatenate([change, [True]])
    offsets, buckets = offsets[keep], buckets[keep]
    offsets.flags.writeable = buckets.flags.writeable = False  # shared between calls: read only
    return offsets, buckets


@register
class BucketBoundaryExplorer(BlitRender):
    """Bucket against offset, with the boundary table, for any bucketing configuration."""

    params = (
        Param("num_buckets", 32, 4, 48, 1, label="num_buckets"),
        Param("max_distance", 128, 8, 1024, 1, label="max_distance", stops=MAX_DISTANCES),
        Param("attention", "encoder", options=("encoder", "decoder"), label="attention"),
        Param("offset_range", 256, 16, 4096, 16, label="show offsets up to ±", stops=OFFSET_RANGES),
    )
    figsize = (WIDTH, 3.9)
    description = ("The bucket of each offset j − i as a staircase, one step per offset near 0 (the exact "
                   "region, green) and ever wider steps further out, up to the last bucket past max_distance; "
                   "beside it, the table of bucket boundaries. Notice settings that leave buckets never used, "
                   "listed in the table and marked with dashed lines.")

    def build(self, fig):
        # Fixed axes positions, wide enough for the longest tick labels: constrained layout
        # would cost about as much as drawing everything else.
        fig.set_layout_engine("none")
        ax = self.ax = fig.add_axes((0.065, 0.14, 0.47, 0.83))

        ax.set_xscale("symlog", linthresh=1, linscale=0.4)
        ax.set_xlabel("offset j − i  (key − query; negative = key to the left)")
        ax.set_ylabel("bucket")
        # Fixed label places: placing them automatically measures every tick label on each draw.
        ax.xaxis.set_label_coords(0.5, -0.105)
        ax.yaxis.set_label_coords(-0.085, 0.5)
        for spine in ax.spines.values():  # frame over the tick marks, as when blitted (moving_artists)
            spine.set_zorder(2.6)
        band = blended_transform_factory(ax.transData, ax.transAxes)  # x in offsets, y in axes
        self.exact_band = ax.add_patch(Rectangle((0, 0), 0, 1, transform=band, color=COLORS["green"], alpha=0.12,
                                                 label="exact (n < max_exact)", lw=0))
        self.masked_band = ax.add_patch(Rectangle((0, 0), 0, 1, transform=band, color="0.5", alpha=0.25,
                                                  hatch="//", label="masked (decoder)", lw=0))
        (self.steps,) = ax.plot([], [], drawstyle="steps-mid", color=COLORS["blue"], lw=1.4, label="bucket(offset)")
        (self.unused_lines,) = ax.plot([], [], color=COLORS["vermillion"], ls="--", lw=1.2, label="bucket never used")
        (self.max_distance_lines,) = ax.plot([], [], color="0.3", ls=":", lw=1.2, label="± max_distance")
        (self.last_start_marks,) = ax.plot([], [], "o", color=COLORS["orange"], ms=6, label="last bucket starts")
        self.error_text = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                                  fontsize=SMALL, color=COLORS["vermillion"])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        # Ticks and grid follow num_buckets and the offset range: drawn with every move from
        # cached label pixels (raster.py), so the background does not depend on the limits.
        self.ticks = [AxisTicks(ax, "x", grid=0.25), AxisTicks(ax, "y", grid=0.25)]
        # The table and the legend are drawn as prepared pixels (see raster.py): as matplotlib
        # text they cost more than the whole rest of the figure. The legend goes under the table,
        # one for each kind of attention (the encoder has no masked band), shown in turn.
        handles, labels = ax.get_legend_handles_labels()
        self.legends = {}
        for mode in ("encoder", "decoder"):
            keep = [(h, lab) for h, lab in zip(handles, labels, strict=True)
                    if mode == "decoder" or h is not self.masked_band]
            legend = fig.legend(*zip(*keep, strict=True), loc="lower left", bbox_to_anchor=(0.575, 0.01),
                                frameon=False, ncols=2, borderaxespad=0, handlelength=1.6, columnspacing=1.0)
            (self.legends[mode],) = freeze(fig, [legend])

        # The title and the table: one block of pixels from the glyph atlas.
        self.table_image = fig.add_artist(PixelBlock())
        self._blocks = {}
        self.table: BucketTable | None = None
        self.error: str | None = None

    def draw(self, num_buckets, max_distance, attention, offset_range):
        bidirectional = attention == "encoder"
        for mode, legend in self.legends.items():
            legend.set_visible(mode == attention)
        table = _table(bidirectional, num_buckets, max_distance)
        if isinstance(table, str):
            self.table, self.error = None, table
            self._show_error(attention, table)
            self._set_limits(num_buckets, offset_range)  # the same axes as a valid setting would get
            return
        self.table, self.error = table, None
        self.error_text.set_text("")
        max_exact = table.max_exact

        self.steps.set_data(*_steps(bidirectional, num_buckets, max_distance, offset_range))
        # Encoder: |offset| < max_exact on both sides; decoder: the left side only (the right is bucket 0).
        self.exact_band.set_bounds(-(max_exact - 0.5), 0, (2 * max_exact - 1) if bidirectional else max_exact, 1)
        self.masked_band.set_bounds(0.5, 0, 0 if bidirectional else offset_range, 1)
        self.masked_band.set_visible(not bidirectional)  # of width 0 it would draw nothing, slowly

        lines = [(x, y) for b in table.unused for x, y in ((-offset_range, b), (offset_range, b), (np.nan, np.nan))]
        self.unused_lines.set_data(*(zip(*lines, strict=True) if lines else ([], [])))
        sides = (-1, 1) if bidirectional else (-1,)
        xs = [x for s in sides for x in (s * max_distance, s * max_distance, np.nan)]
        ys = [y for _ in sides for y in (-0.8, num_buckets - 0.2, np.nan)]  # the full height (_set_limits)
        self.max_distance_lines.set_data(xs, ys)
        start = table.last_bucket_start
        marks = [(-start, relative_position_bucket(-start, bidirectional, num_buckets, max_distance))]
        if bidirectional:
            marks.append((start, relative_position_bucket(start, True, num_buckets, max_distance)))
        self.last_start_marks.set_data(*zip(*marks, strict=True))

        self._set_limits(num_buckets, offset_range)
        self._show_table(table)

    def _set_limits(self, num_buckets, offset_range):
        self.ax.set_xlim(-offset_range * 1.05, offset_range * 1.05)
        # Room above the top bucket and below bucket 0, so their markers are never cut in half.
        self.ax.set_ylim(-0.8, num_buckets - 0.2)
        self.ax.set_yticks(range(0, num_buckets, max(1, math.ceil(num_buckets / 8))))

    def _show_table(self, table):
        key = (table.bidirectional, table.num_buckets, table.max_distance)
        if key not in self._blocks:
            if len(self._blocks) > 64:
                self._blocks.clear()
            self._blocks[key] = titled_block(f"bucket_ranges({', '.join(map(str, key))})", table, DPI)
        self._place(self._blocks[key])

    def _place(self, block):
        self.table_image.set_pixels(block, 0.575 * self.fig.bbox.width, 0.985 * self.fig.bbox.height)

    def _show_error(self, attention, error: str):
        for line in (self.steps, self.unused_lines, self.max_distance_lines, self.last_start_marks):
            line.set_data([], [])
        for band in (self.exact_band, self.masked_band):
            band.set_width(0)
        self.masked_band.set_visible(False)
        self.error_text.set_text("No buckets for this setting:\n" + textwrap.fill(error, 48))
        self._place(titled_block(f"bucket_ranges: {attention}: error", None, DPI))

    def moving_artists(self):
        return [self.exact_band, self.masked_band, self.steps, self.unused_lines, self.max_distance_lines,
                self.last_start_marks, self.error_text, *self.ax.spines.values(), self.table_image, *self.ticks]

    def layer_artists(self):
        # The two bands fill much of the axes, translucent (and hatched): slow to draw on each move.
        return [self.exact_band, self.masked_band]

    def _layer_key(self):
        return (self.ax.get_xlim(), *((band.get_x(), band.get_width(), band.get_visible())
                                      for band in self.layer_artists()))

    def layer_bbox(self):
        return self.ax.bbox.padded(2)  # the bands are clipped to the axes; their antialiased edges too

    def _background_key(self):
        return (self.values["attention"],)  # each kind has its own legend; nothing else in it changes

    def readout(self):
        t = self.table
        if t is None:
            return f"ArgumentError: {self.error}"
        unused = ", ".join(map(str, t.unused)) or "none"
        return (f"max_exact = {t.max_exact}; the last bucket starts at |offset| = {t.last_bucket_start} "
                f"(max_distance = {t.max_distance}); buckets never used: {unused}")

