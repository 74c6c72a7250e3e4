"""The start-here explorer: one slider, two keys, and the softmax weights they get.

It checks that sliders render and move, and previews the course's theme: the bigger the gap
between two scores, the closer the softmax gets to putting all its weight on one key.
"""
from __future__ import annotations

import numpy as np

from ..common.figures import COLORS
from ..scores import softmax
from .base import Param, register
from .render import BlitRender

__all__ = ["SoftmaxOfTwo"]


@register
class SoftmaxOfTwo(BlitRender):
    """Two keys with scores 0 and `gap`: the weights softmax gives them."""

    widest = {"gap": 9.5}  # the longest title, for the one layout pass

    params = (Param("gap", 1.0, 0.0, 10.0, 0.5, label="score gap"),)
    figsize = (5.6, 3.0)
    description = ("Two bars, the softmax weights of key A (score 0) and key B (score = gap). Notice that the "
                   "weights always add up to 1 and that B takes almost all of it once the gap passes about 5.")

    def build(self, fig):
        self.ax = fig.add_subplot()
        self.bars = self.ax.bar(["key A (score 0)", "key B (score = gap)"], [0.5, 0.5],
                                color=[COLORS["black"], COLORS["orange"]])
        self.labels = [self.ax.text(i, 0.5, "", ha="center", va="bottom") for i in range(2)]
        self.ax.set(ylim=(0, 1.15), ylabel="softmax weight")

    def weights(self) -> np.ndarray:
        return softmax(np.array([0.0, self.values["gap"]]))

    def draw(self, gap):
        for bar, label, w in zip(self.bars, self.labels, self.weights(), strict=True):
            bar.set_height(w)
            label.set_position((label.get_position()[0], w + 0.02))
            label.set_text(f"{w:.3f}")
        self.ax.set_title(f"scores 0 and {gap:g}")

    def moving_artists(self):
        return [*self.bars, *self.labels, self.ax.title]

    def readout(self):
        return f"gap {self.values['gap']:g}: key B gets weight {self.weights()[1]:.3f}"
