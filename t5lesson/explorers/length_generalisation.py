"""Lesson 5b: how T5's max_distance decides whether a model reads sequences longer than its training.

Every stop of the slider (max_distance = 16, 32, ..., 512) is a tiny model trained on copy-k at
length 64 with T5 buckets (16, causal) and that max_distance. They were trained once with
lesson 5's training loop and stored as data (`t5lesson.lengthgen.variants`: accuracies and each
bucket's learned bias), so the explorer needs NumPy and matplotlib only, not torch, and moving
the slider only redraws.

Left: accuracy (or the attention weight on the right key) against the evaluation length, for
the chosen max_distance and for the experiment's setting (max_distance 32) as a grey reference,
drawn dashed on top of the chosen line so that it shows where the two coincide. Right: the
learned bias of each head against the offset d = i - j (how far back the key is), with the
offsets never seen in training shaded and the start of the last bucket marked.

Rendering: `BlitRender`; axes, ticks and labels never change (one background per left-panel
choice, whose y label differs); each update redraws the lines on top, then the legends, kept
as prepared pixels.
"""
from __future__ import annotations

import numpy as np

from .._validate import ArgumentError
from ..common.figures import COLORS, LINESTYLES, SERIES, SMALL, WIDTH
from ..lengthgen.variants import MAX_DISTANCES, load_variants
from .base import Param, register
from .raster import freeze
from .render import BlitRender

__all__ = ["LengthGeneralisationExplorer", "MAX_DISTANCES", "REFERENCE"]

REFERENCE = 32
HEAD_COLORS = SERIES[:4]
SHOW = {"accuracy": ("accuracy", "accuracy"), "weight on right key": ("weight_on_key", "attention on the right key")}


@register
class LengthGeneralisationExplorer(BlitRender):
    params = (
        Param("max_distance", REFERENCE, label="T5 max_distance", stops=MAX_DISTANCES),
        Param("show", "accuracy", options=tuple(SHOW), label="left panel"),
    )
    figsize = (WIDTH, 3.8)
    description = ("Left: accuracy (or attention on the right key) against evaluation length for a T5 bias with "
                   "the chosen max_distance, beside the experiment's setting. Right: each head's learned bias "
                   "against the offset, with the start of the last bucket; notice that buckets holding only "
                   "offsets past the training length were never trained.")
    task, seed = "copy-k", 0

    def build(self, fig):
        self.variants = load_variants()  # stored data: no training, no torch
        if tuple(self.variants) != MAX_DISTANCES:
            raise ArgumentError(f"the stored explorer variants hold max_distance {tuple(self.variants)}, "
                                f"expected {MAX_DISTANCES}; rerun: python benchmarks/lengthgen_full.py --only variants")
        lengths = np.array(self.variants[REFERENCE].lengths)
        train_len = self.train_len = self.variants[REFERENCE].train_len
        # Fixed axes positions: constrained layout would re-measure every label on each draw.
        fig.set_layout_engine("none")
        left = self.ax_acc = fig.add_axes((0.075, 0.2, 0.34, 0.7))
        right = self.ax_bias = fig.add_axes((0.52, 0.2, 0.465, 0.7))

        left.set_xscale("log", base=2)
        left.set_xticks(lengths, [f"{n}\n({n // train_len}L)" for n in lengths])
        left.minorticks_off()
        left.set_xlim(lengths[0] / 1.15, lengths[-1] * 1.15)
        left.set_xlabel(f"evaluation length (trained on L = {train_len})")
        left.set_ylim(0, 1.38)  # the space above 1 holds the legend, clear of the curves
        left.set_yticks(np.linspace(0, 1, 6))
        left.grid(True, alpha=0.3)
        # The chosen line wide and pale underneath, the reference thin and dashed on top: where
        # the two coincide (max_distance 32 is the reference) both stay visible.
        (self.line,) = left.plot(lengths, lengths * 0.0, color=COLORS["vermillion"], marker="o", ms=7, lw=4, alpha=0.6,
                                 label="chosen max_distance")
        (self.reference_line,) = left.plot(lengths, lengths * 0.0, "--", color="0.25", marker="s", ms=4, lw=1.5,
                                           label=f"max_distance {REFERENCE} (the experiment's)")
        left.legend(loc="upper center", fontsize=SMALL)
        self.title = fig.text(0.245, 0.975, "", fontsize=SMALL + 1, ha="center", va="top")

        self.offsets = np.arange(max(lengths))
        right.set_xscale("symlog", linthresh=4, linscale=0.5)
        right.set_xlim(0, max(lengths))
        ticks = [0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512]
        right.set_xticks(ticks, [str(t) for t in ticks])
        right.minorticks_off()
        right.axvspan(train_len, max(lengths), color="0.88", zorder=0, label=f"d ≥ {train_len}: never in training")
        right.axhline(0, color="0.4", lw=0.8)
        self.head_lines = [right.plot(self.offsets, self.offsets * 0.0, color=c, ls=LINESTYLES[h], lw=1.4,
                                      label=f"head {h}")[0] for h, c in enumerate(HEAD_COLORS)]
        self.last_bucket = right.axvline(1, color="black", ls=(0, (6, 2, 1, 2, 1, 2)), lw=1.4,
                                         label="last bucket starts")
        right.set_xlabel("offset d = i − j (key d steps back; code's j − i = −d)")
        right.set_ylabel("learned bias (logit units)")
        right.set_title("learned bias of each head (start value 0)", fontsize=SMALL + 1)
        right.grid(True, alpha=0.3)
        right.legend(loc="upper right", fontsize=SMALL, ncols=2, framealpha=0.9)
        biases = np.concatenate([v.bias.ravel() for v in self.variants.values()])
        pad = 0.1 * (biases.max() - biases.min())
        right.set_ylim(biases.min() - pad, biases.max() + 5 * pad)  # room for the legend
        for spine in (*left.spines.values(), *right.spines.values()):
            spine.set_zorder(2.6)
        # The legends never change: drawn once, then copied as pixels over the lines (raster.py).
        self.legends = freeze(fig, [left.get_legend(), right.get_legend()])

    def moving_artists(self):
        # Legends last, so lines never cover them; spines are static (the lines stay inside).
        return [self.line, self.reference_line, self.title, *self.head_lines, self.last_bucket, *self.legends]

    def _background_key(self):
        return (*super()._background_key(), self.values["show"])  # the left y label differs

    def draw(self, max_distance, show):
        chosen, reference = self.variants[max_distance], self.variants[REFERENCE]
        column, label = SHOW[show]
        self.line.set_ydata(getattr(chosen, column))
        self.reference_line.set_ydata(getattr(reference, column))
        self.ax_acc.set_ylabel(label)
        self.title.set_text(f"{self.task}, seed {self.seed}: T5 max_distance {max_distance}")
        for line, values in zip(self.head_lines, chosen.bias, strict=True):
            line.set_ydata(values)
        self.last_bucket.set_xdata([chosen.last_bucket_start] * 2)

    def readout(self):
        v = self.variants[self.values["max_distance"]]
        return (f"max_distance = {v.max_distance}: the last bucket starts at d = {v.last_bucket_start}; "
                f"{v.untrained_buckets} of 16 buckets hold only offsets >= {self.train_len} and were never "
                f"trained. At {v.lengths[-1]} tokens: accuracy {v.accuracy[-1]:.2f}, "
                f"attention on the right key {v.weight_on_key[-1]:.2f}.")
