"""The explorer pattern shared by every lesson.

An explorer holds one matplotlib `Figure` (no pyplot, so nothing is auto-displayed and there is
no global state) and a declared list of parameters. `update(**params)` is pure Python: it checks
the values, recomputes, and changes the existing artists in place (`set_data`, `set_array`,
limits). Tests and benchmarks call it without a browser.

In a notebook the explorer shows its controls and the figure rendered to PNG in an
`ipywidgets.Image`. Why PNG-in-a-widget rather than ipympl or `interact`:
- it needs only standard ipywidgets, so it works in JupyterLab, Notebook 7, VS Code and Colab
  without a front-end extension (ipympl needs one, and a matching version);
- `interact` rebuilds a new inline figure on every move, many times slower than changing the
  artists in place and rendering them to PNG (`benchmarks/explorers.py` prints both);
- the same display also carries a static `image/png` of the figure, so a reader without a kernel
  (GitHub, nbviewer, or JupyterLab before the cell runs) sees it in its current state, with a
  line above it saying that it is a picture and how to get the sliders.

The figure follows the course style (`t5lesson.common.figures`): `figsize` is in display inches
(100 CSS px each), the PNG has twice the pixels and is shown at its natural width (never
stretched; smaller in a narrow window). Controls: every slider gets a track of at least
`TRACK_PX` pixels and its full description; a parameter with `stops` gets a `SelectionSlider`
over those values (for ranges spanning orders of magnitude: d, offsets, lengths); a parameter
with one option only gets no control. Sliders send their value on release and on every
arrow-key press (`continuous_update=False`), so dragging never queues a backlog of redraws.
"""
from __future__ import annotations

import base64
import html
import numbers
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import ArgumentError
from ..common.figures import DISPLAY_DPI, PIXEL_RATIO, WIDTH, agg_canvas, compact_png, encode_png, new_figure, style

REGISTRY: dict[str, type] = {}
# The budget of one slider move in the kernel (update and PNG, median wall-clock time), which
# `benchmarks/explorers.py` checks every explorer against.
UPDATE_BUDGET_MS = 30
TRACK_PX = 320  # the least length of a slider's track, in CSS pixels
# Visually hidden, still read by screen readers (the usual "sr-only" rules).
_HIDDEN = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
           "clip:rect(0,0,0,0);white-space:nowrap;border:0")


def register(cls):
    """Class decorator: list an explorer for the benchmark and the browser test."""
    REGISTRY[cls.__name__] = cls
    return cls


def _stop_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Param:
    """One control. Numbers get a slider (min/max/step, or `stops`), `options` toggle buttons, bools a checkbox.

    `stops`: the values a `SelectionSlider` moves through (sorted); min and max default to the
    first and last. Code may still set any value between min and max.
    """

    name: str
    default: Any
    min: float | None = None
    max: float | None = None
    step: float | None = None
    options: tuple | None = None
    label: str | None = None
    stops: tuple | None = None

    def __post_init__(self):
        if self.stops is not None:
            if list(self.stops) != sorted(set(self.stops)) or self.default not in self.stops:
                raise ArgumentError(f"{self.name}: stops must be sorted, distinct and hold the default")
            if self.min is None:
                object.__setattr__(self, "min", self.stops[0])
            if self.max is None:
                object.__setattr__(self, "max", self.stops[-1])

    @property
    def shown(self) -> bool:
        """False for a choice with a single option: nothing to choose, so no control."""
        return self.options is None or len(self.options) > 1

    def check(self, value):
        if self.options is not None:
            if value not in self.options:
                raise ArgumentError(f"{self.name} must be one of {list(self.options)}, got {value!r}")
            return value
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise ArgumentError(f"{self.name} must be True or False, got {value!r}")
            return value
        is_int = isinstance(self.default, int)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if is_int else numbers.Real):
            kind = "an integer" if is_int else "a number"
            raise ArgumentError(f"{self.name} must be {kind}, got {value!r}")
        number = int(value) if isinstance(value, numbers.Integral) else float(value)
        low, high = self.bounds
        if not (low <= number <= high):
            raise ArgumentError(f"{self.name} must be between {low} and {high}, got {value}")
        return number if is_int else float(number)

    @property
    def bounds(self) -> tuple[float, float]:
        """(min, max) of a number's slider (set, or the first and last of its stops)."""
        if self.min is None or self.max is None:
            raise ArgumentError(f"{self.name}: a number needs min and max (or stops)")
        return self.min, self.max

    def widget(self, value=None, label_chars=None):
        """The ipywidgets control, set to `value` (default: the default).

        label_chars: the width of a slider's description, in characters (1ch, about the widest
        character): sliders of one explorer share it, so their tracks line up.
        """
        import ipywidgets as w

        value = self.default if value is None else value
        desc = self.label or self.name
        # "initial": the description at its natural width, never cut off.
        style = {"description_width": "initial"}
        if self.options is not None:
            return w.ToggleButtons(options=list(self.options), value=value, description=desc,
                                   style={**style, "button_width": "auto"},
                                   layout=w.Layout(display="flex", flex_flow="row nowrap", width="auto",
                                                   margin="2px 24px 2px 0"))
        if isinstance(self.default, bool):
            return w.Checkbox(value=value, description=desc, indent=False, style=style)
        # The description gets label_chars x 1ch (at least its own length: a character is at most
        # about 1ch wide, so it is never cut off), the track TRACK_PX, the readout about 90 px.
        chars = max(len(desc), label_chars or 0)
        style = {"description_width": f"{chars}ch"}
        layout = w.Layout(width=f"calc({chars}ch + {TRACK_PX + 100}px)", margin="2px 24px 2px 0")
        if self.stops is not None:
            stops = sorted(set(self.stops) | {value})
            return w.SelectionSlider(options=[(_stop_label(v), v) for v in stops], value=value, description=desc,
                                     continuous_update=False, style=style, layout=layout)
        cls = w.IntSlider if isinstance(self.default, int) else w.FloatSlider
        low, high = self.bounds
        step = self.step if self.step is not None else (1 if cls is w.IntSlider else (high - low) / 100)
        return cls(value=value, min=low, max=high, step=step, description=desc,
                   continuous_update=False, style=style, layout=layout)


class Explorer:
    """Base class. Subclasses set `params` and implement `build(fig)` and `draw(**params)`."""

    params: tuple[Param, ...] = ()
    figsize = (WIDTH, 3.6)  # display inches (100 CSS px each); at most WIDTH wide
    # The figure's alt text: what it shows and what to notice as the controls move (one or two
    # sentences). `alt_text()` adds the state shown and the readout.
    description = ""

    def __init__(self, **params):
        self.values = {p.name: p.default for p in self.params}
        self.values.update(self._checked(params))
        with style():
            self.fig = new_figure(*self.figsize)
            self.build(self.fig)
            self.draw(**self.values)
        self._view = None

    # --- to implement ----------------------------------------------------------------
    def build(self, fig):
        """Create the axes and artists once."""
        raise NotImplementedError

    def draw(self, **values):
        """Change the existing artists to show `values` (all parameters, checked)."""
        raise NotImplementedError

    def readout(self) -> str:
        """One line of text under the figure (the numbers a learner should read off)."""
        return ""

    def alt_text(self, readout=None) -> str:
        """What a screen reader gets for the picture: the description, the state shown, the readout
        (`readout`: the current `readout()`, where the caller has it already)."""
        shown = [p for p in self.params if p.shown]
        state = ", ".join(f"{p.label or p.name} {_stop_label(self.values[p.name])}" for p in shown)
        parts = [self.description.strip() or f"{type(self).__name__} explorer.", f"Shown: {state}." if state else "",
                 self.readout() if readout is None else readout]
        return " ".join(" ".join(p for p in parts if p).split())

    def prepare_view(self):
        """Called once before the notebook view first shows (a cache to warm, say)."""

    # --- the pure API ------------------------------------------------------------------
    def _checked(self, params):
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ArgumentError(f"{type(self).__name__} has no parameter {', '.join(unknown)}; "
                                f"its parameters are {', '.join(known) or 'none'}")
        return {name: known[name].check(value) for name, value in params.items()}

    def update(self, **params):
        """Set some parameters, recompute, update the artists in place. Returns self."""
        self.values.update(self._checked(params))
        with style():  # artists made or restyled in draw (a title, say) follow the course style
            self.draw(**self.values)
        if self._view is not None:
            self._refresh_view(self._view)
        return self

    @property
    def display_width(self) -> int:
        """The width in CSS pixels at which the figure is shown (its PNG has PIXEL_RATIO times more)."""
        return int(round(self.figsize[0] * DISPLAY_DPI))

    def pixels(self) -> np.ndarray:
        """The figure in its current state as an RGBA array [height, width, 4]."""
        canvas = agg_canvas(self.fig)
        with style():
            canvas.draw()
        return np.asarray(canvas.buffer_rgba())

    def to_png(self) -> bytes:
        return encode_png(self.pixels())

    def save(self, path):
        """Write the figure in its current state to a PNG file."""
        with open(path, "wb") as f:
            f.write(self.to_png())

    # --- the notebook view -------------------------------------------------------------
    def widget(self):
        """Controls, the figure as an image, and a readout line, wired to `update`."""
        if self._view is None:
            import ipywidgets as w

            shown = [p for p in self.params if p.shown]
            chars = max((len(p.label or p.name) for p in shown if p.options is None), default=0)
            controls = {p.name: p.widget(self.values[p.name], chars) for p in shown}
            self.prepare_view()
            width = f"{self.display_width}px"
            # Shown at its natural width (the PNG has 2x the pixels), smaller in a narrow window.
            image = w.Image(format="png", layout=w.Layout(width=width, max_width="100%", height="auto"))
            text = w.HTML(layout=w.Layout(max_width=width))
            self._view = (controls, image, text)
            for name, widget in controls.items():
                widget.observe(lambda change, name=name: self.update(**{name: change["new"]}), names="value")
            self._refresh_view(self._view)
            row = w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap", max_width=width))
            self._box = w.VBox([row, image, text], layout=w.Layout(align_items="flex-start"))
            # CSS classes the browser test uses to find each explorer, its figure and readout
            self._box.add_class("t5lesson-explorer")
            self._box.add_class(f"t5lesson-{type(self).__name__}")
            image.add_class("t5lesson-figure")
            text.add_class("t5lesson-readout")
        return self._box

    def _refresh_view(self, view):
        _, image, text = view
        image.value = self.to_png()  # first: the picture is what a learner waits for
        # The readout line, then the picture's alt text for screen readers only (visually hidden):
        # ipywidgets' Image has no alt attribute, and JupyterLab's widget view rejects a tooltip on it.
        line = self.readout()
        readout = f"<code>{html.escape(line)}</code>" if line else ""
        text.value = readout + f'<span class="t5lesson-alt" style="{_HIDDEN}">{html.escape(self.alt_text(line))}</span>'

    def picture_note(self) -> str:
        """The line above the static picture: what it is, and how to get the controls."""
        shown = [p for p in self.params if p.shown]
        state = ", ".join(f"{p.label or p.name} {_stop_label(self.values[p.name])}" for p in shown)
        controls = "slider" if len(shown) == 1 and shown[0].options is None else "controls"
        return f"This is a picture ({state}). Run the cell (Shift+Enter) to get the {controls}."

    def static_png(self) -> bytes:
        """The figure with `picture_note` above it: the image/png copy for readers without a kernel."""
        figure = self.pixels()
        pixels = np.concatenate([_note_pixels(self.picture_note(), figure.shape[1]), figure])
        # In the browser (Pyodide) this copy is only what the notebook saves, and choosing 256 colours
        # costs a third of a second there (measured in Node), while a learner waits for the first slider: plain PNG.
        return encode_png(pixels) if sys.platform == "emscripten" else compact_png(pixels)

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = _bundle_data(self.widget()._repr_mimebundle_(include=include, exclude=exclude))
        # Static copy for readers without a kernel; JupyterLab prefers the live widget view.
        png = self.static_png()
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
        bundle["text/plain"] = f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.values.items())})"
        height = int.from_bytes(png[20:24], "big") // PIXEL_RATIO  # from the PNG header
        return bundle, {"image/png": {"width": self.display_width, "height": height, "alt": self.alt_text()}}


def _bundle_data(shown: object) -> dict[str, object]:
    """The data of a `_repr_mimebundle_` answer: a dict, (data, metadata) as IPython also allows, or None."""
    if isinstance(shown, tuple):
        shown = shown[0]
    return dict(shown) if isinstance(shown, dict) else {}


def _note_pixels(text, width_px) -> np.ndarray:
    """A strip of RGBA pixels `width_px` wide holding `text` (wrapped) on a pale yellow band."""
    import textwrap

    from ..common.figures import DPI, SMALL

    size = SMALL + 1
    per_line = max(20, int(width_px / PIXEL_RATIO / (0.55 * size * DISPLAY_DPI / 72)))  # about 0.55 em a character
    lines = textwrap.wrap(text, per_line)
    with style():
        fig = new_figure(width_px / DPI, 0.1 + 0.19 * len(lines), layout=None)
        fig.patch.set_facecolor("#fff7d6")
        fig.text(0.01, 0.5, "\n".join(lines), va="center", ha="left", fontsize=size, color="0.15", style="italic")
        canvas = agg_canvas(fig)
        canvas.draw()
    strip = np.asarray(canvas.buffer_rgba())[:, :width_px]
    if strip.shape[1] < width_px:  # float rounding: pad with the band's colour
        strip = np.pad(strip, ((0, 0), (0, width_px - strip.shape[1]), (0, 0)), mode="edge")
    return strip
