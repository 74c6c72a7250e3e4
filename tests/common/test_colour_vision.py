"""Colour-blind safety of the course figures: series stay apart under deuteranopia and protanopia.

Simulation: Machado, Oliveira & Fernandes (2009), "A physiologically-based model for simulation of
color vision deficiency", IEEE TVCG 15(6), the severity-1.0 matrices for deuteranopia and
protanopia (their Table 1, as published on the authors' page), applied to linear sRGB.

Distance: CIE76 ΔE, the Euclidean distance in CIELAB (D65). We use CIE76 rather than CIEDE2000
because it is a plain formula anyone can check by hand, and at the size of distances asked for
here the two rank colour pairs alike. Threshold: ΔE76 >= 15. About 2.3 is a just-noticeable
difference for large flat patches; a 1.5 px line or a 5 px marker needs several times that, and
15 is the usual floor for "clearly different categories" in palette design. The Okabe-Ito
palette meets it under both deficiencies (its closest pair, orange and yellow, is about 17 apart
for a deuteranope); matplotlib's default tab10 does not (about 7 and 5), which the test checks
too, so it would catch a return to the default colours.

The series of a figure are its legend entries (each axes' legend and the figure's legends). Two
entries of different colours must stay ΔE76 >= 15 apart in both simulations (shaded bands may
instead differ by hatching); two entries of one colour (the same thing drawn two ways, say bars
and the crosses that mark their empty buckets) must differ in kind, line style or marker. Lines in
one legend must also differ in line style or marker, so no series is told apart by colour alone. Each
figure is also written, as rendered and as both simulations see it, to artifacts/colour_vision/.
"""
import importlib.util
import io
import itertools
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from PIL import Image

from t5lesson.common.figures import SERIES, figure_png, style
from t5lesson.explorers import load_all

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "colour_vision"
MIN_DELTA_E = 15.0
MACHADO_2009 = {  # severity 1.0, linear RGB -> linear RGB
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
}
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]


def _linear(srgb):
    srgb = np.asarray(srgb, dtype=float)
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _srgb(linear):
    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def simulate(srgb, deficiency):
    """sRGB colours [..., 3] in 0..1 as seen with the deficiency (Machado et al. 2009, severity 1)."""
    return _srgb(_linear(srgb) @ MACHADO_2009[deficiency].T)


def lab(srgb):
    """CIELAB (D65) of sRGB colours [..., 3] in 0..1."""
    xyz = _linear(srgb) @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                                    [0.0193, 0.1192, 0.9505]]).T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def delta_e76(a, b):
    return float(np.linalg.norm(lab(a) - lab(b)))


def _on_white(colour):
    r, g, b, a = to_rgba(colour)
    return np.array([r, g, b]) * a + (1 - a)


def legends(fig):
    """[(where, [(label, rgb on white, line style or None, marker or None, hatch or None)])] per legend."""
    found = [(f"axes {i}", ax.get_legend()) for i, ax in enumerate(fig.axes) if ax.get_legend()]
    found += [(f"figure legend {i}", legend) for i, legend in enumerate(fig.legends)]
    out = []
    for where, legend in found:
        entries = []
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if isinstance(handle, Line2D):
                # get_linestyle() says "--" for every custom dash pattern: compare the pattern itself.
                pattern = handle._unscaled_dash_pattern
                solid = handle.get_linestyle() not in ("None", "", " ")
                line = (float(pattern[0]), tuple(pattern[1] or ())) if solid else None
                marker = handle.get_marker() if handle.get_marker() not in ("None", "", " ", None) else None
                entries.append((text.get_text(), _on_white(handle.get_color()), line, marker, None))
            else:  # a patch: a bar, a shaded band
                entries.append((text.get_text(), _on_white(handle.get_facecolor()), None, None,
                                handle.get_hatch() or None))
        out.append((where, entries))
    return out


def _static_figures():
    spec = importlib.util.spec_from_file_location("figure_tests", Path(__file__).with_name("test_figures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.static_figures()


def _figures():
    makers = dict(_static_figures())
    makers.update({f"explorer {name}": cls for name, cls in load_all().items()})  # an Explorer: .fig, .to_png()
    return makers


FIGURES = _figures()


def test_the_palette_stays_apart_and_the_default_would_not():
    for deficiency in MACHADO_2009:
        seen = [simulate(_on_white(c), deficiency) for c in SERIES]
        closest = min(delta_e76(a, b) for a, b in itertools.combinations(seen, 2))
        assert closest >= MIN_DELTA_E, f"{deficiency}: two course colours only {closest:.1f} apart"
        tab10 = [simulate(_on_white(c), deficiency) for c in TAB10]
        assert min(delta_e76(a, b) for a, b in itertools.combinations(tab10, 2)) < MIN_DELTA_E


def test_simulation_matches_known_values():
    # Pure red and green look alike to a deuteranope: their distance collapses; white stays white.
    assert delta_e76(np.array([1.0, 0, 0]), np.array([0, 0.5, 0])) > 50
    seen = [simulate(np.array(c), "deuteranopia") for c in ([1.0, 0, 0], [0, 0.5, 0])]
    assert delta_e76(*seen) < 25
    assert np.allclose(simulate(np.ones(3), "protanopia"), 1.0, atol=0.01)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_series_stay_apart_for_colour_blind_readers(name):
    made = FIGURES[name]()
    fig = getattr(made, "fig", made)
    # An explorer draws its moving artists only into its own PNG (they are animated).
    png = made.to_png() if hasattr(made, "to_png") else figure_png(fig)
    with style():
        fig.canvas.draw()
    problems = []
    for where, entries in legends(fig):
        for (la, ca, lsa, ma, ha), (lb, cb, lsb, mb, hb) in itertools.combinations(entries, 2):
            if delta_e76(ca, cb) < 1.0:  # one colour on purpose: then another cue must tell them apart
                if (lsa, ma, ha) == (lsb, mb, hb):
                    problems.append(f"{where}: {la!r} and {lb!r} look the same")
                continue
            for deficiency in MACHADO_2009:
                d = delta_e76(simulate(ca, deficiency), simulate(cb, deficiency))
                if d < MIN_DELTA_E and ha == hb:
                    problems.append(f"{where}: {la!r} and {lb!r} only ΔE76 {d:.1f} apart for {deficiency}")
            if lsa is not None and lsb is not None and (lsa, ma) == (lsb, mb):
                problems.append(f"{where}: {la!r} and {lb!r} differ by colour only ({lsa}, marker {ma})")
    assert not problems, "\n".join(problems)
    write_simulations(png, name)


def write_simulations(png, name):
    """The rendered figure and how each deficiency sees it, one above the other, into artifacts/colour_vision/."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float) / 255
    rows = [pixels] + [simulate(pixels, d) for d in MACHADO_2009]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    Image.fromarray((np.concatenate(rows) * 255).round().astype(np.uint8)).save(
        ARTIFACTS / f"{name.replace(' ', '_')}.png")
