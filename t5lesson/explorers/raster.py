"""Pixels prepared in advance, for the parts of an explorer figure that are slow to draw each time.

Drawing text is what makes a matplotlib figure slow: every glyph of every `Text` is laid out and
rasterised again on each render. Measured here on the bucket explorer (CPU time per update):
the 32-row boundary table cost about 20 ms and the legend about 13 ms, against a 50 ms budget.
Three remedies; the first two are pixel-exact because they are shown with `Figure.figimage`
(no resampling):

- `GlyphAtlas`: a monospace font rendered once, one cell per character; a block of text is then
  assembled with one NumPy fancy-indexing step (well under a millisecond for a whole table);
- `freeze`: artists that never change (a legend, a colour bar with fixed limits) are drawn
  once and replaced by their pixels;
- `BlitRender`: an explorer mixin that keeps the rest of the figure (axes, ticks, labels) as a
  bitmap for each set of axes limits it has seen, and draws only the artists that move on top.
"""
from __future__ import annotations

import io
from collections import OrderedDict

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from .._checks import ArgumentError

__all__ = ["GlyphAtlas", "freeze", "BlitRender"]

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
        fig = Figure(figsize=(len(_CHARS) * (width + pad) / dpi, height / dpi), dpi=dpi)
        canvas = FigureCanvasAgg(fig)
        fig.patch.set_facecolor("white")
        for i, char in enumerate(_CHARS):
            fig.text(i * (width + pad) / fig.bbox.width, 1 - baseline_from_top / height, char, family=family,
                     fontsize=self.fontsize, va="baseline", ha="left", color="black")
        canvas.draw()
        grey = np.asarray(canvas.buffer_rgba())[:, :, 0].astype(np.float32)
        coverage = 1.0 - grey / 255.0  # black text on white: how much ink each pixel has
        self._cells = np.stack([coverage[:, i * (width + pad):i * (width + pad) + width] for i in range(len(_CHARS))])
        self._index = {char: i for i, char in enumerate(_CHARS)}

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
            bad = set(line) - set(self._index)
            if bad:
                raise ArgumentError(f"only printable ASCII can be drawn, got {''.join(sorted(bad))!r}")
            codes[r, :len(line)] = [self._index[c] for c in line]
        ink = self._cells[codes].transpose(0, 2, 1, 3).reshape(len(lines) * height, columns * width)
        rgb = np.zeros((len(lines), 3), dtype=np.float32) if colors is None else \
            np.array([to_rgb(c) for c in colors], dtype=np.float32)
        ink_rgb = np.repeat(rgb, height, axis=0)[:, None, :]  # the colour of every pixel row
        return 1.0 - ink[:, :, None] * (1.0 - ink_rgb)


def freeze(fig, artists, pad=1):
    """Replace artists that never change (a legend, a colour bar) by their pixels, drawn once.

    The figure is drawn with only `artists` (and the white background) visible; the pixels
    around each artist become a `figimage` at the same place, and the artist is hidden.
    Returns the FigureImages. Call it at the end of `build`, once everything is placed; the
    artists' boxes must not overlap anything that changes (the pixels are opaque).
    """
    artists = list(artists)
    others = [a for a in fig.get_children() if a is not fig.patch and a not in artists and a.get_visible()]
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
            crops.append((pixels[height - y1:height - y0, x0:x1].copy(), x0, y0))  # buffer rows run top down
    finally:
        for a in others:
            a.set_visible(True)
    for a in artists:
        a.set_visible(False)
    return [fig.figimage(crop, xo=x0, yo=y0, origin="upper", zorder=3) for crop, x0, y0 in crops]


class BlitRender:
    """Explorer mixin: redraw only the artists that move, over a cached background bitmap.

    Tick labels and axis labels are most of the cost of a render (each text costs about a
    millisecond to lay out and rasterise). They only change when axes limits do, so the
    figure without its moving artists is kept as a bitmap per set of limits (a few, least
    recently used first out: sliders go back and forth). A PNG is then that bitmap plus the
    moving artists, drawn in the order `moving_artists()` lists them, which must be the
    order a full draw would use (list spines last if moving artists touch the frame).
    PNGs use light compression: they are made on every move, so encoding time counts more
    than a few kilobytes.
    """

    background_cache_size = 8

    def moving_artists(self) -> list:
        """The artists `draw` changes, in drawing order; everything else is background."""
        raise NotImplementedError

    def _background_key(self):
        return tuple((ax.get_xlim(), ax.get_ylim()) for ax in self.fig.axes)

    def to_png(self) -> bytes:
        from PIL import Image

        canvas = self.fig.canvas
        moving = self.moving_artists()
        if not getattr(self, "_blit_ready", False):
            for artist in moving:
                artist.set_animated(True)  # a full draw now leaves them out
            self._backgrounds, self._blit_ready = OrderedDict(), True
        key = self._background_key()
        if key in self._backgrounds:
            self._backgrounds.move_to_end(key)
            canvas.restore_region(self._backgrounds[key])
        else:
            canvas.draw()
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
            if len(self._backgrounds) > self.background_cache_size:
                self._backgrounds.popitem(last=False)
        for artist in moving:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()
