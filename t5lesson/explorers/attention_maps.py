"""Lesson 7: the attention maps of one decoded example, one layer and one head at a time.

Three panels for the chosen layer and head of a whole encoder-decoder:
1. encoder self-attention (input tokens attend to input tokens, both directions);
2. decoder self-attention (answer tokens attend to earlier answer tokens: causal, grey above);
3. cross-attention (answer tokens attend to input tokens; no position bias here at all).

`maps` holds the weights as NumPy arrays: "encoder" [layers, heads, S, S], "decoder"
[layers, heads, T, T] and "cross" [layers, heads, T, S], for input tokens `source` (S labels) and
decoder input tokens `target` (T labels). With no arguments it shows made-up weights (a seeded
softmax of random scores) so that the benchmark and the browser test can build it.
"""
from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable

from .._validate import ArgumentError
from ..common.figures import SMALL, WIDTH, describe
from ..scores import softmax
from .base import Param, register
from .raster import Heatmap
from .render import BlitRender

__all__ = ["AttentionMapExplorer", "KINDS"]

KINDS = ("encoder", "decoder", "cross")
_GREY_BAD = colormaps["viridis"].with_extremes(bad="0.85")  # NaN (a future key) light grey
TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention (causal)",
          "cross": "cross-attention (no bias)"}


def _made_up(layers=2, heads=4, s=6, t=6, seed=0):
    rng = np.random.default_rng(seed)
    future = np.triu(np.ones((t, t), dtype=bool), 1)
    decoder = np.where(future, -np.inf, rng.standard_normal((layers, heads, t, t)))
    maps = {"encoder": softmax(rng.standard_normal((layers, heads, s, s)) * 2),
            "decoder": softmax(decoder * 2), "cross": softmax(rng.standard_normal((layers, heads, t, s)) * 2)}
    return maps, [f"x{i}" for i in range(s)], [f"y{i}" for i in range(t)]


def _check(maps, source, target):
    if not isinstance(maps, dict) or set(maps) != set(KINDS):
        raise ArgumentError(f"maps must be a dict with the keys {list(KINDS)}")
    s, t = len(source), len(target)
    want = {"encoder": (s, s), "decoder": (t, t), "cross": (t, s)}
    shapes = set()
    for kind in KINDS:
        value = np.asarray(maps[kind], dtype=float)
        if value.ndim != 4 or value.shape[2:] != want[kind]:
            raise ArgumentError(f"maps[{kind!r}] must be [layers, heads, {want[kind][0]}, {want[kind][1]}] for "
                                f"{s} source and {t} target labels, got {value.shape}")
        shapes.add(value.shape[:2])
    if len(shapes) != 1:
        raise ArgumentError(f"every map needs the same [layers, heads], got {sorted(shapes)}")
    return {kind: np.asarray(maps[kind], dtype=float) for kind in KINDS}


@register
class AttentionMapExplorer(BlitRender):
    """Encoder, decoder and cross-attention weights of one example, for one layer and head."""

    params = (Param("layer", 0, 0, 1, 1, label="layer"), Param("head", 0, 0, 3, 1, label="head"))
    figsize = (WIDTH, 3.6)

    def __init__(self, maps=None, source=None, target=None, **params):
        if maps is None:
            maps, source, target = _made_up()
        if source is None or target is None:
            raise ArgumentError("give source and target labels with maps")
        self.source, self.target = [str(s) for s in source], [str(t) for t in target]
        self.maps = _check(maps, self.source, self.target)
        layers, heads = self.maps["encoder"].shape[:2]
        self.params = (Param("layer", 0, 0, layers - 1, 1, label="layer"),
                       Param("head", 0, 0, heads - 1, 1, label="head"))
        super().__init__(**params)

    def build(self, fig):
        fig.set_layout_engine("none")
        self.axes = [fig.add_axes((x, 0.2, 0.235, 0.64)) for x in (0.065, 0.365, 0.665)]
        self.images, self.titles = [], []
        labels = {"encoder": (self.source, self.source), "decoder": (self.target, self.target),
                  "cross": (self.source, self.target)}
        for ax, kind in zip(self.axes, KINDS, strict=True):
            keys, queries = labels[kind]
            # Drawn as prepared pixels (raster.py): an imshow resamples on every move.
            image = Heatmap(ax, _GREY_BAD, 0, 1)
            image.set_extent((-0.5, len(keys) - 0.5, len(queries) - 0.5, -0.5))  # row 0 at the top, as imshow
            self.images.append(image)
            ax.set_xticks(range(len(keys)), keys, fontsize=SMALL)
            ax.set_yticks(range(len(queries)), queries, fontsize=SMALL)
            ax.set_xlabel("key: input token" if kind != "decoder" else "key: decoder input token", fontsize=SMALL)
            self.titles.append(ax.set_title(TITLES[kind], fontsize=SMALL + 1))
        self.axes[0].set_ylabel("query: input token", fontsize=SMALL)
        self.axes[1].set_ylabel("query: decoder input token", fontsize=SMALL)
        bar = fig.colorbar(ScalarMappable(self.images[0].norm, self.images[0].cmap),
                           cax=fig.add_axes((0.915, 0.2, 0.01, 0.64)))
        bar.set_label("attention weight", fontsize=SMALL)
        self.heading = fig.text(0.5, 0.95, "", ha="center", va="center", fontsize=SMALL + 2)
        describe(fig, "Attention weights of one example for the chosen layer and head: encoder self-attention, "
                      "decoder self-attention with future keys greyed out, and cross-attention from answer "
                      "tokens to input tokens; bright cells are where each query looks.")

    def draw(self, layer, head):
        for image, kind in zip(self.images, KINDS, strict=True):
            weights = self.maps[kind][layer, head]
            if kind == "decoder":  # the future keys a causal query never sees: grey, not a weight of 0
                weights = np.where(np.triu(np.ones(weights.shape, dtype=bool), 1), np.nan, weights)
            image.set_data(weights)  # NaN: the colormap's "bad" grey
        self.heading.set_text(f"layer {layer}, head {head}: each row is one query's weights (they sum to 1)")

    def moving_artists(self):
        # Frames after the images, which fill their axes and would cover half of each frame line.
        return [*self.images, *(spine for ax in self.axes for spine in ax.spines.values()), self.heading]

    def readout(self):
        layer, head = self.values["layer"], self.values["head"]
        parts = []
        for kind in KINDS:
            top = self.maps[kind][layer, head].argmax(-1)
            rows = np.arange(len(top))
            offsets = top - rows if kind != "cross" else None
            if offsets is not None:
                common = np.bincount(offsets - offsets.min()).argmax() + offsets.min()
                parts.append(f"{kind}: most rows look at offset {common:+d}")
        return "; ".join(parts) + f" (layer {layer}, head {head})"
