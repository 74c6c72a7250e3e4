"""Lessons 1-2 explorers: in-place updates, exact blitted frames, checked parameters, honest numbers."""
import io
import math

import numpy as np
import pytest
from PIL import Image

from t5lesson import ArgumentError, max_weight, saturation_curve, softmax, softmax_entropy, softmax_jacobian_norm
from t5lesson.common.figures import alt_text
from t5lesson.explorers import load_all
from t5lesson.explorers.bias_scale import BiasScale, training_figure
from t5lesson.explorers.score_spread import AttentionRow, DotProductSpread, saturation_figure
from t5lesson.lessons.dot_products import prefix_dot_products
from t5lesson.lessons.folding import train_recall

EXPLORERS = [DotProductSpread, AttentionRow, BiasScale]
MOVES = {DotProductSpread: [dict(d=2), dict(d=1024), dict(d=17)],
         AttentionRow: [dict(d=3), dict(query=19), dict(d=700)],
         BiasScale: [dict(d=2), dict(u=-6.0), dict(d=1000, u=2.5)]}


def pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)))


def test_registered_with_t5_defaults():
    registry = load_all()
    for cls in EXPLORERS:
        assert registry[cls.__name__] is cls
        assert cls().values["d"] == 64  # T5's d_kv


@pytest.mark.parametrize("cls", EXPLORERS)
def test_update_changes_the_png_in_place(cls):
    e = cls()
    artists, before = list(e.moving_artists()), e.to_png()
    for move in MOVES[cls]:
        e.update(**move)
        after = e.to_png()
        assert after != before and after.startswith(b"\x89PNG")
        before = after
    assert all(a is b for a, b in zip(artists, e.moving_artists(), strict=True)) and len(e.fig.axes) == 2


@pytest.mark.parametrize("cls", EXPLORERS)
def test_every_slider_step_changes_the_figure(cls):
    """A browser only sees a move if the PNG changes; at large d the data alone may not."""
    e = cls()
    frames = [e.update(d=d).to_png() for d in (1000, 1001, 1002, 1001)]
    assert all(a != b for a, b in zip(frames, frames[1:], strict=False))


@pytest.mark.parametrize("cls", EXPLORERS)
def test_a_blitted_frame_equals_a_fresh_render(cls):
    e = cls()
    e.to_png()
    for move in MOVES[cls]:
        e.update(**move).to_png()
    assert np.array_equal(pixels(e.to_png()), pixels(cls(**e.values).to_png()))


@pytest.mark.parametrize("cls, params, message", [
    (DotProductSpread, dict(d=1), "d must be between 2 and 1024, got 1"),
    (DotProductSpread, dict(d=1025), "d must be between 2 and 1024"),
    (DotProductSpread, dict(d=64.0), "d must be an integer"),
    (AttentionRow, dict(query=20), "query must be between 0 and 19"),
    (AttentionRow, dict(keys=3), "has no parameter keys"),
    (BiasScale, dict(u=6.5), "u must be between -6.0 and 6.0"),
    (BiasScale, dict(u="big"), "u must be a number"),
])
def test_bad_parameters(cls, params, message):
    with pytest.raises(ArgumentError, match=message):
        cls().update(**params)


def test_dot_product_spread_shows_the_sampled_histogram_and_variance():
    e = DotProductSpread(d=100)
    raw = prefix_dot_products(e.n_pairs, 1024, seed=0)[:, 99]
    counts, _ = np.histogram(raw, e.edges_raw, density=True)
    np.testing.assert_array_equal(e.hist_raw.get_data().values, counts)
    assert e.stats(100)[0] == pytest.approx(float(raw.astype(np.float64).var()))
    assert e.stats(100)[0] == pytest.approx(100, rel=0.1) and e.stats(100)[1] == pytest.approx(1, rel=0.1)
    assert "variance" in e.note_raw.get_text() and "(theory 100)" in e.note_raw.get_text()
    assert "off the top" in e.update(d=4).note_raw.get_text()
    assert e.readout().startswith("d = 4: std of q·k = ")


def test_attention_row_bars_are_t5lesson_softmax_weights():
    e = AttentionRow(d=256, query=3)
    raw = prefix_dot_products(20, 1024, n_keys=16, seed=1)[3, :, 255].astype(np.float64)
    np.testing.assert_allclose([b.get_height() for b in e.bars_raw], softmax(raw))
    np.testing.assert_allclose([b.get_height() for b in e.bars_scaled], softmax(raw / 16))
    w = softmax(raw)
    text = e.readout()
    assert f"entropy {float(softmax_entropy(w)):.2f} nats, max weight {float(max_weight(w)):.2f}" in text
    assert f"‖J‖ {float(softmax_jacobian_norm(w)):.3f}" in text


def test_bias_scale_multiplies_the_odds_by_e_to_the_u_only_for_t5():
    e = BiasScale(d=256, u=3.0)
    w_t5, w_in = e.weights(256, 3.0)
    plain = softmax(e.content)
    odds = lambda w: w[7] / w[0]  # noqa: E731  (any other key gives the same ratio)
    assert odds(w_t5) / odds(plain) == pytest.approx(math.exp(3.0))
    assert odds(w_in) / odds(plain) == pytest.approx(math.exp(3.0 / 16))
    np.testing.assert_allclose([b.get_height() for b in e.bars_t5], w_t5)
    assert e.line_t5.get_ydata() == pytest.approx(np.full(len(e.dims), math.exp(3.0)))
    assert "×20.1 (T5) vs ×1.21" in e.readout()


def test_saturation_figure_plots_saturation_curve():
    fig, curves = saturation_figure(dims=(4, 64), n_queries=32, n_keys=8)
    expected = saturation_curve((4, 64), 1.0, 32, 8, 0)
    np.testing.assert_allclose(curves["unscaled"].max_weight, expected.max_weight)
    assert len(fig.axes) == 4
    assert fig.axes[1].lines[0].get_ydata() == pytest.approx(expected.max_weight)
    assert fig.axes[3].lines[0].get_ydata() == pytest.approx(expected.query_gradient_norm)
    assert "T5" not in " ".join(line.get_label() for ax in fig.axes for line in ax.lines)
    assert "Jacobian with respect to the query" in alt_text(fig)


def test_training_figure():
    traces = [train_recall(v, o, steps=20, eval_every=10) for o in ("adafactor", "adam") for v in ("folded", "scaled")]
    fig = training_figure(traces)
    assert len(fig.axes) == 6 and len(fig.axes[0].lines) == 2
    accuracy = fig.axes[2].lines[0].get_ydata()  # the third panel of a row: accuracy, as the lesson quotes
    np.testing.assert_array_equal(accuracy, traces[0].accuracy)
    with pytest.raises(ArgumentError, match="at least one TrainingTrace"):
        training_figure([])


def test_attention_row_shows_the_mean_over_its_rows_beside_the_one_row():
    """One row is one draw: at query 0 the row's max weight falls from d = 4 to 64 while the mean rises."""
    e = AttentionRow(d=4, query=0)
    table = prefix_dot_products(20, 1024, n_keys=16, seed=1).astype(np.float64)
    for d in (4, 64, 1024):
        e.update(d=d)
        raw = table[:, :, d - 1]
        mean_raw, mean_scaled = max_weight(softmax(raw)).mean(), max_weight(softmax(raw / math.sqrt(d))).mean()
        assert e.mean_raw.get_ydata()[0] == pytest.approx(mean_raw)
        assert e.mean_scaled.get_ydata()[0] == pytest.approx(mean_scaled)
        assert f"mean of all 20 rows: unscaled {mean_raw:.2f}, standard {mean_scaled:.2f}" in e.readout()
    means = [AttentionRow(d=d).mean_max_weights(d)[0] for d in (4, 64, 1024)]
    rows = [float(max_weight(softmax(table[0, :, d - 1]))) for d in (4, 64, 1024)]
    assert means[0] < means[1] < means[2] and rows[1] < rows[0]
