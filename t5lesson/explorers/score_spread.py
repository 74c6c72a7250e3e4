"""Lesson 1's explorers: how q.k spreads with d, and what the spread does to a softmax row.

- `DotProductSpread`: histograms of q.k and q.k/sqrt(d) for random unit-variance vectors, with
  the normal curves they should follow (variance d and 1).
- `AttentionRow`: one query's logits and attention weights over a row of keys, scaled and
  unscaled, as d grows, with the mean max weight of all its rows beside the one row (one row is
  one draw: at query 0 the max weight dips from d = 4 to 64 while the mean climbs); the readout
  gives the saturation statistics of `t5lesson.saturation`.
- `saturation_figure`: a static figure of mean entropy, max weight, the softmax's Jacobian
  with respect to its logits and the weights' Jacobian with respect to the query, against d,
  from `t5lesson.saturation_curve`.

"Unscaled" here is q.k of unit-variance q and k with nothing compensated: lesson 2 shows that a
fresh T5 head is not that (its W_q initialisation takes the 1/sqrt(d) in), so no label says "T5".

All random vectors are drawn once at the largest d and truncated (see `t5lesson.lessons.dot_products`), so
moving the slider costs a histogram or a softmax, not a new draw.
"""
from __future__ import annotations

import math

import numpy as np

from ..common.figures import COLORS, SMALL, WIDTH, describe, new_figure, styled
from ..lessons.dot_products import normal_pdf, prefix_dot_products
from ..saturation import max_weight, saturation_curve, softmax_entropy, softmax_jacobian_norm
from ..scores import softmax
from .base import Param, register
from .render import BlitRender

__all__ = ["DotProductSpread", "AttentionRow", "saturation_figure", "no_minor_ticks", "D_MAX", "D_STOPS"]

D_MAX = 1024
D_STOPS = tuple(2 ** k for k in range(1, 11))  # the slider's values of d: 2, 4, ..., 1024 (64 is T5's d_kv)
UNSCALED, SCALED = COLORS["orange"], COLORS["blue"]  # one colour per score everywhere in lessons 1-2


def no_minor_ticks(*axes):
    """Log axes draw many minor ticks, each measured on every render; we do not need them."""
    from matplotlib.ticker import NullLocator

    for ax in axes:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())


@register
class DotProductSpread(BlitRender):
    """Histogram of q.k (left) and q.k/sqrt(d) (right) over many random pairs, for one d."""

    params = (Param("d", 64, 2, D_MAX, 1, label="d (entries per vector)", stops=D_STOPS),)
    figsize = (WIDTH, 3.4)
    description = ("Histograms of q·k (left) and q·k/√d (right) over many random vector pairs, each with a "
                   "normal curve. Notice that the unscaled spread grows like √d while the scaled one stays at 1.")
    n_pairs = 4000
    # Fixed axes, so the widening with d is visible (and the background never changes).
    unscaled_range, unscaled_top = 100.0, 0.08  # 3 std at d = 1024 is 96; peak at d = 32 is 0.07
    scaled_range, scaled_top = 5.0, 0.7  # the sampled peak is highest at d = 2: 0.63

    def build(self, fig):
        self.table = prefix_dot_products(self.n_pairs, D_MAX, seed=0)
        self.ax_raw, self.ax_scaled = fig.subplots(1, 2)
        self.edges_raw = np.linspace(-self.unscaled_range, self.unscaled_range, 101)
        self.edges_scaled = np.linspace(-self.scaled_range, self.scaled_range, 51)
        self.x_raw = np.linspace(-self.unscaled_range, self.unscaled_range, 400)
        x_scaled = np.linspace(-self.scaled_range, self.scaled_range, 200)
        self.hist_raw = self.ax_raw.stairs(np.zeros(100), self.edges_raw, fill=True, color=UNSCALED,
                                           alpha=0.6, label="sampled")
        (self.curve_raw,) = self.ax_raw.plot(self.x_raw, self.x_raw * 0, color="black", lw=1.2,
                                             label="normal, variance d")
        self.hist_scaled = self.ax_scaled.stairs(np.zeros(50), self.edges_scaled, fill=True, color=SCALED,
                                                 alpha=0.6, label="sampled")
        self.ax_scaled.plot(x_scaled, normal_pdf(x_scaled), color="black", lw=1.2, label="normal, variance 1")
        self.ax_raw.set(xlabel="q·k", ylabel="density", xlim=self.edges_raw[[0, -1]],
                        ylim=(0, self.unscaled_top), title="unscaled q·k, nothing compensated")
        self.ax_scaled.set(xlabel="q·k / √d", xlim=self.edges_scaled[[0, -1]], ylim=(0, self.scaled_top),
                           title="standard: q·k / √d")
        self.note_raw = self.ax_raw.text(0.03, 0.95, "", transform=self.ax_raw.transAxes, va="top", fontsize=SMALL)
        self.note_scaled = self.ax_scaled.text(0.03, 0.95, "", transform=self.ax_scaled.transAxes, va="top",
                                               fontsize=SMALL)
        for ax in (self.ax_raw, self.ax_scaled):
            ax.legend(loc="upper right", frameon=False)

    def moving_artists(self):
        return [self.hist_raw, self.curve_raw, self.hist_scaled, self.note_raw, self.note_scaled]

    def stats(self, d):
        """(sample variance of q.k, of q.k/sqrt(d)) over the pairs, at this d."""
        raw = self.table[:, d - 1].astype(np.float64)
        return float(raw.var()), float((raw / math.sqrt(d)).var())

    def draw(self, d):
        raw = self.table[:, d - 1]
        counts_raw, _ = np.histogram(raw, self.edges_raw, density=True)
        # For small d, q.k is not yet normal (a sum of few products is peaked): the histogram shows it.
        counts_scaled, _ = np.histogram(raw / math.sqrt(d), self.edges_scaled, density=True)
        self.hist_raw.set_data(counts_raw)
        self.hist_scaled.set_data(counts_scaled)
        self.curve_raw.set_ydata(normal_pdf(self.x_raw, math.sqrt(d)))
        var_raw, var_scaled = self.stats(d)
        peak = counts_raw.max()
        off_scale = f"\n(peak {peak:.2f}, off the top)" if peak > self.unscaled_top else ""
        self.note_raw.set_text(f"d = {d}\nvariance {var_raw:.1f}\n(theory {d}){off_scale}")
        self.note_scaled.set_text(f"d = {d}\nvariance {var_scaled:.2f}\n(theory 1)")

    def readout(self):
        d = self.values["d"]
        var_raw, var_scaled = self.stats(d)
        return (f"d = {d}: std of q·k = {math.sqrt(var_raw):.1f} (√d = {math.sqrt(d):.1f}); "
                f"std of q·k/√d = {math.sqrt(var_scaled):.2f}")


@register
class AttentionRow(BlitRender):
    """One query against a row of keys: logits (left) and softmax weights (right), both scorings."""

    params = (Param("d", 64, 2, D_MAX, 1, label="d (entries per vector)", stops=D_STOPS),
              Param("query", 0, 0, 19, 1, label="random query #"))
    figsize = (WIDTH, 3.6)
    description = ("One random query against its keys: the logits (left) and the softmax weights (right), unscaled q·k "
                   "in orange and q·k/√d in blue; dashed lines mark each scoring's max weight averaged over all 20 "
                   "queries. Notice that as d grows the unscaled mean climbs towards 1 while the scaled one stays low, "
                   "even where one query's row does not follow the trend.")
    n_keys = 16
    n_queries = 20
    # Fixed, and tight enough that the unscaled logits already fill it at T5's d = 64 (std 8)
    # while the scaled ones stay a flat line; beyond it (d >= 256) points sit on the edge as
    # triangles, and the note counts them.
    logit_range = 40.0

    def build(self, fig):
        # [query, key, d]: the logits of 20 random queries, each against its own 16 keys.
        self.table = prefix_dot_products(self.n_queries, D_MAX, n_keys=self.n_keys, seed=1)
        self._mean_max = None
        self.ax_logits, self.ax_weights = fig.subplots(1, 2)
        keys = np.arange(self.n_keys)
        self.ax_logits.axhline(0, color="0.7", lw=0.8)
        (self.pts_raw,) = self.ax_logits.plot(keys, keys * 0.0, "o", color=UNSCALED, label="q·k, unscaled")
        # Off the scale: a triangle on the edge, pointing the way the value went.
        self.pts_up, self.pts_down = (self.ax_logits.plot([], [], marker, color=UNSCALED, ms=7)[0] for marker in "^v")
        (self.pts_scaled,) = self.ax_logits.plot(keys, keys * 0.0, "s", color=SCALED, ms=5,
                                                 label="q·k / √d  (standard)")
        # Head room above the data for the legend, so points never cover it.
        top = 1.5 * self.logit_range
        self.ax_logits.set(xlabel="key j", ylabel="logit", title="scores of one query",
                           ylim=(-self.logit_range * 1.05, top), yticks=np.arange(-40, 41, 20))
        width = 0.4
        self.bars_raw = self.ax_weights.bar(keys - width / 2, keys * 0.0, width, color=UNSCALED, label="unscaled")
        self.bars_scaled = self.ax_weights.bar(keys + width / 2, keys * 0.0, width, color=SCALED,
                                               label="standard (scaled)")
        # One row is one draw: the mean max weight of all the rows, beside the one row drawn.
        mean_style = dict(ls="--", lw=1.4)
        self.mean_raw = self.ax_weights.axhline(0, color=UNSCALED, **mean_style)
        self.mean_scaled = self.ax_weights.axhline(0, color=SCALED, **mean_style)
        self.ax_weights.plot([], [], color="0.3", ls="--", lw=1.4, label=f"max weight, mean of {self.n_queries} rows")
        self.ax_weights.set(xlabel="key j", ylabel="attention weight", ylim=(0, 1.3),
                            yticks=np.linspace(0, 1, 6), title="softmax over the 16 keys")
        for ax in (self.ax_logits, self.ax_weights):
            ax.set_xticks(keys[::3])
            ax.set_xlim(-0.7, self.n_keys - 0.3)
            ax.legend(loc="upper left", frameon=False)
        # The state in words, inside the figure: readers without a kernel see it, and every
        # slider step changes the picture even where the data move by less than a pixel.
        self.note = self.ax_weights.text(0.98, 0.97, "", transform=self.ax_weights.transAxes, ha="right",
                                         va="top", fontsize=SMALL)
        self.off_note = self.ax_logits.text(0.98, 0.97, "", transform=self.ax_logits.transAxes, ha="right",
                                            va="top", fontsize=SMALL, color=UNSCALED)

    def moving_artists(self):
        return [self.pts_raw, self.pts_up, self.pts_down, self.pts_scaled, *self.bars_raw, *self.bars_scaled,
                self.mean_raw, self.mean_scaled, self.note, self.off_note]

    def row(self, d, query):
        """(unscaled logits, scaled logits, unscaled weights, scaled weights) for this row."""
        raw = self.table[query, :, d - 1].astype(np.float64)
        scaled = raw / math.sqrt(d)
        return raw, scaled, softmax(raw), softmax(scaled)

    def mean_max_weights(self, d):
        """(unscaled, scaled) max weight at this d, averaged over all the explorer's queries."""
        if self._mean_max is None:  # every d at once, on the first call: a slider move then only looks it up
            raw = np.moveaxis(self.table, -1, 0).astype(np.float64)  # [d, query, key]
            scale = np.sqrt(np.arange(1, D_MAX + 1))[:, None, None]
            self._mean_max = np.stack([max_weight(softmax(raw)).mean(-1),
                                       max_weight(softmax(raw / scale)).mean(-1)], axis=-1)
        return float(self._mean_max[d - 1, 0]), float(self._mean_max[d - 1, 1])

    def draw(self, d, query):
        raw, scaled, w_raw, w_scaled = self.row(d, query)
        edge = self.logit_range
        inside = np.abs(raw) <= edge
        keys = np.arange(self.n_keys)
        self.pts_raw.set_data(keys[inside], raw[inside])
        self.pts_up.set_data(keys[raw > edge], np.full(int((raw > edge).sum()), edge))
        self.pts_down.set_data(keys[raw < -edge], np.full(int((raw < -edge).sum()), -edge))
        self.pts_scaled.set_ydata(scaled)
        for bar, h in zip(self.bars_raw, w_raw, strict=True):
            bar.set_height(h)
        for bar, h in zip(self.bars_scaled, w_scaled, strict=True):
            bar.set_height(h)
        mean_raw, mean_scaled = self.mean_max_weights(d)
        self.mean_raw.set_ydata([mean_raw, mean_raw])
        self.mean_scaled.set_ydata([mean_scaled, mean_scaled])
        self.note.set_text(f"d = {d}, query #{query}")  # the numbers are in the readout: new text costs layout
        n_off = int((~inside).sum())
        self.off_note.set_text(f"{n_off} of {self.n_keys} beyond ±{edge:g}:\non the edge" if n_off else "")

    def readout(self):
        _, _, w_raw, w_scaled = self.row(self.values["d"], self.values["query"])
        parts = []
        for name, w in (("unscaled", w_raw), ("standard", w_scaled)):
            parts.append(f"{name}: entropy {float(softmax_entropy(w)):.2f} nats, "
                         f"max weight {float(max_weight(w)):.2f}, ‖J‖ {float(softmax_jacobian_norm(w)):.3f}")
        head = f"d = {self.values['d']}, query #{self.values['query']}. "
        mean_raw, mean_scaled = self.mean_max_weights(self.values["d"])
        return (head + "; ".join(parts) + f" (uniform: entropy {math.log(self.n_keys):.2f}); "
                f"max weight, mean of all {self.n_queries} rows: unscaled {mean_raw:.2f}, standard {mean_scaled:.2f}")


@styled
def saturation_figure(dims=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), n_keys=64, n_queries=256, seed=0,
                      jacobians=None):
    """Mean entropy, max weight, ||dp/ds|| and ||dp/dq|| against d, unscaled vs scaled (2 x 2 panels).

    Returns (figure, {"unscaled": SaturationCurve, "scaled": SaturationCurve}) so a lesson can
    quote the numbers it plots. jacobians: the function the two Jacobians of one row are
    measured with (`t5lesson.saturation.row_jacobians`, or the learner's in lesson 1).
    """
    curves = {"unscaled": saturation_curve(dims, 1.0, n_queries, n_keys, seed, jacobians),
              "scaled": saturation_curve(dims, "sqrt_d", n_queries, n_keys, seed, jacobians)}
    fig = new_figure(WIDTH, 5.6)
    axes = fig.subplots(2, 2).ravel()
    panels = (("entropy", "entropy (nats)", "how spread out the row is"),
              ("max_weight", "max weight", "weight of the top key"),
              ("jacobian_norm", "‖∂p/∂s‖ (Frobenius)", "Jacobian w.r.t. the logits s"),
              ("query_gradient_norm", "‖∂p/∂q‖ (Frobenius)", "Jacobian w.r.t. the query q"))
    labels = {"unscaled": "q·k: unscaled, nothing compensated", "scaled": "q·k/√d: scaled"}
    for ax, (field, label, title) in zip(axes, panels, strict=True):
        for name, colour, marker, ls in (("unscaled", UNSCALED, "o", "-"), ("scaled", SCALED, "s", "--")):
            c = curves[name]
            ax.plot(c.d, getattr(c, field), marker=marker, ms=4, color=colour, ls=ls, label=labels[name])
        ax.set_xscale("log", base=2)
        ticks = [t for t in (2, 16, 64, 256, 1024) if dims[0] <= t <= dims[-1]]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        no_minor_ticks(ax)
        ax.set(xlabel="d", ylabel=label, title=title)
        ax.grid(alpha=0.3)
    axes[0].axhline(curves["scaled"].uniform_entropy, color="0.5", ls=":", lw=1)
    axes[0].annotate(f"uniform over {n_keys} keys", (dims[0], curves["scaled"].uniform_entropy),
                     xytext=(0, 4), textcoords="offset points", fontsize=SMALL, color="0.4")
    axes[0].set_ylim(0, 1.15 * curves["scaled"].uniform_entropy)
    axes[1].set_ylim(0, 1.02)
    axes[2].set_ylim(bottom=0)
    axes[3].set_ylim(bottom=0)
    fig.suptitle(f"softmax of random logits, mean over {n_queries} queries × {n_keys} keys")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    u, s = curves["unscaled"], curves["scaled"]
    alt = (
        f"Four panels against d from {dims[0]} to {dims[-1]}, unscaled against scaled scores of random "
        f"unit-variance vectors. Unscaled, the entropy falls towards 0, the max weight rises towards 1 and "
        f"the Jacobian with respect to the logits falls below the scaled one "
        f"(to {u.jacobian_norm[-1]:.2f} against {s.jacobian_norm[-1]:.2f}); but the Jacobian with respect to "
        f"the query stays far above the scaled one at every d (at the largest d, "
        f"{u.query_gradient_norm[-1]:.1f} against {s.query_gradient_norm[-1]:.2f}). Scaled, all four stay flat.")
    return describe(fig, alt), curves
