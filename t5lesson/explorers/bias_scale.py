"""Lesson 2's explorer and figures: why T5 adds the bias on the unscaled logit scale.

With the scaling folded into W_q (lesson 2), T5's content logit q.k already has unit spread,
and the bias is added to it as is: logit = c + u. Had the bias been put *inside* a 1/sqrt(d)
scaling, as in (q.k + u)/sqrt(d) with the usual W_q, the content part would be the same c but
the bias would shrink to u/sqrt(d). Adding u to one key's logit multiplies that key's
unnormalised weight exp(logit), and so its odds against every other key, by exp(u): by e^3
(about 20) for u = 3 in T5 at any d, but only by exp(3/sqrt(d)) inside the scaling.

- `BiasScale`: one row of keys, one of them biased by u; weights under both forms, and the odds
  multiplier against d.
- `training_figure`: logit spread, attention entropy and accuracy during training, from
  `t5lesson.lessons.folding.train_recall` traces.
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import ArgumentError
from ..common.figures import COLORS, SMALL, WIDTH, describe, new_figure, styled
from ..scores import softmax
from .base import Param, register
from .render import BlitRender
from .score_spread import D_MAX, D_STOPS, SCALED, UNSCALED, no_minor_ticks

__all__ = ["BiasScale", "training_figure"]


@register
class BiasScale(BlitRender):
    """q.k + u (T5) against (q.k + u)/sqrt(d) (bias inside the scaling), for one row of keys."""

    params = (Param("d", 64, 2, D_MAX, 1, label="d (= d_kv)", stops=D_STOPS),
              Param("u", 3.0, -6.0, 6.0, 0.5, label="bias u on key 7"))
    figsize = (WIDTH, 3.6)
    description = ("Left: attention weights over the keys with bias u on key 7, for T5's q·k + u (orange) and "
                   "for (q·k + u)/√d (blue). Right: how much more weight key 7 gets against d; notice that T5's "
                   "boost e^u does not depend on d, while inside the scaling it fades as d grows.")
    n_keys = 16
    biased_key = 7

    def build(self, fig):
        # Content logits c = q.k with unit spread, as a folded (or scaled) head starts out.
        self.content = np.random.default_rng(3).standard_normal(self.n_keys)
        self.ax_w, self.ax_odds = fig.subplots(1, 2)
        keys = np.arange(self.n_keys)
        width = 0.4
        self.bars_t5 = self.ax_w.bar(keys - width / 2, keys * 0.0, width, color=UNSCALED, label="q·k + u  (T5)")
        self.bars_in = self.ax_w.bar(keys + width / 2, keys * 0.0, width, color=SCALED, label="(q·k + u)/√d")
        self.ax_w.stairs(softmax(self.content), np.arange(self.n_keys + 1) - 0.5, color="black", lw=0.8,
                         label="no bias")
        for bars in (self.bars_t5, self.bars_in):
            bars[self.biased_key].set_hatch("///")
        self.ax_w.set(xlabel="key j (key 7 gets the bias)", ylabel="attention weight", ylim=(0, 1.3),
                      yticks=np.linspace(0, 1, 6), title="one query, 16 keys")
        self.ax_w.set_xticks(keys[::3])
        self.ax_w.set_xlim(-0.7, self.n_keys - 0.3)
        self.ax_w.legend(loc="upper left", frameon=False)
        # The state in words: a step of d moves the data by less than a pixel at large d.
        self.note = self.ax_w.text(0.98, 0.97, "", transform=self.ax_w.transAxes, ha="right", va="top",
                                   fontsize=SMALL)
        self.dims = np.unique(np.geomspace(2, D_MAX, 60).astype(int))
        (self.line_t5,) = self.ax_odds.plot(self.dims, self.dims * 0.0, color=UNSCALED, label="T5: e^u")
        (self.line_in,) = self.ax_odds.plot(self.dims, self.dims * 0.0, color=SCALED, label="inside: e^(u/√d)")
        (self.dot_t5,) = self.ax_odds.plot([64], [1.0], "o", color=UNSCALED)
        (self.dot_in,) = self.ax_odds.plot([64], [1.0], "o", color=SCALED)
        self.ax_odds.axhline(1.0, color="0.6", lw=0.8, ls=":")
        self.ax_odds.set_xscale("log", base=2)
        self.ax_odds.set_yscale("log")
        bound = math.exp(6.5)
        self.ax_odds.set(xlabel="d", ylabel="odds multiplier of key 7", ylim=(1 / bound, bound),
                         title="what the bias does to the odds")
        self.ax_odds.set_xlim(1.7, D_MAX * 1.2)
        self.ax_odds.set_xticks((2, 16, 64, 256, 1024), ["2", "16", "64", "256", "1024"])
        # Outside the axes: the lines sweep the whole height as u moves.
        self.ax_odds.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
        no_minor_ticks(self.ax_odds)

    def moving_artists(self):
        return [*self.bars_t5, *self.bars_in, self.line_t5, self.line_in, self.dot_t5, self.dot_in, self.note]

    def weights(self, d, u):
        """(T5 weights, bias-inside weights) of the row, for this d and u."""
        bias = np.zeros(self.n_keys)
        bias[self.biased_key] = u
        return softmax(self.content + bias), softmax(self.content + bias / math.sqrt(d))

    def draw(self, d, u):
        w_t5, w_in = self.weights(d, u)
        for bar, h in zip(self.bars_t5, w_t5, strict=True):
            bar.set_height(h)
        for bar, h in zip(self.bars_in, w_in, strict=True):
            bar.set_height(h)
        self.line_t5.set_ydata(np.full(self.dims.shape, math.exp(u)))
        self.line_in.set_ydata(np.exp(u / np.sqrt(self.dims)))
        self.dot_t5.set_data([d], [math.exp(u)])
        self.dot_in.set_data([d], [math.exp(u / math.sqrt(d))])
        self.note.set_text(f"d = {d}, u = {u:+.1f}")

    def readout(self):
        d, u = self.values["d"], self.values["u"]
        w_t5, w_in = self.weights(d, u)
        plain = softmax(self.content)[self.biased_key]
        return (f"d = {d}, u = {u:+.1f}: key 7's odds ×{math.exp(u):.3g} (T5) vs ×{math.exp(u / math.sqrt(d)):.3g} "
                f"(inside the scaling); its weight {w_t5[self.biased_key]:.2f} vs {w_in[self.biased_key]:.2f} "
                f"({plain:.2f} without bias)")


def _plain_log_ticks(ax):
    """1, 2, 5, 10, ... on a log axis, written as plain numbers (default is only 10^0, 10^1)."""
    low, high = ax.get_ylim()
    ticks = [t for t in (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if low <= t <= high]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    no_minor_ticks(ax)


@styled
def training_figure(traces):
    """Logit spread, attention entropy and accuracy over training: one row of panels per optimizer.

    `traces`: `t5lesson.lessons.folding.TrainingTrace`s, any mix of variants and the optimizers
    "adafactor" and "adam". The accuracy panel marks 95%, the milestone the lesson's table uses.
    Returns the matplotlib figure.
    """
    optimizers = [o for o in ("adafactor", "adam") if any(t.optimizer == o for t in traces)]
    if not optimizers:
        raise ArgumentError("traces must hold at least one TrainingTrace of optimizer 'adafactor' or 'adam'")
    style = {"folded": (UNSCALED, "-", "o", "folded: q·k, W_q/√d_kv (T5)"),
             "scaled": (SCALED, "--", "s", "scaled: q·k/√d_kv, plain W_q"),
             "unfolded": (COLORS["vermillion"], ":", "^", "unfolded: q·k, plain W_q")}
    fig = new_figure(WIDTH, 0.6 + 2.75 * len(optimizers))
    axes = fig.subplots(len(optimizers), 3, squeeze=False)
    for row, opt in zip(axes, optimizers, strict=True):
        for t in (t for t in traces if t.optimizer == opt):
            colour, ls, marker, label = style[t.variant]
            # The folded line is drawn wide and pale so it stays visible where the scaled one
            # lies exactly on top of it (Adafactor).
            wide = dict(lw=4, alpha=0.45) if t.variant == "folded" else {}
            for ax, values in zip(row, (t.logit_std, t.entropy, t.accuracy), strict=True):
                ax.plot(t.step, values, color=colour, ls=ls, marker=marker, ms=4, label=label, **wide)
        lr = next(t.lr for t in traces if t.optimizer == opt)
        row[0].set(ylabel="std of a query's logits", yscale="log", title=f"{opt} (lr {lr:g}): logit spread")
        row[1].set(ylabel="attention entropy (nats)", ylim=(0, None), title="how spread out the attention is")
        row[2].set(ylabel="accuracy", ylim=(0, 1.02), title="accuracy on held-out queries")
        row[2].axhline(0.95, color="0.4", lw=0.8, ls=":")
        row[2].text(0.98, 0.935, "95%", transform=row[2].get_yaxis_transform(), ha="right", va="top",
                    fontsize=SMALL, color="0.3")
        _plain_log_ticks(row[0])
        for ax in row:
            ax.grid(alpha=0.3)
            ax.set_xlabel("training step")
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside upper center", ncols=3, frameon=False)
    return describe(fig, (
        "Logit spread (log scale), attention entropy and held-out accuracy against the training step, one row "
        f"per optimizer ({', '.join(optimizers)}), for the folded (T5), scaled and unfolded heads. Under "
        "Adafactor the folded and scaled curves lie exactly on top of each other; under Adam they part from the "
        "first steps, and the unfolded head starts with a wide logit spread and a low entropy."))
