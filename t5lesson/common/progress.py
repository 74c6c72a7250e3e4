"""A sign of life for work that takes more than a couple of seconds: training runs, mostly.
Hand-written, not tqdm: its one output is fixed text that nbval compares in the stored notebooks.

    with Progress(total=1500, description="training 5 models") as bar:
        for step in ...:
            bar.update()

    for item in track(items, "training"):   # the same around an iterable
        ...

Where it shows:
- in a notebook kernel (IPython with ipywidgets): an `ipywidgets` progress bar with the steps
  done and the time so far. All of it lives in widget state, which nbval never compares, so no
  timing ever reaches stdout or stderr. The one output it makes is a display whose plain-text
  form is fixed (`"<description> (a progress bar while the cell runs)"`), the same on every
  run, for readers without widgets;
- on a terminal: one line on stderr, rewritten in place (`\\r`), for example the benchmarks;
- anywhere else (a pipe, a log, pytest): nothing.
`T5LESSON_PROGRESS=0` turns it off everywhere. Updates are cheap: the bar is redrawn at most
every `INTERVAL_S`, however often `update` is called.
"""
from __future__ import annotations

import os
import sys
import time

from .._validate import ArgumentError, check_int

__all__ = ["Progress", "track", "INTERVAL_S"]

INTERVAL_S = 0.25
ENV = "T5LESSON_PROGRESS"


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _elapsed(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class _Widget:
    """The notebook view: description, bar, and steps/time, in one row."""

    def __init__(self, total, description):
        import ipywidgets as w
        from IPython.display import display

        self.bar = w.IntProgress(value=0, min=0, max=max(total, 1), layout=w.Layout(width="320px"))
        self.text = w.HTML(f"0 / {total}")
        box = w.HBox([w.HTML(f"<b>{description}</b>&nbsp;"), self.bar, w.HTML("&nbsp;"), self.text])
        box.add_class("t5lesson-progress")
        display(_FixedText(box, f"{description} (a progress bar while the cell runs)"))

    def show(self, done, total, seconds, finished):
        self.bar.value = done
        self.text.value = f"{done} / {total} &nbsp; {_elapsed(seconds)}" + (" &nbsp; done" if finished else "")
        if finished:
            self.bar.bar_style = "success"


class _FixedText:
    """A widget display whose text/plain is fixed text instead of the widget's changing repr."""

    def __init__(self, widget, text):
        self.widget, self.text = widget, text

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
        bundle["text/plain"] = self.text
        return bundle


class _Terminal:
    """The command-line view: one line on stderr, redrawn in place."""

    def __init__(self, total, description):
        self.description = description

    def show(self, done, total, seconds, finished):
        filled = int(24 * done / max(total, 1))
        line = f"\r{self.description} [{'#' * filled}{'.' * (24 - filled)}] {done}/{total} {_elapsed(seconds)}"
        sys.stderr.write(line + ("\n" if finished else ""))
        sys.stderr.flush()


class Progress:
    """Progress over `total` steps, shown where it can be (see the module doc); a context manager."""

    def __init__(self, total, description):
        self.total = check_int("total", total, minimum=0)
        if not isinstance(description, str) or not description:
            raise ArgumentError(f"description must be a non-empty string, got {description!r}")
        self.done = 0
        self._start = time.perf_counter()
        self._shown_at = -INTERVAL_S
        self._view = None
        if os.environ.get(ENV, "1").strip() != "0" and self.total > 0:
            if _in_kernel():
                self._view = _Widget(self.total, description)
            elif sys.stderr is not None and sys.stderr.isatty():
                self._view = _Terminal(self.total, description)

    def update(self, steps=1):
        """Count `steps` more steps done."""
        self.done = min(self.total, self.done + steps)
        now = time.perf_counter()
        if self._view is not None and now - self._shown_at >= INTERVAL_S:
            self._shown_at = now
            self._view.show(self.done, self.total, now - self._start, False)

    def close(self):
        """Show the final state (called on leaving the `with` block)."""
        if self._view is not None:
            self._view.show(self.done, self.total, time.perf_counter() - self._start, True)
            self._view = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def track(iterable, description, total=None):
    """Yield the items of `iterable`, counting one step each (total: len(iterable) by default)."""
    items = list(iterable) if total is None and not hasattr(iterable, "__len__") else iterable
    with Progress(len(items) if total is None else total, description) as bar:
        for item in items:
            yield item
            bar.update()
