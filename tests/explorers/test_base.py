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
