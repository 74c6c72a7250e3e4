"""The course's one figure style, and the helpers every figure (static or explorer) goes through.

Figures are plain matplotlib `Figure`s (no pyplot: nothing global, nothing shown twice by the
inline backend). The style, in one place:

- **Size**: sizes are given in *display* inches of `DISPLAY_DPI` (100) CSS pixels. A full-width
  figure is `WIDTH` = 9.2 in, 920 px: JupyterLab's output area is 968 px wide in a 1400 px
  window with the file browser open, so it is shown at its natural size, never stretched.
- **Sharpness**: PNGs are rendered with `PIXEL_RATIO` (2) times the pixels and displayed at 1x
  (the notebook gets the display width with the image), so text stays sharp on HiDPI screens
  and when zoomed in.
- **Fonts**: `STYLE` (10 pt text, 11 pt titles, 9 pt ticks and legends: 12.5 CSS px and up);
  `SMALL` (9 pt) is the smallest size any figure uses. Figure code builds under `style()` (or
  the `styled` decorator), a `matplotlib.rc_context`, so the user's own rcParams stay untouched.
- **Encoding**: `encode_png` writes the Agg buffer as a PNG with zlib level 1 and no row filter:
  about three times faster than Pillow's encoder at level 1 (which filters every row), for files
  2 to 24 % larger, 7 % at the median over the explorers (`benchmarks/png_writer.py` measures
  both). Explorers make one PNG per slider move, so speed wins. Pictures stored in a notebook go
  through `compact_png` instead (256 colours, about a third the size).
- **Colour**: series take the Okabe-Ito colours (`COLORS`, in the order of `SERIES`), which stay
  apart under deuteranopia and protanopia, and each series also gets its own line style and
  marker (`series_style`), so no line is told from another by colour alone. Heatmaps use
  `SEQUENTIAL` (viridis, perceptually uniform) or, for signed values, `DIVERGING` (ColorBrewer's
  RdBu, whose two arms differ in lightness as well as hue). tests/lessons/test_colour_vision.py
  simulates both deficiencies on the rendered figures.
- **Alt text**: every builder ends with `describe(fig, "...")`; `as_image` puts it in the
  output's metadata (`image/png` -> `alt`), which the website build copies into `<img alt>`.

`new_figure(width, height)` makes a figure in this style; `as_image(fig)` turns it into the
image a notebook cell displays.
"""
from __future__ import annotations

import functools
import io
import struct
import zlib
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

__all__ = ["COLORS", "SERIES", "LINESTYLES", "MARKERS", "SEQUENTIAL", "DIVERGING", "series_style",
           "DISPLAY_DPI", "PIXEL_RATIO", "DPI", "WIDTH", "SMALL", "NORMAL", "TITLE", "STYLE", "style", "styled",
           "new_figure", "describe", "alt_text", "display_size", "png_shape", "png_file", "encode_png", "compact_png",
           "figure_png", "as_image"]

DISPLAY_DPI = 100
PIXEL_RATIO = 2
DPI = DISPLAY_DPI * PIXEL_RATIO
WIDTH = 9.2  # inches at DISPLAY_DPI: 920 CSS px, the widest figure in the course

# Okabe & Ito (2008), "Color Universal Design": eight colours told apart with any common colour
# vision deficiency. SERIES is the order series take them (the most distinct pairs first).
COLORS = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
          "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "yellow": "#F0E442"}
SERIES = tuple(COLORS.values())
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 2, 2, 2)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
SEQUENTIAL, DIVERGING = "viridis", "RdBu_r"


def series_style(index: int) -> dict:
    """Colour, line style and marker of the index-th series (wrapping after eight)."""
    k = index % len(SERIES)
    return {"color": SERIES[k], "linestyle": LINESTYLES[k], "marker": MARKERS[k]}


SMALL, NORMAL, TITLE = 9, 10, 11  # font sizes in points; SMALL is the floor
STYLE: dict[RcKeyType, Any] = {
    "font.size": NORMAL,
    "axes.titlesize": TITLE,
    "axes.labelsize": NORMAL,
    "xtick.labelsize": SMALL,
    "ytick.labelsize": SMALL,
    "legend.fontsize": SMALL,
    "legend.title_fontsize": SMALL,
    "figure.titlesize": TITLE,
    "axes.titlepad": 5.0,
    "lines.linewidth": 1.6,
    "savefig.dpi": DPI,
    "image.cmap": SEQUENTIAL,
}


def _cycle():
    from cycler import cycler

    return cycler(color=list(SERIES)) + cycler(linestyle=list(LINESTYLES))


def style():
    """The course style as a context: build (and draw) figures inside it."""
    import matplotlib

    rc: dict[RcKeyType, Any] = {**STYLE, "axes.prop_cycle": _cycle()}
    return matplotlib.rc_context(rc)


def styled(function):
    """Decorator: run a figure-building function in the course style."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with style():
            return function(*args, **kwargs)
    return wrapper


def new_figure(width, height, dpi=None, layout: Literal["constrained", "compressed", "tight"] | None = "constrained"
               ) -> Figure:
    """A `Figure` of width x height display inches, at the course dpi, with an Agg canvas.

    Call it (and add artists) inside `style()` or a `styled` function, so fonts follow the style.
    `dpi` is for helper canvases only (a glyph atlas): a course figure keeps the default, and is
    at most `WIDTH` wide.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .._validate import ArgumentError

    if dpi is None and (not 0 < width <= WIDTH + 1e-9 or not 0 < height <= 12):
        raise ArgumentError(f"a course figure is at most {WIDTH} x 12 display inches, got {width} x {height}")
    # The tiny extra keeps float rounding from losing a pixel (9.2 * 200 is 1839.99...).
    fig = Figure(figsize=(width + 1e-6, height + 1e-6), dpi=DPI if dpi is None else dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def agg_canvas(fig: Figure) -> FigureCanvasAgg:
    """The Agg canvas of a figure from `new_figure` (matplotlib declares a figure's canvas as the base
    class, which has no pixels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        raise TypeError(f"the figure has a {type(canvas).__name__}, not the Agg canvas of new_figure")
    return canvas


def describe(fig, alt: str):
    """Attach the figure's alt text: one or two sentences on what it shows and what to notice.

    Written once, where the figure is made; whatever shows the figure (a notebook cell, the site)
    reads it back with `alt_text`. Returns the figure, so a builder can end with
    `return describe(fig, "...")`.
    """
    from .._validate import ArgumentError

    if not isinstance(alt, str) or not alt.strip():
        raise ArgumentError("alt text must be a non-empty string saying what the figure shows")
    fig._t5lesson_alt = " ".join(alt.split())
    return fig


def alt_text(fig) -> str | None:
    """The alt text `describe` attached to the figure, or None."""
    return getattr(fig, "_t5lesson_alt", None)


def display_size(fig) -> tuple[int, int]:
    """(width, height) in CSS pixels at which the figure is shown: its pixels / PIXEL_RATIO."""
    width, height = fig.get_size_inches() * fig.dpi / PIXEL_RATIO
    return int(round(width)), int(round(height))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_shape(pixels) -> tuple[int, int, int]:
    """(height, width, channels) of pixels a PNG can hold as they are: uint8 [height, width, 3 or 4]."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        raise ValueError(f"need a uint8 array [height, width, 3 or 4], got {pixels.dtype} {pixels.shape}")
    return pixels.shape


def png_file(width: int, height: int, channels: int, image_data: bytes) -> bytes:
    """A PNG file around `image_data`: the zlib stream of the rows, RGBA (4 channels) or RGB, 8 bits."""
    header = struct.pack(">IIBBBBB", width, height, 8, 6 if channels == 4 else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", image_data) + _chunk(b"IEND", b"")


def encode_png(pixels) -> bytes:
    """PNG bytes of an RGBA (or RGB) uint8 array [height, width, channels]: no row filter, zlib level 1.

    RGBA stays RGBA: dropping the alpha of an opaque figure gives zlib less to compress, but copying
    the three-byte pixels out costs more than that saves (`benchmarks/lesson_helpers.py` times both).
    """
    pixels = np.asarray(pixels)
    height, width, channels = png_shape(pixels)
    rows = np.empty((height, width * channels + 1), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) on every row
    rows[:, 1:] = pixels.reshape(height, -1)
    return png_file(width, height, channels, zlib.compress(rows.data, 1))


def compact_png(pixels) -> bytes:
    """PNG bytes of an RGBA (or RGB) uint8 array in 256 colours (median cut, no dithering).

    For pictures stored in a notebook (static figures, an explorer's picture): about three times
    smaller than `encode_png` and, for the flat colours and antialiased edges of a chart, not
    visibly different; several times slower (`benchmarks/lesson_helpers.py`), so never used for
    slider moves.
    """
    from PIL import Image

    image = Image.fromarray(np.asarray(pixels)[..., :3])
    buffer = io.BytesIO()
    image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        buffer, format="png", compress_level=6)
    return buffer.getvalue()


def figure_png(fig, compact=False) -> bytes:
    """The figure drawn in full and encoded (`encode_png`, or `compact_png` if compact)."""
    with style():
        fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())
    return compact_png(pixels) if compact else encode_png(pixels)


def as_image(fig):
    """The figure as an IPython PNG image (what a notebook cell shows and stores), displayed at 1x,
    with its alt text (`describe`) in the output's metadata."""
    from IPython.display import Image

    width, height = display_size(fig)
    alt = alt_text(fig)  # None: no alt (tests/lessons/test_alt_text.py fails on such a stored figure)
    # IPython puts `alt` in the output's metadata (image/png -> alt): JupyterLab and the site read it.
    return Image(figure_png(fig, compact=True), width=width, height=height, alt=alt)
