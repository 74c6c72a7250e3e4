"""The course's one figure style: every figure and explorer at the course dpi, within the page
width, no text under the smallest size; PNGs shown at 1x with twice the pixels."""
import io

import numpy as np
import pytest
from matplotlib.text import Text
from PIL import Image

from t5lesson import ArgumentError
from t5lesson.common.figures import (
    DISPLAY_DPI,
    DPI,
    PIXEL_RATIO,
    SMALL,
    WIDTH,
    alt_text,
    as_image,
    describe,
    display_size,
    encode_png,
    new_figure,
    style,
)
from t5lesson.explorers import load_all


def static_figures():
    from t5lesson.explorers.bias_scale import training_figure
    from t5lesson.explorers.score_spread import saturation_figure
    from t5lesson.lengthgen.figures import accuracy_figure, bias_figure, pairs_figure
    from t5lesson.lengthgen.stored import LESSON_SCHEMES, load_stored
    from t5lesson.lessons.bias_timing import bias_timing_figure
    from t5lesson.lessons.folding import train_recall
    from t5lesson.lessons.position_figures import bias_table_figure, offset_matrix_figure, pair_count_figure
    from t5lesson.lessons.pretrained_figures import bias_curves_figure, toy_tables
    from t5lesson.lessons.toy_heads import HEAD_NAMES, toy_bias_table

    stored = load_stored()
    three = [(name, stored[name]) for name in ("default", "bias_lr_0.3", "steps_1000")]
    traces = [train_recall(v, o, steps=20, eval_every=10) for o in ("adafactor", "adam") for v in ("folded", "scaled")]
    return {
        "saturation": lambda: saturation_figure(dims=(2, 64), n_queries=8, n_keys=8)[0],
        "training": lambda: training_figure(traces),
        "offset matrix": lambda: offset_matrix_figure(8),
        "pair counts": lambda: pair_count_figure(512, 64),
        "bias table": lambda: bias_table_figure(toy_bias_table(True), HEAD_NAMES),
        "lengthgen pairs": lambda: pairs_figure(LESSON_SCHEMES),
        "lengthgen accuracy": lambda: accuracy_figure(stored["default"], "copy-k", schemes=LESSON_SCHEMES),
        "lengthgen accuracy x3": lambda: accuracy_figure(three, "copy-k", schemes=["t5", "per-offset-A"]),
        "lengthgen biases": lambda: bias_figure(stored["default"], "copy-k", LESSON_SCHEMES),
        "pretrained bias curves": lambda: bias_curves_figure(toy_tables(), head_names=list(HEAD_NAMES)),
        "bias timing": lambda: bias_timing_figure([{"length": n, "ours_s": n * 1e-6, "reference_s": n * 3e-6}
                                                   for n in (64, 512, 2048)]),
    }


def check_style(fig, name):
    assert fig.dpi == DPI, name
    width, height = fig.get_size_inches()
    assert width <= WIDTH + 1e-3, f"{name}: {width} in wide, the page holds {WIDTH}"
    with style():
        fig.canvas.draw()  # tick labels exist only once drawn
    small = sorted({(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
                    if t.get_visible() and t.get_text().strip() and t.get_fontsize() < SMALL - 1e-6})
    assert not small, f"{name}: text under {SMALL} pt: {small[:5]}"


def test_static_figures_follow_the_style():
    for name, make in static_figures().items():
        check_style(make(), name)


@pytest.mark.parametrize("name", sorted(load_all()))
def test_explorers_follow_the_style(name):
    explorer = load_all()[name]()
    check_style(explorer.fig, name)
    assert explorer.display_width <= round(WIDTH * DISPLAY_DPI)
    pixels = np.asarray(Image.open(io.BytesIO(explorer.to_png())))
    assert pixels.shape[1] == explorer.display_width * PIXEL_RATIO  # 2x pixels, shown at 1x


def test_as_image_is_shown_at_half_its_pixels():
    with style():
        fig = new_figure(4.0, 2.0)
        fig.add_subplot().plot([0, 1])
    image = as_image(fig)
    pixels = np.asarray(Image.open(io.BytesIO(image.data)))
    assert pixels.shape[:2] == (2 * image.height, 2 * image.width) and (image.width, image.height) == (400, 200)
    assert display_size(fig) == (400, 200)


def test_encode_png_round_trips():
    rng = np.random.default_rng(0)
    for channels in (3, 4):
        pixels = rng.integers(0, 256, size=(7, 5, channels), dtype=np.uint8)
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(encode_png(pixels)))), pixels)
    with pytest.raises(ValueError, match="uint8"):
        encode_png(np.zeros((2, 2, 3)))


def test_a_figure_wider_than_the_page_is_refused():
    with pytest.raises(ArgumentError, match="at most 9.2"):
        new_figure(12, 3)


def test_as_image_carries_the_alt_text_in_the_output_metadata():
    with style():
        fig = new_figure(4.0, 2.0)
        fig.add_subplot().plot([0, 1])
    _, metadata = as_image(fig)._repr_png_()
    assert "alt" not in metadata  # nothing described: nothing invented
    describe(fig, "A rising line.  What to notice:   it rises.")
    _, metadata = as_image(fig)._repr_png_()
    assert metadata["alt"] == "A rising line. What to notice: it rises."
    with pytest.raises(ArgumentError, match="alt text"):
        describe(fig, "  ")


def test_every_figure_builder_writes_alt_text():
    # Where the figure is made: one or two sentences saying what it shows and what to notice.
    texts = {name: alt_text(make()) for name, make in static_figures().items()}
    texts.update({name: cls().alt_text() for name, cls in load_all().items()})
    for name, text in texts.items():
        assert text and 60 <= len(text) <= 700, f"{name}: alt text {text!r}"
        assert ".png" not in text and "_images" not in text, name
