"""The explorer pattern shared by every lesson.

An explorer holds one matplotlib `Figure` (no pyplot, so nothing is auto-displayed and there is
no global state) and a declared list of parameters. `update(**params)` is pure Python: it checks
the values, recomputes, and changes the existing artists in place (`set_data`, `set_array`,
limits). Tests and benchmarks call it without a browser.

In a notebook the explorer shows its sliders and the figure rendered to PNG in an
`ipywidgets.Image`. Why PNG-in-a-widget rather than ipympl or `interact`:
- it needs only standard ipywidgets, so it works in JupyterLab, Notebook 7, VS Code and Colab
  without a front-end extension (ipympl needs one, and a matching version);
- `interact` rebuilds a new inline figure on every move (measured here: about 124 ms an update
  against about 51 ms for in-place artists rendered to PNG);
- the same display also carries a static `image/png` of the figure, so a reader without a kernel
  (GitHub, nbviewer) sees it in its current state.
Sliders send their value on release and on every arrow-key press (`continuous_update=False`), so
dragging never queues up a backlog of redraws in the kernel.
"""
from __future__ import annotations

import base64
import io
import numbers
from dataclasses import dataclass
from typing import Any

from .._validate import ArgumentError
from ..lessons.figures import new_figure

REGISTRY: dict[str, type] = {}


def register(cls):
    """Class decorator: list an explorer for the benchmark and the browser test."""
    REGISTRY[cls.__name__] = cls
    return cls


@dataclass(frozen=True)
class Param:
    """One control. Numbers get a slider (min/max/step), `options` a toggle, bools a checkbox."""

    name: str
    default: Any
    min: float | None = None
    max: float | None = None
    step: float | None = None
    options: tuple | None = None
    label: str | None = None

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
        if not (self.min <= value <= self.max):
            raise ArgumentError(f"{self.name} must be between {self.min} and {self.max}, got {value}")
        return int(value) if is_int else float(value)

    def widget(self):
        import ipywidgets as w

        desc = self.label or self.name
        style = {"description_width": "initial"}
        if self.options is not None:
            return w.ToggleButtons(options=list(self.options), value=self.default, description=desc, style=style)
        if isinstance(self.default, bool):
            return w.Checkbox(value=self.default, description=desc, style=style)
        cls = w.IntSlider if isinstance(self.default, int) else w.FloatSlider
        step = self.step if self.step is not None else (1 if cls is w.IntSlider else (self.max - self.min) / 100)
        return cls(value=self.default, min=self.min, max=self.max, step=step, description=desc,
                   continuous_update=False, style=style)


class Explorer:
    """Base class. Subclasses set `params` and implement `build(fig)` and `draw(**params)`."""

    params: tuple[Param, ...] = ()
    figsize = (8.0, 3.6)
    dpi = 80

    def __init__(self, **params):
        self.fig = new_figure(*self.figsize, dpi=self.dpi)
        self.values = {p.name: p.default for p in self.params}
        self.values.update(self._checked(params))
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
        self.draw(**self.values)
        if self._view is not None:
            self._refresh_view()
        return self

    def to_png(self) -> bytes:
        buffer = io.BytesIO()
        self.fig.canvas.print_png(buffer)
        return buffer.getvalue()

    def save(self, path):
        """Write the figure in its current state to a PNG file."""
        with open(path, "wb") as f:
            f.write(self.to_png())

    # --- the notebook view -------------------------------------------------------------
    def widget(self):
        """Controls, the figure as an image, and a readout line, wired to `update`."""
        if self._view is None:
            import ipywidgets as w

            controls = {}
            for p in self.params:
                controls[p.name] = p.widget()
                controls[p.name].value = self.values[p.name]
            image = w.Image(format="png")
            text = w.HTML()
            self._view = (controls, image, text)
            for name, widget in controls.items():
                widget.observe(lambda change, name=name: self.update(**{name: change["new"]}), names="value")
            self._refresh_view()
            self._box = w.VBox([w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")),
                                image, text])
            # CSS classes the browser test uses to find each explorer, its figure and readout
            self._box.add_class("t5lesson-explorer")
            self._box.add_class(f"t5lesson-{type(self).__name__}")
            image.add_class("t5lesson-figure")
            text.add_class("t5lesson-readout")
        return self._box

    def _refresh_view(self):
        _, image, text = self._view
        image.value = self.to_png()
        text.value = f"<code>{self.readout()}</code>" if self.readout() else ""

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget()._repr_mimebundle_(include=include, exclude=exclude) or {}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        # Static copy for readers without a kernel; JupyterLab prefers the live widget view.
        bundle["image/png"] = base64.b64encode(self.to_png()).decode("ascii")
        bundle["text/plain"] = f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.values.items())})"
        return bundle
