"""The explorer pattern: pure update, in-place artists, checked parameters, a widget view."""
import numpy as np
import pytest

from t5lesson import ArgumentError
from t5lesson.explorers import Explorer, Param


class Sine(Explorer):
    params = (Param("freq", 2, 1, 10), Param("phase", 0.0, 0.0, 3.0), Param("kind", "sin", options=("sin", "cos")),
              Param("grid", True))

    def build(self, fig):
        self.ax = fig.add_subplot()
        self.x = np.linspace(0, 1, 200)
        (self.line,) = self.ax.plot(self.x, self.x)
        self.ax.set(xlabel="x", ylabel="y", ylim=(-1.1, 1.1))

    def draw(self, freq, phase, kind, grid):
        f = np.sin if kind == "sin" else np.cos
        self.line.set_ydata(f(2 * np.pi * freq * self.x + phase))
        self.ax.grid(grid)

    def readout(self):
        return f"freq = {self.values['freq']}"


def test_update_changes_artists_in_place():
    e = Sine()
    line, before = e.line, e.to_png()
    e.update(freq=5, kind="cos")
    assert e.line is line and e.values["freq"] == 5
    assert e.to_png() != before and e.to_png().startswith(b"\x89PNG")


@pytest.mark.parametrize("params, message", [
    (dict(frequency=3), "has no parameter frequency; its parameters are freq, phase, kind, grid"),
    (dict(freq=11), "freq must be between 1 and 10, got 11"),
    (dict(freq=2.5), "freq must be an integer"),
    (dict(kind="tan"), r"kind must be one of \['sin', 'cos'\]"),
    (dict(grid=1), "grid must be True or False"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ArgumentError, match=message):
        Sine().update(**params)


def test_widget_view_follows_controls_and_carries_static_png():
    e = Sine(freq=3)
    box = e.widget()
    controls, image, text = e._view
    assert controls["freq"].value == 3 and not controls["freq"].continuous_update
    first = image.value
    controls["freq"].value = 7  # what a slider move does
    assert e.values["freq"] == 7 and image.value != first and "freq = 7" in text.value
    bundle, metadata = e._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "image/png" in bundle
    assert bundle["text/plain"] == "Sine(freq=7, phase=0.0, kind='sin', grid=True)"
    # The static copy is shown at 1x: half its pixels, the figure's display width.
    assert metadata["image/png"]["width"] == e.display_width == 920
    assert image.layout.width == "920px" and image.layout.max_width == "100%"
    assert box is e.widget()


class Choices(Explorer):
    params = (Param("d", 64, 2, 1024, 1, label="d (entries per vector)", stops=(2, 4, 16, 64, 256, 1024)),
              Param("u", 1.0, -2.0, 2.0, 0.5, label="u"),
              Param("mode", "decoder", options=("decoder",), label="attention"))

    def build(self, fig):
        self.ax = fig.add_subplot()

    def draw(self, d, u, mode):
        self.ax.set_title(f"{d} {u} {mode}")


def test_controls_a_learner_can_use():
    import ipywidgets as w

    from t5lesson.explorers.base import TRACK_PX

    e = Choices()
    e.widget()
    controls, image, _ = e._view
    assert set(controls) == {"d", "u"}  # a choice with one option gets no control
    d, u = controls["d"], controls["u"]
    assert isinstance(d, w.SelectionSlider) and [v for _, v in d.options] == [2, 4, 16, 64, 256, 1024]
    assert d.value == 64 and d.description == "d (entries per vector)"
    # one description width for all sliders (tracks line up), and a TRACK_PX track after it
    assert d.style.description_width == u.style.description_width == "22ch"
    assert d.layout.width == u.layout.width == f"calc(22ch + {TRACK_PX + 100}px)"
    d.value = 256
    assert e.values["d"] == 256
    assert Choices(d=100).update(d=3).values["d"] == 3  # code may set any value in the range
    e2 = Choices(d=100)
    e2.widget()
    assert 100 in [v for _, v in e2._view[0]["d"].options]  # and the slider then shows it
    with pytest.raises(ArgumentError, match="stops must be sorted"):
        Param("d", 3, stops=(2, 4))


def test_static_picture_says_what_it_is():
    e = Choices()
    assert e.picture_note() == ("This is a picture (d (entries per vector) 64, u 1). "
                                "Run the cell (Shift+Enter) to get the controls.")
    assert Choices().static_png() != e.to_png()


def test_the_update_budget_is_the_one_the_readme_and_the_benchmark_state():
    """One number: the package's constant, read by the benchmark, stated once in the README."""
    import re
    from pathlib import Path

    from t5lesson.explorers.base import UPDATE_BUDGET_MS

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    assert f"target under {UPDATE_BUDGET_MS} ms, `UPDATE_BUDGET_MS`" in readme
    assert len(re.findall(r"target under \d+ ms", readme)) == 1
    benchmark = (root / "benchmarks" / "explorers.py").read_text()
    assert "UPDATE_BUDGET_MS" in benchmark and not re.search(r"\b\d+ ms\b|0\.0\d\b", benchmark)
