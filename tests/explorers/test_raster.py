"""Prepared pixels for explorers: glyph atlas text and frozen static artists."""
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from t5lesson import ArgumentError
from t5lesson.explorers.raster import GlyphAtlas, freeze


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
    """Glyphs pasted again from the cache give the pixels of a fresh draw: in a new colour, at a new
    place, in a new size, for a new string (each a cache miss or hit that must not mix them up)."""
    from t5lesson.explorers.render import cache_text

    def figure():
        fig = Figure(figsize=(3, 1), dpi=100)
        FigureCanvasAgg(fig)
        return fig, fig.text(0.1, 0.4, "", fontsize=11)

    cached, plain = figure(), figure()
    states = [("d = 64, head 2", "black", 0.1, 11), ("d = 64, head 2", "tab:red", 0.1, 11),
              ("d = 64, head 2", "black", 0.33, 11), ("d = 64, head 2", "black", 0.1, 14),
              ("d = 128, head 2\nsecond line", "tab:blue", 0.1, 11), ("d = 64, head 2", "black", 0.1, 11)]
    for text, colour, x, size in states:
        frames = []
        for (fig, label), cache in ((cached, True), (plain, False)):
            label.set(text=text, color=colour, x=x, fontsize=size)
            if cache:
                cache_text(fig.canvas.get_renderer())
            fig.canvas.draw()
            frames.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        assert frames[0][..., :3].min() < 128  # some ink was drawn
        np.testing.assert_array_equal(frames[0], frames[1])
    assert "draw_text" in vars(cached[0].canvas.get_renderer())
    assert "draw_text" not in vars(plain[0].canvas.get_renderer())
