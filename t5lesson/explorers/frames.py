"""An explorer's frames: its own figure at every setting of a small grid, for a page with no kernel.

The course website (book/frames.py) shows each explorer as these frames, swapped by a page's own
controls. Nothing here draws: every frame is `Explorer.update` then `Explorer.pixels`, the steps a
slider move takes in JupyterLab, so a frame is the picture the notebook shows at those values.
Only the encoding differs: `compact_png` (256 colours, as the notebooks store their pictures),
about three times smaller than a slider move's lossless PNG and not visibly different.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..common.figures import PIXEL_RATIO, compact_png
from .base import Explorer, _stop_label


@dataclass(frozen=True)
class Frame:
    """One setting of the live controls, and what the explorer shows there."""

    values: dict  # the live controls' values (the other parameters keep the explorer's own)
    png: bytes
    alt: str  # `Explorer.alt_text` at this setting: the figure's description, the state, the readout
    readout: str


def control_values(explorer: Explorer, controls: dict) -> dict:
    """`controls` (parameter name -> the values a page offers), checked against the explorer's
    parameters, with each one's current value added where missing (the page opens on it), sorted
    as the parameter orders them (a choice keeps its options' order)."""
    params = {p.name: p for p in explorer.params}
    checked = {}
    for name, values in controls.items():
        if name not in params or not params[name].shown:
            raise ValueError(f"{type(explorer).__name__} has no control {name!r}")
        param = params[name]
        wanted = {param.check(v) for v in values} | {explorer.values[name]}
        order = list(param.options) if param.options is not None else sorted(wanted)
        checked[name] = [v for v in order if v in wanted]
    return checked


def grid(controls: dict) -> list[dict]:
    """Every setting of the controls, the last control varying fastest (a page's frame index)."""
    names = list(controls)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*controls.values())]


def frames(explorer: Explorer, controls: dict) -> list[Frame]:
    """The explorer's frame at every setting of `control_values(explorer, controls)`, in `grid` order.

    The explorer is left at the values it had.
    """
    start = dict(explorer.values)
    made = []
    try:
        for setting in grid(control_values(explorer, controls)):
            explorer.update(**setting)
            readout = explorer.readout()
            made.append(Frame(setting, compact_png(explorer.pixels()), explorer.alt_text(readout), readout))
    finally:
        explorer.update(**start)
    return made


def label(explorer: Explorer, name: str) -> str:
    """A parameter's label, as its control in the notebook shows it."""
    param = next(p for p in explorer.params if p.name == name)
    return param.label or param.name


def value_label(value) -> str:
    """A value as the notebook's slider shows it (64, 0.5, "decoder")."""
    return _stop_label(value)


def display_size(png: bytes) -> tuple[int, int]:
    """(width, height) in CSS pixels at which a frame shows: its pixels over PIXEL_RATIO (from the PNG header)."""
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return width // PIXEL_RATIO, height // PIXEL_RATIO
