"""Fast PNGs for explorers: keep what never moves as a bitmap, draw only what moves on top.

Rendering a whole explorer figure on every slider move cost 60-80 ms here, most of it laying
out and rasterising tick labels, axis labels and titles that never change (about a millisecond
per text), against a 50 ms budget. `BlitRender` is the one explorer mixin that avoids it:

- the layout is fixed: if `build` left constrained layout on, it runs once, in the state whose
  labels take the most room (`widest`: parameter values), and is then switched off, so nothing
  shifts later (explorers that place their axes themselves in `build` skip this);
- the figure without its moving artists is kept as a bitmap per set of axes limits (a few,
  least recently used first out: sliders go back and forth), so ticks are drawn again only when
  limits change;
- a PNG is that bitmap plus the artists `moving_artists()` lists, drawn on top in that order,
  which must be the order a full draw would use (list spines last if moving artists cover the
  frame);
- PNGs are written by `encode_png` (zlib level 1, no row filter): one is made on every move, at
  twice the display pixels, so encoding time counts more than a few kilobytes.

A blitted frame equals a from-scratch render of the same state (the tests check this). The
moving artists are marked animated, so `fig.savefig` would leave them out: use `to_png`/`save`.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
from matplotlib.layout_engine import PlaceHolderLayoutEngine

from ..lessons.figures import style

__all__ = ["BlitRender"]


class BlitRender:
    """Explorer mixin, listed before `Explorer`: cached background bitmaps, moving artists drawn on top."""

    widest: dict = {}  # parameter values whose labels take the most room (for the one layout pass)
    background_cache_size = 8

    def __init__(self, **params):
        super().__init__(**params)
        engine = self.fig.get_layout_engine()
        if engine is not None and not isinstance(engine, PlaceHolderLayoutEngine):
            with style():
                self._lay_out_once()
        for artist in self.moving_artists():
            artist.set_animated(True)  # full draws (the backgrounds) now leave them out
        self._backgrounds = OrderedDict()

    def moving_artists(self) -> list:
        """The artists `draw` changes, in drawing order; everything else is background."""
        raise NotImplementedError

    def prepare_view(self):
        """Before the view first shows: draw the background of every other choice of each toggle,
        so the learner's first click on it is as quick as any other move."""
        current = dict(self.values)
        for p in self.params:
            if p.options is None or not p.shown:
                continue
            for option in p.options:
                if option != current[p.name]:
                    self.values = {**current, p.name: option}  # the background's key reads them
                    with style():
                        self.draw(**self.values)
                    self.pixels()
        self.values = current
        with style():
            self.draw(**current)

    def _lay_out_once(self):
        """Run the layout engine in the widest state, then switch it off and show the real state."""
        self.draw(**{**self.values, **self.widest})
        self.fig.draw_without_rendering()
        self.fig.set_layout_engine("none")
        self.draw(**self.values)

    def _background_key(self):
        return tuple((ax.get_xlim(), ax.get_ylim()) for ax in self.fig.axes)

    def pixels(self) -> np.ndarray:
        canvas = self.fig.canvas
        key = self._background_key()
        if key in self._backgrounds:
            self._backgrounds.move_to_end(key)
            canvas.restore_region(self._backgrounds[key])
        else:
            with style():
                canvas.draw()
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
            if len(self._backgrounds) > self.background_cache_size:
                self._backgrounds.popitem(last=False)
        for artist in self.moving_artists():
            if artist.get_visible():
                self.fig.draw_artist(artist)
        return np.asarray(canvas.buffer_rgba())
