"""Pixels prepared in advance, for the parts of an explorer figure that are slow to draw each time.

Drawing text is what makes a matplotlib figure slow: every glyph of every `Text` is laid out and
rasterised again on each render, and a table of bucket boundaries or a legend as `Text` cost
more than the rest of an explorer figure together. Remedies, all pixel-exact (what each saves is
what `benchmarks/explorers.py` prints, against the budget `base.UPDATE_BUDGET_MS`):

- `GlyphAtlas`: a monospace font rendered once, one cell per character; a block of text is then
  assembled with one NumPy fancy-indexing step instead of a layout and a rasterisation;
- `freeze`: artists that never change (a legend, a colour bar with fixed limits) are drawn
  once and replaced by their pixels (a `PixelBlock`, below);
- `PixelBlock`: an artist that copies prepared RGBA pixels to a fixed place in the figure,
  with no colour mapping and no resampling (a `figimage` or `imshow` of the same size maps and
  resamples on every draw). Explorers draw their changing tables and heatmaps with it.

The rest of the figure (axes, ticks, labels) is kept as a bitmap by `render.BlitRender`.
"""
from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb

from .._validate import ArgumentError
from ..common.figures import agg_canvas, new_figure

__all__ = ["GlyphAtlas", "freeze", "PixelBlock", "Heatmap", "AxisTicks", "TextBlock", "to_rgba_bytes"]

_CHARS = "".join(chr(c) for c in range(32, 127))


class GlyphAtlas:
    """Printable ASCII in a monospace font at one size and dpi, one fixed-size cell per character.

    The font size is rounded so that a character advances a whole number of pixels, so glyphs
    sit exactly where matplotlib would put them.
    """

    def __init__(self, cell_width_px=5, dpi=80, family="DejaVu Sans Mono", line_spacing=1.25):
        # DejaVu Sans Mono advances 0.602 em per character; choose the size that gives whole pixels.
        self.fontsize = cell_width_px / 0.602 * 72 / dpi
        em_px = self.fontsize * dpi / 72
        self.cell = (int(np.ceil(em_px * line_spacing)), int(cell_width_px))  # (height, width)
        height, width = self.cell
        baseline_from_top = int(np.ceil(em_px * 0.95))  # room for the tallest ascender
        pad = width  # empty space between cells, so antialiased edges never spill into a neighbour
        fig = new_figure(len(_CHARS) * (width + pad) / dpi, height / dpi, dpi=dpi, layout=None)
        canvas = agg_canvas(fig)
        fig.patch.set_facecolor("white")
        for i, char in enumerate(_CHARS):
            fig.text(i * (width + pad) / fig.bbox.width, 1 - baseline_from_top / height, char, family=family,
                     fontsize=self.fontsize, va="baseline", ha="left", color="black")
        canvas.draw()
        grey = np.asarray(canvas.buffer_rgba())[:, :, 0].astype(np.float32)
        coverage = 1.0 - grey / 255.0  # black text on white: how much ink each pixel has
        self._cells = np.stack([coverage[:, i * (width + pad):i * (width + pad) + width] for i in range(len(_CHARS))])
        self._index = {char: i for i, char in enumerate(_CHARS)}
        self._coloured = {}  # colour -> uint8 RGB of every cell in that colour

    def _codes(self, line) -> list[int]:
        """The atlas cell of each character of `line`."""
        bad = set(line) - set(self._index)
        if bad:
            raise ArgumentError(f"only printable ASCII can be drawn, got {''.join(sorted(bad))!r}")
        return [self._index[c] for c in line]

    def line_bytes(self, line, colour="black", alpha=False) -> np.ndarray:
        """uint8 RGB [cell height, len(line) x cell width, 3] of one line in one colour (RGBA, opaque,
        with `alpha`).

        The pixels of `render([line], [colour])` rounded as `to_rgba_bytes` rounds, the same
        arithmetic done once per colour for every cell: a line is then one indexing step instead
        of a render and a rounding.
        """
        table = self._coloured.get((colour, alpha))
        if table is None:
            rgb = np.array(to_rgb(colour), dtype=np.float32)
            table = np.clip((1.0 - self._cells[..., None] * (1.0 - rgb)) * 255 + 0.5, 0, 255).astype(np.uint8)
            if alpha:
                table = np.concatenate([table, np.full(table.shape[:3] + (1,), 255, dtype=np.uint8)], axis=3)
            self._coloured[(colour, alpha)] = table
        height, width = self.cell
        codes = np.array(self._codes(line), dtype=np.intp)
        return table[codes].transpose(1, 0, 2, 3).reshape(height, len(line) * width, table.shape[3])

    def render(self, lines, colors=None) -> np.ndarray:
        """RGB float array of `lines` (strings), black on white, or each line in its own colour."""
        if not isinstance(lines, (list, tuple)) or not all(isinstance(line, str) for line in lines):
            raise ArgumentError("lines must be a list of strings")
        if colors is not None and len(colors) != len(lines):
            raise ArgumentError(f"colors must give one colour per line: {len(lines)} lines, {len(colors)} colours")
        height, width = self.cell
        columns = max((len(line) for line in lines), default=0)
        codes = np.zeros((len(lines), columns), dtype=np.intp)  # 0 is the space
        for r, line in enumerate(lines):
            codes[r, :len(line)] = self._codes(line)
        ink = self._cells[codes].transpose(0, 2, 1, 3).reshape(len(lines) * height, columns * width)
        rgb = np.zeros((len(lines), 3), dtype=np.float32) if colors is None else \
            np.array([to_rgb(c) for c in colors], dtype=np.float32)
        ink_rgb = np.repeat(rgb, height, axis=0)[:, None, :]  # the colour of every pixel row
        return 1.0 - ink[:, :, None] * (1.0 - ink_rgb)


def freeze(fig, artists, pad=1):
    """Replace artists that never change (a legend, a colour bar) by their pixels, drawn once.

    The figure is drawn with only `artists` (and the white background) visible; the pixels
    around each artist become a `PixelBlock` at the same place, and the artist is hidden.
    Returns the PixelBlocks. Call it at the end of `build`, once everything is placed; the
    artists' boxes must not overlap anything that changes (the pixels are opaque).
    """
    from matplotlib.axes import Axes

    artists = list(artists)
    holders = {id(a.axes) for a in artists if getattr(a, "axes", None) is not None}  # axes holding a legend
    others = []
    for a in fig.get_children():
        if a is fig.patch or a in artists or not a.get_visible():
            continue
        if isinstance(a, Axes) and id(a) in holders:  # keep the axes, hide all it holds but the artist
            others += [c for c in a.get_children() if c not in artists and c.get_visible()]
        else:
            others.append(a)
    for a in others:
        a.set_visible(False)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        pixels = np.asarray(fig.canvas.buffer_rgba())
        height, width = pixels.shape[:2]
        crops = []
        for artist in artists:
            box = artist.get_tightbbox(renderer).padded(pad)
            x0, y0 = max(int(np.floor(box.x0)), 0), max(int(np.floor(box.y0)), 0)
            x1, y1 = min(int(np.ceil(box.x1)), width), min(int(np.ceil(box.y1)), height)
            crop = pixels[height - y1:height - y0, x0:x1].copy()  # buffer rows run top down
            if crop.size == 0 or crop[..., :3].min() > 250:
                raise ArgumentError(f"freeze: {type(artist).__name__} drew nothing to keep")
            crops.append((crop, x0, y0))
    finally:
        for a in others:
            a.set_visible(True)
    for a in artists:
        a.set_visible(False)
    blocks = []
    for crop, x0, y0 in crops:
        block = fig.add_artist(PixelBlock())
        block.set_pixels(crop, x0, y0 + crop.shape[0])
        blocks.append(block)
    return blocks


def to_rgba_bytes(rgb) -> np.ndarray:
    """uint8 RGBA [h, w, 4] from float RGB (or RGBA) in 0..1, opaque."""
    rgb = np.asarray(rgb)
    out = np.empty(rgb.shape[:2] + (4,), dtype=np.uint8)
    out[..., :3] = np.clip(rgb[..., :3] * 255 + 0.5, 0, 255)
    out[..., 3] = 255
    return out


def draw_pixels(renderer, x, y, pixels, opaque=None) -> None:
    """`renderer.draw_image(gc, x, y, pixels)` for prepared pixels (uint8 RGBA, row 0 at the bottom).

    Where every pixel is opaque and the renderer is Agg's own, they are copied into its buffer with
    NumPy (clipped to the canvas): Agg would blend each one, and an opaque
    pixel blended over anything is itself. Otherwise, and on other renderers, `draw_image`.
    `opaque`: whether every alpha is 255, if the caller knows (else it is checked).
    """
    from matplotlib.backends.backend_agg import RendererAgg

    if type(renderer) is RendererAgg and (opaque if opaque is not None else pixels[..., 3].min() == 255):
        canvas = np.asarray(renderer.buffer_rgba())
        height, width = canvas.shape[:2]
        rows, columns = pixels.shape[:2]
        top = height - (y + rows)  # the block's first row in the buffer (which runs top down)
        r0, r1 = max(top, 0), min(top + rows, height)
        c0, c1 = max(x, 0), min(x + columns, width)
        if r0 < r1 and c0 < c1:
            flipped = pixels[::-1]
            canvas[r0:r1, c0:c1] = flipped[r0 - top:r1 - top, c0 - x:c1 - x]
        return
    gc = renderer.new_gc()
    renderer.draw_image(gc, x, y, pixels)
    gc.restore()


class PixelBlock(Artist):
    """Prepared pixels at a fixed place in the figure, drawn as they are (no mapping, no resampling).

    `set_pixels(rgba, x, top)`: rgba is uint8 [h, w, 4], row 0 at the top; x is the left edge and
    top the top edge, in figure pixels from the left and from the bottom. Add it with
    `fig.add_artist`.
    """

    def __init__(self, zorder=3):
        super().__init__()
        self.set_zorder(zorder)
        self._pixels, self._x, self._y = None, 0, 0

    def set_pixels(self, rgba, x, top):
        rgba = np.asarray(rgba)
        if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] != 4:
            raise ArgumentError(f"pixels must be uint8 RGBA [h, w, 4], got {rgba.dtype} {rgba.shape}")
        self._pixels = np.ascontiguousarray(rgba[::-1])  # the renderer wants row 0 at the bottom
        self._opaque = bool(rgba.size) and rgba[..., 3].min() == 255
        self._x, self._y = int(round(x)), int(round(top)) - rgba.shape[0]
        self.stale = True

    @property
    def shape(self):
        return None if self._pixels is None else self._pixels.shape

    def draw(self, renderer):
        if not self.get_visible() or self._pixels is None or self._pixels.size == 0:
            return
        draw_pixels(renderer, self._x, self._y, self._pixels, self._opaque)
        self.stale = False


class Heatmap(Artist):
    """`imshow` with nearest-neighbour pixels that fills its axes, drawn as prepared pixels.

    Like an `AxesImage` it has `set_data`/`get_array` and `set_extent`/`get_extent` (which also
    sets the axes limits: the heatmap always fills its axes, row 0 at the top edge). It is drawn
    by mapping the data to colours once per change, then repeating each cell over its pixels
    (NumPy indexing) and copying them to the canvas, where an `AxesImage` resamples the whole
    image on every draw. Not-a-number cells take the colormap's "bad" colour.
    """

    def __init__(self, ax, cmap, vmin, vmax, zorder=0.5):
        from matplotlib import colormaps
        from matplotlib.colors import Normalize

        super().__init__()
        self.ax = ax  # `Artist.axes` may be None; this heatmap always has its axes
        self.cmap = colormaps[cmap] if isinstance(cmap, str) else cmap
        self.norm = Normalize(vmin, vmax)
        self.set_zorder(zorder)
        ax.add_artist(self)
        self._data = np.zeros((1, 1))
        self._colours = None
        self._extent = [-0.5, 0.5, 0.5, -0.5]

    def set_data(self, data):
        self._data = np.asarray(data, dtype=float)
        self._colours = None
        self.stale = True

    def get_array(self):
        return self._data

    def set_extent(self, extent):
        left, right, bottom, top = extent
        self._extent = [left, right, bottom, top]
        if self.ax.get_xlim() != (left, right):  # setting limits notifies every listener: only if they move
            self.ax.set_xlim(left, right)
        if self.ax.get_ylim() != (bottom, top):
            self.ax.set_ylim(bottom, top)
        self.stale = True

    def get_extent(self):
        return list(self._extent)

    def draw(self, renderer):
        if not self.get_visible():
            return
        if self._colours is None:
            self._colours = self.cmap(self.norm(np.ma.masked_invalid(self._data)), bytes=True)
        box = self.ax.bbox
        x0, x1 = int(round(box.x0)), int(round(box.x1))
        y0, y1 = int(round(box.y0)), int(round(box.y1))
        rows, columns = self._data.shape
        # How many pixels each cell covers: the cell under the centre of every pixel, counted.
        # Repeating rows and columns that many times is a nearest-neighbour upsampling.
        row_counts = np.bincount(((np.arange(y1 - y0) + 0.5) * rows / (y1 - y0)).astype(np.intp), minlength=rows)
        column_counts = np.bincount(((np.arange(x1 - x0) + 0.5) * columns / (x1 - x0)).astype(np.intp),
                                    minlength=columns)
        pixels = np.repeat(np.repeat(self._colours[::-1], row_counts[::-1], axis=0), column_counts, axis=1)
        opaque = bool(self._colours.size) and self._colours[..., 3].min() == 255  # checked on the cells, not pixels
        draw_pixels(renderer, x0, y0, pixels, opaque)  # the renderer wants row 0 at the bottom: flipped above
        self.stale = False


class AxisTicks(Artist):
    """An axis' tick marks, tick labels and grid lines, drawn from cached label pixels.

    Matplotlib lays out and rasterises every tick label on every draw, and a blitting explorer
    whose axis limits follow a slider (a sequence length, a number of buckets) redraws its
    whole background, tick text and all, on each move. This artist draws the same ticks as a
    moving artist instead, from the axis' own locator and formatter: marks and grid lines as
    paths, labels as pixels rendered once per string (`_label_pixels`). The axis' own ticks are
    switched off; the explorer's background then no longer depends on the limits.
    """

    def __init__(self, ax, which, grid: bool | float = False, labels=True, fontsize=None, length=3.5, width=0.8,
                 pad=3.5):
        from matplotlib import rcParams

        super().__init__()
        self.ax, self.which, self.grid, self.labels = ax, which, grid, labels
        self.fontsize = fontsize if fontsize is not None else \
            rcParams["xtick.labelsize" if which == "x" else "ytick.labelsize"]
        self.length, self.width, self.pad = length, width, pad
        self.axis = ax.xaxis if which == "x" else ax.yaxis
        self.grid_style = (rcParams["grid.color"], rcParams["grid.linewidth"])
        if which == "x":
            ax.tick_params(axis="x", which="both", bottom=False, labelbottom=False)
        else:
            ax.tick_params(axis="y", which="both", left=False, labelleft=False)
        ax.grid(False, axis=which)
        self.set_zorder(2.5)
        self._ticks = {}  # (locator, formatter, view) -> (locator, formatter, values, texts)
        ax.figure.add_artist(self)

    def ticks(self):
        """(values, label texts) of the ticks inside the current view.

        Kept per locator, formatter and view (a few dozen: sliders go back and forth), since
        asking the locator and formatter again on every move costs more than drawing the ticks.
        """
        low, high = sorted(self.axis.get_view_interval())
        locator, formatter = self.axis.get_major_locator(), self.axis.get_major_formatter()
        key = (id(locator), id(formatter), low, high)
        hit = self._ticks.get(key)
        if hit is None or hit[0] is not locator or hit[1] is not formatter:  # an id reused by a new object
            values = [v for v in locator() if low - 1e-9 <= v <= high + 1e-9]
            hit = (locator, formatter, values, formatter.format_ticks(values))
            if len(self._ticks) >= 64:
                self._ticks.clear()
            self._ticks[key] = hit
        return hit[2], hit[3]

    def _label_pixels(self, text):
        return _text_rgba(text, self.fontsize, self.ax.figure.dpi)

    def draw(self, renderer):
        from matplotlib.path import Path
        from matplotlib.transforms import IdentityTransform

        if not self.get_visible():
            return
        values, texts = self.ticks()
        box = self.ax.bbox
        to_px = renderer.points_to_pixels
        length, pad = to_px(self.length), to_px(self.pad)
        points = np.zeros((len(values), 2))
        points[:, 0 if self.which == "x" else 1] = values
        where = self.ax.transData.transform(points).tolist() if len(values) else []  # one call for all ticks
        gc = renderer.new_gc()
        identity = IdentityTransform()
        def segments(pairs):  # one path of separate segments: one draw call for all of them
            points = [p for pair in pairs for p in pair]
            return Path(points, [Path.MOVETO, Path.LINETO] * len(pairs))

        if self.grid and where:
            colour, width = self.grid_style
            gc.set_foreground(colour)
            gc.set_alpha(self.grid if isinstance(self.grid, float) else 1.0)
            gc.set_linewidth(width)
            renderer.draw_path(gc, segments([[(x, box.y0), (x, box.y1)] if self.which == "x" else
                                             [(box.x0, y), (box.x1, y)] for x, y in where]), identity)
        gc.set_alpha(1.0)
        gc.set_foreground("black")
        gc.set_linewidth(self.width)
        if where:
            renderer.draw_path(gc, segments([[(x, box.y0), (x, box.y0 - length)] if self.which == "x" else
                                             [(box.x0, y), (box.x0 - length, y)] for x, y in where]), identity)
        for (x, y), text in zip(where, texts, strict=True):
            pixels = self._label_pixels(text) if self.labels else None
            if pixels is None:
                continue
            height, width = pixels.shape[:2]
            if self.which == "x":  # centred under the mark
                left, bottom = x - width / 2, box.y0 - length - pad - height
            else:  # right-aligned before the mark, centred on it
                left, bottom = box.x0 - length - pad - width, y - height / 2
            renderer.draw_image(gc, int(round(left)), int(round(bottom)), pixels)
        gc.restore()
        self.stale = False


_TEXT_PIXELS: dict = {}  # (text, fontsize, dpi) -> RGBA, shared by every axis and explorer of the process
_SCRATCH: dict = {}  # dpi -> (figure, text artist) used to render them


def _text_rgba(text, fontsize, dpi) -> np.ndarray | None:
    """Black text as RGBA pixels (ink in the alpha channel), rows bottom up, cropped to the text's box;
    None if blank. Rendered once per (text, size, dpi) in this process, then reused."""
    from matplotlib.figure import Figure

    if not text.strip():
        return None
    key = (text, fontsize, dpi)
    if key in _TEXT_PIXELS:
        return _TEXT_PIXELS[key]
    if dpi not in _SCRATCH:
        fig = Figure(figsize=(6.0, 0.6), dpi=dpi)
        FigureCanvasAgg(fig)
        fig.patch.set_facecolor("white")
        _SCRATCH[dpi] = (fig, fig.text(0.5, 0.5, "", ha="center", va="center_baseline", color="black"))
    fig, label = _SCRATCH[dpi]
    label.set_text(text)
    label.set_fontsize(fontsize)
    fig.canvas.draw()
    grey = np.asarray(fig.canvas.buffer_rgba())[:, :, 0].astype(np.float32)
    box = label.get_window_extent(fig.canvas.get_renderer())
    height = grey.shape[0]
    x0, x1 = max(int(np.floor(box.x0)), 0), min(int(np.ceil(box.x1)), grey.shape[1])
    y0, y1 = max(int(np.floor(box.y0)), 0), min(int(np.ceil(box.y1)), height)
    ink = 1.0 - grey[height - y1:height - y0, x0:x1] / 255.0
    rgba = np.zeros(ink.shape + (4,), dtype=np.uint8)
    rgba[..., 3] = np.clip(ink * 255 + 0.5, 0, 255)
    if len(_TEXT_PIXELS) > 2000:
        _TEXT_PIXELS.clear()
    _TEXT_PIXELS[key] = np.ascontiguousarray(rgba[::-1])
    return _TEXT_PIXELS[key]


class TextBlock(Artist):
    """One line of text at a fixed place, drawn from pixels rendered once per string (a title that
    changes with a slider, say): cheaper than a `Text`, which lays out and rasterises on every draw.

    `x`, `y`: the anchor in figure fractions; `ha` in left/center/right, `va` in bottom/center/top.
    """

    def __init__(self, fig, x, y, fontsize, ha="center", va="bottom", zorder=3):
        super().__init__()
        self.fig, self.x, self.y, self.fontsize, self.ha, self.va = fig, x, y, fontsize, ha, va
        self.set_zorder(zorder)
        self._text = ""
        fig.add_artist(self)

    def set_text(self, text):
        self._text = str(text)
        self.stale = True

    def get_text(self):
        return self._text

    def draw(self, renderer):
        if not self.get_visible():
            return
        pixels = _text_rgba(self._text, self.fontsize, self.fig.dpi)
        if pixels is None:  # blank
            return
        height, width = pixels.shape[:2]
        x, y = self.x * self.fig.bbox.width, self.y * self.fig.bbox.height
        left = x - {"left": 0, "center": width / 2, "right": width}[self.ha]
        bottom = y - {"bottom": 0, "center": height / 2, "top": height}[self.va]
        gc = renderer.new_gc()
        renderer.draw_image(gc, int(round(left)), int(round(bottom)), pixels)
        gc.restore()
        self.stale = False
