"""Fast PNGs for explorers: keep what never moves as a bitmap, draw only what moves on top.

Rendering a whole explorer figure on every slider move costs a few times the budget of one move
(`base.UPDATE_BUDGET_MS`; `benchmarks/explorers.py` prints both), most of it laying out and
rasterising tick labels, axis labels and titles that never change. `BlitRender`, the explorer
class every explorer derives from, avoids it:

- the layout is fixed: if `build` left constrained layout on, it runs once, in the state whose
  labels take the most room (`widest`: parameter values), and is then switched off, so nothing
  shifts later (explorers that place their axes themselves in `build` skip this);
- the figure without its moving artists is kept as a bitmap per set of axes limits (a few,
  least recently used first out: sliders go back and forth), so ticks are drawn again only when
  limits change;
- a PNG is that bitmap plus the artists `moving_artists()` lists, drawn on top in that order,
  which must be the order a full draw would use (list spines last if moving artists cover the
  frame);
- a few slow moving artists whose pixels follow a few settings only (`layer_artists`: large
  translucent or hatched patches) are drawn over the background once per setting and then
  pasted from a second cache;
- PNGs are written by `BandPNG` (zlib level 1, the Up row filter): one is made on every move, at
  twice the display pixels, so encoding time counts more than a few kilobytes. It compresses
  bands of rows apart (each starts afresh, so it can be reused) and keeps each band's bytes: a
  band whose pixels did not change since the last PNG is not compressed again.

- text is drawn from cached glyph bitmaps (`cache_text`): matplotlib lays out and rasterises
  every glyph of a `Text` on every draw (a title that follows a slider costs more than the
  curves under it); the explorer's renderer instead keeps, per string, font, angle and place,
  the glyph bitmaps that drawing it produced, and pastes those again. A string not seen before
  is laid out, but its glyphs come from a cache of bitmaps per glyph, size and sub-pixel
  offset. The same calls with the same bitmaps: the same pixels.
  Why a cache and not the boundary table as HTML: the table is already pixels from a glyph atlas
  (public calls only), and the titles and notes of every explorer need the cache; its private
  matplotlib names are checked, per verified version, by `tests/explorers/test_raster.py`.
  Its worth, against plain matplotlib text (`benchmarks/explorers.py --compare-glyph-cache`): a
  median 15 % of a move's CPU time over the explorers whose text changes on a move (6-24 % each).
  Its two levels serve different explorers: whole strings those whose text repeats as a slider
  goes back and forth (9 % alone), glyph bitmaps those that print a new number on every move.

A blitted frame equals a from-scratch render of the same state (the tests check this). The
moving artists are marked animated, so `fig.savefig` would leave them out: use `to_png`/`save`.
"""
from __future__ import annotations

import math
import struct
import zlib
from collections import OrderedDict

import matplotlib as mpl
import numpy as np
from matplotlib.layout_engine import PlaceHolderLayoutEngine

from ..common.figures import agg_canvas, png_file, png_shape, style
from .base import Explorer

__all__ = ["BlitRender", "BandPNG", "cache_text"]

_GLYPHS: dict = {}  # draw_text's arguments (less the colour) -> [(bitmap, x, y, angle)] it pasted
_GLYPHS_MAX = 4096


class _Recorder:
    """Stands in for the Agg renderer's C++ core during one `draw_text`: keeps what it pastes."""

    def __init__(self, core, calls):
        self.core, self.calls = core, calls

    def draw_text_image(self, image, x, y, angle, gc):
        self.calls.append((np.array(image, dtype=np.uint8), x, y, angle))
        self.core.draw_text_image(image, x, y, angle, gc)

    def __getattr__(self, name):  # anything else draw_text might use, unchanged
        return getattr(self.core, name)


_GLYPH_BITMAPS: dict = {}  # (font, size, dpi, glyph, ..., sub-pixel offset) -> (font, bitmap, left, top)
# The matplotlib versions (major.minor) whose private glyph-drawing steps `_glyph_drawer` repeats,
# checked pixel for pixel (tests/explorers/test_raster.py fails on any other, so an upgrade is
# checked before it ships). Elsewhere (the live site's Pyodide matplotlib, say) strings are still
# cached whole, with `renderer._renderer` alone.
VERIFIED_MATPLOTLIB = ("3.11",)
_GLYPH_LEVEL = ".".join(mpl.__version__.split(".")[:2]) in VERIFIED_MATPLOTLIB


def _glyph_drawer(renderer):
    """`RendererAgg._draw_text_glyphs_and_boxes` (matplotlib 3.11) with each glyph's bitmap cached.

    FreeType renders a glyph at a position given in 1/64 pixel; moving it by whole pixels moves
    its bitmap by as many pixels and leaves the bitmap as it was. So a glyph's bitmap is kept per
    font, size, dpi, angle, hinting, antialiasing and the fraction of a pixel of its position,
    with its place relative to the whole pixels; the paste is the one matplotlib would make.
    """
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.ft2font import RenderMode

    original = renderer._draw_text_glyphs_and_boxes

    def draw(gc, x, y, angle, glyphs, boxes):
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        load_flags = get_hinting_flag()
        antialiased = gc.get_antialiased()
        core, height, dpi = renderer._renderer, renderer.height, renderer.dpi
        for font, size, glyph_index, slant, extend, dx, dy in glyphs:  # dy is upwards
            across = round(0x40 * (x + dx * cos - dy * sin))
            up = round(0x40 * (height - y + dx * sin + dy * cos))  # FreeType's y is upwards
            key = (id(font), size, dpi, glyph_index, slant, extend, angle, load_flags, antialiased,
                   across & 0x3F, up & 0x3F)
            hit = _GLYPH_BITMAPS.get(key)
            if hit is None or hit[0] is not font:
                font.set_size(size, dpi)
                font._set_transform((0x10000 * np.array([[cos, -sin], [sin, cos]])
                                     @ [[extend, extend * slant], [0, 1]]).round().astype(int), [across, up])
                bitmap = font._render_glyph(glyph_index, load_flags,
                                            RenderMode.NORMAL if antialiased else RenderMode.MONO)
                buffer = np.array(bitmap.buffer)
                if not antialiased:
                    buffer *= 0xFF
                hit = (font, buffer, bitmap.left - (across >> 6), bitmap.top - (up >> 6))
                if len(_GLYPH_BITMAPS) >= 4 * _GLYPHS_MAX:
                    _GLYPH_BITMAPS.clear()
                _GLYPH_BITMAPS[key] = hit
            _, buffer, left, top = hit
            # draw_text_image's y is downwards and names the bitmap's bottom side
            core.draw_text_image(buffer, left + (across >> 6), int(height) - (top + (up >> 6)) + buffer.shape[0], 0, gc)
        if boxes:
            original(gc, x, y, angle, (), boxes)

    return draw


def cache_text(renderer):
    """Make an Agg renderer draw plain text from cached glyph bitmaps; returns it.

    Agg's `draw_text` lays out the string and rasterises each glyph, then pastes each bitmap in
    the colour of the graphics context (`draw_text_image`). The bitmaps and their places depend
    only on the string, the font, the angle, the anchor, antialiasing, the dpi, the canvas height
    and the hinting settings: with those as the key, the first draw records the pastes and
    later ones repeat them. Mathtext, TeX and anything else go the usual way.
    """
    if "draw_text" in vars(renderer):
        return renderer
    plain = renderer.draw_text

    def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath:
            return plain(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
        features = (tuple(mtext.get_fontfeatures() or ()), mtext.get_language()) \
            if mtext is not None and hasattr(mtext, "get_fontfeatures") else None
        font = (tuple(prop.get_family()), prop.get_slant(), prop.get_variant(), prop.get_weight(),
                prop.get_stretch(), prop.get_size_in_points(), prop.get_file())
        key = (s, font, angle, x, y,
               gc.get_antialiased(), renderer.dpi, renderer.width, renderer.height, features,
               mpl.rcParams["text.hinting"], mpl.rcParams["text.hinting_factor"],
               mpl.rcParams["text.kerning_factor"])
        calls = _GLYPHS.get(key)
        core = renderer._renderer
        if calls is None:
            calls = []
            renderer._renderer = _Recorder(core, calls)
            try:
                plain(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
            finally:
                renderer._renderer = core
            if len(_GLYPHS) >= _GLYPHS_MAX:
                _GLYPHS.clear()
            _GLYPHS[key] = calls
            return None
        for image, px, py, a in calls:
            core.draw_text_image(image, px, py, a, gc)
        return None

    renderer.draw_text = draw_text
    if _GLYPH_LEVEL:
        renderer._draw_text_glyphs_and_boxes = _glyph_drawer(renderer)
    return renderer


def _adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two byte strings joined, from theirs (zlib's adler32_combine)."""
    base = 65521
    rem = second_length % base
    sum1 = first & 0xFFFF
    sum2 = rem * sum1 % base
    sum1 = (sum1 + (second & 0xFFFF) + base - 1) % base
    sum2 = (sum2 + (first >> 16) + (second >> 16) + base - rem) % base
    return (sum2 << 16) | sum1


def _words(pixels) -> np.ndarray:
    """The rows of a C-contiguous uint8 image as [height, n] of the widest unsigned integers that fit."""
    flat = pixels.reshape(pixels.shape[0], -1)
    for dtype in (np.uint64, np.uint32, np.uint16):
        if flat.shape[1] % np.dtype(dtype).itemsize == 0:
            return flat.view(dtype)
    return flat


class BandPNG:
    """PNG writer for a sequence of same-sized frames that recompresses only the rows that changed.

    The image data of a PNG is one zlib stream of its rows, each led by its filter byte. Rows are
    written with the "Up" filter (each byte minus the one above it): an explorer's frames are
    mostly rows that repeat the row above (heatmap cells, flat fills, blank margins), which
    become zeros, so the stream is smaller and quicker to compress than the raw rows.
    This writer compresses the stream in bands of `band_rows` rows, ending each with a full
    flush: the compressor then forgets everything before, so a band's bytes decode on their own
    and can be put in any stream at that place. A band whose rows, and the row above its first,
    equal those of the previous frame keeps its bytes (and its Adler-32, combined into the
    stream's checksum without reading the rows). Bands restart the compressor's match search,
    for a few per cent more bytes than one zlib call; on an explorer's frames they were still
    quicker than one call when every band changed, and an unchanged band costs nothing
    (`benchmarks/explorers.py` prints the PNG size of every explorer).
    """

    def __init__(self, band_rows=8, level=1):
        self.band_rows, self.level = band_rows, level
        self._previous = None  # the last frame's pixels (a copy)
        self._bands = []  # per band: (compressed bytes, Adler-32 of its rows, length of its rows)

    def encode(self, pixels) -> bytes:
        pixels = np.ascontiguousarray(pixels)
        height, width, channels = png_shape(pixels)
        starts = range(0, height, self.band_rows)
        if self._previous is None or self._previous.shape != pixels.shape:
            self._previous, self._bands = np.empty_like(pixels), []
            changed = [True] * len(starts)
        else:
            rows = (_words(pixels) != _words(self._previous)).any(axis=1)  # rows that changed
            rows[1:] |= rows[:-1]  # a filtered row also changes with the row above it
            changed = np.logical_or.reduceat(rows, np.asarray(starts)).tolist()
        flat = pixels.reshape(height, -1)
        compressor = zlib.compressobj(self.level, zlib.DEFLATED, -15)  # raw deflate: the zlib header is ours
        for index, (start, redo) in enumerate(zip(starts, changed, strict=True)):
            if not redo:
                continue
            stop = min(start + self.band_rows, height)
            rows = np.empty((stop - start, width * channels + 1), dtype=np.uint8)
            rows[:, 0] = 2  # filter type 2 (Up) on every row
            first = start
            if start == 0:  # the first row has nothing above it: Up leaves it as it is
                rows[0, 1:] = flat[0]
                first = 1
            np.subtract(flat[first:stop], flat[first - 1:stop - 1], out=rows[first - start:, 1:])  # modulo 256
            band = (compressor.compress(rows.data) + compressor.flush(zlib.Z_FULL_FLUSH), zlib.adler32(rows.data),
                    rows.size)
            if index < len(self._bands):
                self._bands[index] = band
            else:
                self._bands.append(band)
            self._previous[start:stop] = pixels[start:stop]
        checksum = 1  # the Adler-32 of nothing
        for _, adler, length in self._bands:
            checksum = _adler32_combine(checksum, adler, length)
        # zlib header (deflate, 32 KiB window, fastest), the bands, an empty final block, the checksum
        data = b"".join([b"\x78\x01", *(band for band, _, _ in self._bands), b"\x03\x00", struct.pack(">I", checksum)])
        return png_file(width, height, channels, data)


class BlitRender(Explorer):
    """An explorer with cached background bitmaps and its moving artists drawn on top."""

    widest: dict = {}  # parameter values whose labels take the most room (for the one layout pass)
    background_cache_size = 8

    def __init__(self, **params):
        super().__init__(**params)
        engine = self.fig.get_layout_engine()
        if engine is not None and not isinstance(engine, PlaceHolderLayoutEngine):
            with style():
                self._lay_out_once()
        for artist in self.moving_artists():
            artist.set_animated(True)  # full draws (the backgrounds) now leave them out
        self._backgrounds = OrderedDict()
        self._png = BandPNG()

    def moving_artists(self) -> list:
        """The artists `draw` changes, in drawing order; everything else is background."""
        raise NotImplementedError

    def prepare_view(self):
        """Before the view first shows: draw the background of every other choice of each toggle,
        so the learner's first click on it is as quick as any other move."""
        current = dict(self.values)
        for p in self.params:
            if p.options is None or not p.shown:
                continue
            for option in p.options:
                if option != current[p.name]:
                    self.values = {**current, p.name: option}  # the background's key reads them
                    with style():
                        self.draw(**self.values)
                    self.pixels()
        self.values = current
        with style():
            self.draw(**current)

    def _lay_out_once(self):
        """Run the layout engine in the widest state, then switch it off and show the real state."""
        self.draw(**{**self.values, **self.widest})
        self.fig.draw_without_rendering()
        self.fig.set_layout_engine("none")
        self.draw(**self.values)

    def to_png(self) -> bytes:
        return self._png.encode(self.pixels())

    def _background_key(self):
        return tuple((ax.get_xlim(), ax.get_ylim()) for ax in self.fig.axes)

    def pixels(self) -> np.ndarray:
        canvas = agg_canvas(self.fig)
        cache_text(canvas.get_renderer())
        key = self._background_key()
        if key in self._backgrounds:
            self._backgrounds.move_to_end(key)
            canvas.restore_region(self._backgrounds[key])
        else:
            with style():
                canvas.draw()
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
            if len(self._backgrounds) > self.background_cache_size:
                self._backgrounds.popitem(last=False)
        layer = self.layer_artists()
        if layer:
            self._draw_layer(key, layer)
        for artist in self.moving_artists()[len(layer):]:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        return np.asarray(canvas.buffer_rgba())

    # --- a second cached layer -----------------------------------------------------------
    layer_cache_size = 16

    def layer_artists(self) -> list:
        """The first few moving artists, when they are slow to draw (large translucent or hatched
        patches, say) and their pixels follow a few settings only (`_layer_key`): drawn over the
        background once per key, then pasted from a bitmap of `layer_bbox()`. Default: none."""
        return []

    def _layer_key(self):
        raise NotImplementedError

    def layer_bbox(self):
        return self.fig.bbox

    def _draw_layer(self, background_key, artists):
        canvas = agg_canvas(self.fig)
        if not hasattr(self, "_layers"):
            self._layers = OrderedDict()
        key = (background_key, self._layer_key())
        if key in self._layers:
            self._layers.move_to_end(key)
            canvas.restore_region(self._layers[key])
            return
        for artist in artists:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        self._layers[key] = canvas.copy_from_bbox(self.layer_bbox())
        if len(self._layers) > self.layer_cache_size:
            self._layers.popitem(last=False)
