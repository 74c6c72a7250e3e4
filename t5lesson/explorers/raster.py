"""Pixels prepared in advance, for the parts of an explorer figure that are slow to draw each time.

Drawing text is what makes a matplotlib figure slow: every glyph of every `Text` is laid out and
rasterised again on each render. Measured here on the bucket explorer (CPU time per update):
the 32-row boundary table cost about 20 ms and the legend about 13 ms, against a 50 ms budget.
Two remedies, both pixel-exact because they are shown with `Figure.figimage` (no resampling):

- `GlyphAtlas`: a monospace font rendered once, one cell per character; a block of text is then
  assembled with one NumPy fancy-indexing step (well under a millisecond for a whole table);
- `freeze`: artists that never change (a legend, a colour bar with fixed limits) are drawn
  once and replaced by their pixels.

The rest of the figure (axes, ticks, labels) is kept as a bitmap by `render.BlitRender`.
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgb

from .._validate import ArgumentError
from ..lessons.figures import new_figure

__all__ = ["GlyphAtlas", "freeze"]

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
        canvas = fig.canvas
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
