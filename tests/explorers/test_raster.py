"""Prepared pixels for explorers: glyph atlas text and frozen static artists."""
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from t5lesson import ArgumentError
from t5lesson.explorers.raster import GlyphAtlas, freeze, to_rgba_bytes


def test_atlas_draws_lines_in_their_colours():
    atlas = GlyphAtlas(cell_width_px=5, dpi=80)
    height, width = atlas.cell
    pixels = atlas.render(["ab 12", "x"], ["black", "red"])
    assert pixels.shape == (2 * height, 5 * width, 3)
    assert pixels.min() < 0.3  # there is ink
    top, bottom = pixels[:height], pixels[height:]
    assert np.allclose(top[..., 0], top[..., 2])  # black: grey levels only
    assert (bottom[..., 0] > bottom[..., 2] + 0.3).any()  # red
    assert np.all(pixels[height:, width:] == 1.0)  # the short line is padded with white
    with pytest.raises(ArgumentError, match="only printable ASCII"):
        atlas.render(["≥ 3"])
    with pytest.raises(ArgumentError, match="one colour per line"):
        atlas.render(["a"], ["red", "blue"])


@pytest.mark.parametrize("colour", ["black", "0.35", "#d55e00"])
def test_atlas_line_bytes_are_the_rounded_pixels_of_render(colour):
    atlas = GlyphAtlas(cell_width_px=15, dpi=200)
    line = "bkt 12  -44..-37 >= 0"
    rgba = atlas.line_bytes(line, colour, alpha=True)
    assert np.array_equal(rgba, to_rgba_bytes(atlas.render([line], [colour])))
    assert np.array_equal(atlas.line_bytes(line, colour), rgba[..., :3])
    with pytest.raises(ArgumentError, match="only printable ASCII"):
        atlas.line_bytes("≥ 3")


def test_freeze_replaces_an_artist_by_its_pixels():
    fig = Figure(figsize=(4, 2), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.1, 0.1, 0.5, 0.8))
    ax.plot([0, 1], [0, 1], label="a line")
    legend = fig.legend(loc="lower right")
    fig.canvas.draw()
    before = np.asarray(fig.canvas.buffer_rgba()).copy()
    (image,) = freeze(fig, [legend])
    assert not legend.get_visible() and ax.get_visible()
    fig.canvas.draw()
    after = np.asarray(fig.canvas.buffer_rgba())
    np.testing.assert_array_equal(before, after)  # pixel for pixel the same picture


def _full_render(explorer):
    """The figure drawn from scratch, every artist in its place (no blitting)."""
    for artist in explorer.moving_artists():
        artist.set_animated(False)
    explorer.fig.canvas.draw()
    pixels = np.asarray(explorer.fig.canvas.buffer_rgba()).copy()
    for artist in explorer.moving_artists():
        artist.set_animated(True)
    return pixels


def _decoded(png):
    import io

    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


@pytest.mark.parametrize("name, moves", [
    ("BucketBoundaryExplorer", [dict(max_distance=300), dict(attention="decoder"), dict(num_buckets=33),
                                dict(num_buckets=32, max_distance=128, attention="encoder")]),
    ("BiasHeatmapExplorer", [dict(head=0), dict(seq_len=40, query_offset=20), dict(attention="encoder"),
                             dict(seq_len=16, query_offset=0, attention="decoder", head=1)]),
])
def test_blitted_png_is_the_full_render(name, moves):
    """Background bitmaps (one per set of limits, reused) plus moving artists = a full draw.

    Only where a tick mark meets the frame line may a few pixels differ by a few levels.
    """
    import t5lesson.explorers.bias_heatmap  # noqa: F401  (registers the explorers)
    import t5lesson.explorers.bucket_boundaries  # noqa: F401
    from t5lesson.explorers import REGISTRY

    explorer = REGISTRY[name]()
    explorer.to_png()
    for move in moves:
        blitted = _decoded(explorer.update(**move).to_png())
        difference = np.abs(blitted.astype(int) - _full_render(explorer).astype(int)).max(-1)
        assert (difference > 0).sum() < 40 and difference.max() <= 16, (move, (difference > 0).sum())
    assert len(explorer._backgrounds) <= explorer.background_cache_size


@pytest.mark.parametrize("name, toggle", [("BucketBoundaryExplorer", "attention"),
                                          ("BiasHeatmapExplorer", "attention")])
def test_prepared_backgrounds_are_the_right_ones(name, toggle):
    """The view draws every toggle choice's background in advance; each must match a fresh render."""
    import t5lesson.explorers.bias_heatmap  # noqa: F401  (registers the explorers)
    import t5lesson.explorers.bucket_boundaries  # noqa: F401
    from t5lesson.explorers import REGISTRY

    explorer = REGISTRY[name]()
    explorer.widget()
    for option in reversed([p for p in explorer.params if p.name == toggle][0].options):
        blitted = _decoded(explorer.update(**{toggle: option}).to_png())
        difference = np.abs(blitted.astype(int) - _full_render(explorer).astype(int)).max(-1)
        assert (difference > 0).sum() < 40, (option, (difference > 0).sum())


def test_cached_text_draws_the_pixels_of_plain_text():
    """Glyphs pasted again from the caches give the pixels of a fresh draw: in a new colour, at a
    new place (whole and fractional pixels), size and angle, for new strings that share glyphs,
    without antialiasing, and for mathtext (which draws rules too)."""
    from t5lesson.explorers.render import cache_text

    def figure():
        fig = Figure(figsize=(3, 1), dpi=100)
        FigureCanvasAgg(fig)
        return fig, fig.text(0.1, 0.4, "", fontsize=11)

    cached, plain = figure(), figure()
    rng = np.random.default_rng(0)
    states = [("d = 64, head 2", "black", 0.1, 0.4, 11, 0, True), ("d = 64, head 2", "tab:red", 0.1, 0.4, 11, 0, True),
              ("d = 64, head 2", "black", 0.33, 0.4, 11, 0, True), ("d = 64, head 2", "black", 0.1, 0.4, 14, 0, True),
              ("d = 128, head 2\nsecond line", "tab:blue", 0.1, 0.4, 11, 0, True),
              ("d = 64, head 2", "black", 0.1, 0.4, 11, 30, True), ("d = 64, head 2", "black", 0.1, 0.4, 11, 0, False),
              (r"$\frac{q \cdot k}{\sqrt{d}}$ = 0.5", "black", 0.2, 0.5, 11, 0, True)]
    states += [(f"d = {rng.integers(1, 2000)}, q·k {rng.normal():.3f}", "black", rng.uniform(0, 0.6),
                rng.uniform(0.2, 0.8), 11, 0, True) for _ in range(12)]
    for text, colour, x, y, size, angle, antialiased in states + states[:3]:
        frames = []
        for (fig, label), cache in ((cached, True), (plain, False)):
            label.set(text=text, color=colour, x=x, y=y, fontsize=size, rotation=angle, antialiased=antialiased)
            if cache:
                cache_text(fig.canvas.get_renderer())
            fig.canvas.draw()
            frames.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        assert frames[0][..., :3].min() < 128  # some ink was drawn
        np.testing.assert_array_equal(frames[0], frames[1], err_msg=repr((text, x, y, size, angle, antialiased)))
    assert "draw_text" in vars(cached[0].canvas.get_renderer())
    assert "draw_text" not in vars(plain[0].canvas.get_renderer())


def test_glyph_cache_runs_on_a_verified_matplotlib():
    """`cache_text` repeats matplotlib's private text-drawing steps (render.py): it may only run on a
    matplotlib whose steps were checked against matplotlib's own drawing (the test above). On a new
    version: run that test, read `RendererAgg._draw_text_glyphs_and_boxes` and `draw_text` of the new
    version against `_glyph_drawer` and `cache_text`, then add it to `VERIFIED_MATPLOTLIB`."""
    import matplotlib
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties, findfont, get_font

    from t5lesson.explorers import render

    version = ".".join(matplotlib.__version__.split(".")[:2])
    assert version in render.VERIFIED_MATPLOTLIB, \
        f"matplotlib {matplotlib.__version__}: the glyph cache was verified on {render.VERIFIED_MATPLOTLIB} only"
    assert render._GLYPH_LEVEL
    renderer = FigureCanvasAgg(Figure()).get_renderer()
    assert callable(getattr(renderer._renderer, "draw_text_image", None))  # what `_Recorder` stands in for
    assert callable(getattr(RendererAgg, "_draw_text_glyphs_and_boxes", None))  # what `_glyph_drawer` replaces
    font = get_font(findfont(FontProperties()))
    assert callable(getattr(font, "_set_transform", None)) and callable(getattr(font, "_render_glyph", None))


def _png_parts(png):
    """(IHDR fields, the IDAT stream) of a PNG, checking every chunk's CRC."""
    import struct
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        assert struct.unpack(">I", png[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + data)
        chunks[kind] = chunks.get(kind, b"") + data
        at += 12 + length
    return struct.unpack(">IIBBBBB", chunks[b"IHDR"]), chunks[b"IDAT"]


@pytest.mark.parametrize("channels", [4, 3])
def test_band_png_reuses_unchanged_bands_and_stays_a_valid_png(channels):
    """Frames that change in a few rows, a whole frame, a new size: each PNG decodes to its pixels,
    its zlib stream ends exactly, and its Adler-32 (checked by zlib) is right."""
    import zlib

    from t5lesson.explorers.render import BandPNG

    rng = np.random.default_rng(0)
    encoder = BandPNG(band_rows=8)
    frame = np.full((61, 45, channels), 255, dtype=np.uint8)
    frames = []
    for _ in range(6):
        frame = frame.copy()
        frame[rng.integers(0, 61), rng.integers(0, 45):] = rng.integers(0, 256, channels)  # one row changes
        frames.append(frame)
    for row in (7, 8):  # the last row of a band (which the next band's first row is filtered against), the first
        frame = frame.copy()
        frame[row] = rng.integers(0, 256, channels)
        frames.append(frame)
    frames += [rng.integers(0, 256, frame.shape, dtype=np.uint8), frame[:30].copy(), frame[:30].copy()]
    for pixels in frames:
        png = encoder.encode(pixels)
        (width, height, depth, colour, *_), stream = _png_parts(png)
        assert (width, height, depth, colour) == (pixels.shape[1], pixels.shape[0], 8, 6 if channels == 4 else 2)
        inflate = zlib.decompressobj()
        raw = inflate.decompress(stream)
        assert inflate.eof and not inflate.unused_data
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, width * channels + 1)
        assert (rows[:, 0] == 2).all()  # the Up filter: each row holds its difference from the row above
        unfiltered = np.cumsum(rows[:, 1:], axis=0, dtype=np.uint8)  # sums modulo 256
        np.testing.assert_array_equal(unfiltered.reshape(pixels.shape), pixels)
        np.testing.assert_array_equal(_decoded(png)[..., :channels], pixels)
    # the last frame repeats the one before: every band is reused, none recompressed
    assert encoder.encode(frames[-1]) == png


def test_opaque_pixels_pasted_with_numpy_equal_agg_drawing_them():
    """`draw_pixels` copies opaque pixels into Agg's buffer; Agg's own draw_image gives the same,
    also for a block that sticks out of the canvas, and for translucent pixels (drawn by Agg)."""
    from t5lesson.explorers.raster import draw_pixels

    rng = np.random.default_rng(1)
    block = rng.integers(0, 256, (30, 40, 4), dtype=np.uint8)
    translucent = block.copy()
    opaque = block.copy()
    opaque[..., 3] = 255
    for pixels, (x, y) in [(opaque, (10, 5)), (opaque, (-7, 70)), (opaque, (180, -12)), (translucent, (20, 20))]:
        frames = []
        for ours in (True, False):
            fig = Figure(figsize=(2, 0.8), dpi=100)
            FigureCanvasAgg(fig)
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            if ours:
                draw_pixels(renderer, x, y, pixels)
            else:
                gc = renderer.new_gc()
                renderer.draw_image(gc, x, y, pixels)
                gc.restore()
            frames.append(np.asarray(renderer.buffer_rgba()).copy())
        np.testing.assert_array_equal(frames[0], frames[1])
