"""The figures of lessons 5 and 5b, each a function of results, so the notebook cells stay one line.

Every offset axis (here and in the lesson's explorer) is the same: offsets d = i - j on a
symmetric-log scale, linear from 0 to 4 and logarithmic beyond (`OFFSET_SCALE`), from 0 to 512.
Every builder attaches its alt text (`common.figures.describe`).

All figures are plain matplotlib `Figure`s (no pyplot, nothing global) in the course style
(`t5lesson.common.figures`); `common.figures.as_image` turns one into the PNG a notebook cell
displays.
"""
from __future__ import annotations

import textwrap

import numpy as np

from .._validate import ArgumentError, check_int
from ..common.figures import COLORS, NORMAL, SERIES, SMALL, WIDTH, as_image, describe, new_figure, styled
from .counts import training_pairs_behind_offset
from .run import Results
from .schemes import get_scheme

# as_image too: lesson 5 as handed out at 92d9028 imports it from here (tests/grading/scenarios/test_held_notebooks.py).
__all__ = ["SCHEME_COLORS", "pairs_figure", "accuracy_figure", "bias_figure", "mean_table_text", "as_image"]

OFFSET_SCALE = dict(linthresh=4, linscale=0.5)  # symlog: linear on 0..4, logarithmic beyond; the explorer uses it too
SMALL_OFFSET_TICKS = (0, 1, 2, 3, 4, 8, 16, 32, 64, 512)  # for narrow panels: no crowded 128, 256
# Each scheme its own line style too (not told apart by colour alone; lines that coincide stay visible).
LINE_STYLES = {"t5": "-", "per-offset-A": (0, (7, 2)), "per-offset-0": (0, (4, 2)), "per-offset-32": "-.",
               "alibi": (0, (3, 1, 1, 1, 1, 1)), "none": (0, (8, 2, 2, 2)), "t5-far": (0, (1, 1))}
# Okabe-Ito colours (the course style): they stay apart under deuteranopia and protanopia.
SCHEME_COLORS = {"t5": COLORS["blue"], "per-offset-A": COLORS["orange"], "per-offset-0": COLORS["vermillion"],
                 "per-offset-32": COLORS["green"], "alibi": COLORS["purple"], "none": COLORS["black"],
                 "t5-far": COLORS["sky"]}
HEAD_COLORS = SERIES[:4]
HEAD_STYLES = ("-", "--", "-.", ":")
OFFSET_TICKS = (0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512)
MARKERS = {"t5": "o", "per-offset-A": "s", "per-offset-0": "^", "per-offset-32": "D", "alibi": "v", "none": "X",
           "t5-far": "P"}
NUDGE = 0.012  # vertical distance between the lines of neighbouring schemes, so equal values stay visible
MAX_NUDGE = 0.025  # ... and at most this far from the true value, however many schemes


def _offset_axis(ax, n, train_len, ticks=OFFSET_TICKS):
    """Offsets d on a symmetric-log axis (0 and the exact region visible), unseen offsets shaded."""
    ax.set_xscale("symlog", **OFFSET_SCALE)
    ax.set_xlim(0, n)
    ticks = [t for t in ticks if t <= n]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.axvspan(train_len, n, color="0.9", zorder=0, lw=0)
    ax.grid(True, alpha=0.3)


def _check_results(results):
    if not isinstance(results, Results):
        raise ArgumentError(f"results must be a lengthgen Results, got {type(results).__name__}")
    return results


def _color(scheme):
    return SCHEME_COLORS.get(scheme, "black")


@styled
def pairs_figure(schemes, train_len=64, n=512):
    """Training pairs per sequence behind the bias used at each offset, one line per scheme."""
    train_len = check_int("train_len", train_len, minimum=2)
    n = check_int("n", n, minimum=train_len)
    fig = new_figure(WIDTH, 3.4)
    ax = fig.add_subplot()
    d = np.arange(n)
    for scheme in schemes:
        scheme = get_scheme(scheme)
        pairs = training_pairs_behind_offset(scheme, n, train_len)
        ax.plot(d, pairs, color=_color(scheme.name), lw=1.8, ls=LINE_STYLES.get(scheme.name, "-"),
                label=scheme.label, drawstyle="steps-post")
    _offset_axis(ax, n, train_len)
    ax.set_yscale("symlog", linthresh=1, linscale=0.3)
    ax.set_ylim(-0.1, 3000)
    ax.set_xlabel(f"d = i − j at test time: the key is d steps back (shaded: d ≥ L = {train_len}, in no training "
                  "sequence)")
    ax.set_ylabel("pairs per training sequence\nthat train this bias")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right center")
    names = ", ".join(get_scheme(s).label for s in schemes)
    return describe(fig, f"Training pairs per {train_len}-token sequence behind the bias used at each test offset "
                         f"0 to {n - 1}, for {names}. Notice the shaded offsets from {train_len} on: a scheme whose "
                         "line drops to 0 there uses biases that no training pair reached.")


def _separate(means, tolerance=0.004):
    """Vertical shifts [schemes, lengths] that spread means lying within `tolerance` of each other
    (`NUDGE` apart, at most `MAX_NUDGE` from the true value); lone values stay where they are."""
    shifts = np.zeros_like(means)
    for j in range(means.shape[1]):
        order = np.argsort(means[:, j], kind="stable")
        groups = [[order[0]]]
        for i in order[1:]:
            if means[i, j] - means[groups[-1][-1], j] <= tolerance:
                groups[-1].append(i)
            else:
                groups.append([i])
        for group in (g for g in groups if len(g) > 1):
            step = min(NUDGE, 2 * MAX_NUDGE / (len(group) - 1))
            for rank, i in enumerate(sorted(group)):  # same order as the legend, top to bottom
                shifts[i, j] = step * ((len(group) - 1) / 2 - rank)
    return shifts


@styled
def accuracy_figure(panels, task, schemes=None, column="accuracy"):
    """Accuracy (or attention on the right key) against evaluation length, one panel per entry.

    panels: a Results, or a list of (title, Results) or (title, Results, task) entries; `task`
    is used where an entry names none. Each scheme: mean over seeds (line) and each seed (dots).
    Schemes whose means coincide at a length (all at 1.00, say) are drawn `NUDGE` apart there
    (dots side by side), so each stays visible; other values are drawn where they are. The
    legend says so.
    """
    entries = _panel_entries(panels, task)
    if column not in ("accuracy", "weight_on_key"):
        raise ArgumentError(f'column must be "accuracy" or "weight_on_key", got {column!r}')
    below = len(entries) > 2  # three panels need the full width; the legend goes under them
    width = WIDTH if below else min(WIDTH, 3.1 * len(entries) + 3.4)
    fig = new_figure(width, 3.3 + (0.9 if below else 0))
    axes = fig.subplots(1, len(entries), sharey=True, squeeze=False)[0]
    spread = 0.0
    for ax, (title, results, panel_task) in zip(axes, entries, strict=True):
        lengths, shift = _accuracy_panel(ax, results, panel_task, schemes, column)
        ax.set_title(title or panel_task, fontsize=NORMAL)
        spread = max(spread, shift)
    axes[0].set_ylabel("accuracy" if column == "accuracy" else "attention on the right key")
    note = "lines: mean of seeds; dots: each seed"
    if spread > 0:
        note = f"lines: mean of seeds; equal means drawn\nup to ±{spread:.3f} apart to stay visible; dots: each seed"
    fig.legend(*axes[0].get_legend_handles_labels(), title=note,
               **(dict(loc="outside lower center", ncols=3) if below else dict(loc="outside right center")))
    what = "Accuracy" if column == "accuracy" else "Attention on the key that holds the answer"
    summary = "; ".join(_panel_summary(entry, task, schemes, column) for entry in entries)
    return describe(fig, f"{what} against evaluation length (trained on {lengths[0]} tokens, tested up to "
                         f"{lengths[-1]}), one line per position scheme, mean of seeds. At the longest length: "
                         f"{summary}.")


def _panel_entries(panels, task) -> list[tuple]:
    """accuracy_figure's panels as checked (title, Results, task) triples."""
    if isinstance(panels, Results):
        panels = [("", panels)]
    if not isinstance(panels, (list, tuple)) or not panels:
        raise ArgumentError("panels must be a Results or a non-empty list of (title, Results[, task])")
    entries = []
    for entry in panels:
        if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
            raise ArgumentError(f"each panel must be (title, Results) or (title, Results, task), got {entry!r}")
        title, results, panel_task = (*entry, task) if len(entry) == 2 else entry
        entries.append((title, _check_results(results), panel_task))
    return entries


def _accuracy_panel(ax, results, task, schemes, column) -> tuple[np.ndarray, float]:
    """One panel: each scheme's mean over seeds (line) and each seed (dots); returns (the lengths, how far
    coinciding means were drawn apart)."""
    lengths = np.array(results.lengths())
    shown = [s for s in (schemes or results.schemes()) if results.select(scheme=s, task=task)]
    means = np.array([[results.mean(s, task, n, column) for n in lengths] for s in shown])
    shifts = _separate(means)
    for k, scheme in enumerate(shown):
        color = _color(scheme)
        centre = k - (len(shown) - 1) / 2
        ax.plot(lengths, means[k] + shifts[k], color=color, lw=2, marker=MARKERS.get(scheme, "o"),
                ms=5, ls=LINE_STYLES.get(scheme, "-"), label=results.labels.get(scheme, scheme))
        nudge = 1 + 0.025 * centre  # spread the seeds' dots so they do not hide each other
        for n in lengths:
            seeds = results.values(scheme, task, n, column)
            ax.plot([n * nudge] * len(seeds), seeds, ".", color=color, ms=5, alpha=0.6)
    ax.set_xscale("log", base=2)
    train_len = lengths[0]
    ax.set_xticks(lengths, [f"{n}\n({n // train_len}L)" for n in lengths])
    ax.minorticks_off()
    ax.set_xlabel("evaluation length")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    return lengths, float(np.abs(shifts).max())


def _panel_summary(entry, task, schemes, column):
    title, results, panel_task = (*entry, task) if len(entry) == 2 else entry
    n = results.lengths()[-1]
    shown = [s for s in (schemes or results.schemes()) if results.select(scheme=s, task=panel_task)]
    values = ", ".join(f"{results.labels.get(s, s)} {results.mean(s, panel_task, n, column):.1f}" for s in shown)
    return f"{title or panel_task}: {values}"


@styled
def bias_figure(results, task, schemes, seed=0, train_len=64):
    """Small multiples: the learned bias of each head against the offset, one panel per scheme."""
    results = _check_results(results)
    train_len = check_int("train_len", train_len, minimum=2)
    if not schemes:
        raise ArgumentError("schemes must list at least one scheme")
    columns = min(3, len(schemes))
    rows = -(-len(schemes) // columns)
    fig = new_figure(WIDTH, 2.6 * rows + 0.3)
    axes = fig.subplots(rows, columns, sharey=True, squeeze=False)
    for ax in axes.flat[len(schemes):]:
        ax.axis("off")
    for ax, scheme in zip(axes.flat, schemes, strict=False):  # more slots than schemes
        key = (scheme, task, seed)
        if key not in results.biases:
            raise ArgumentError(f"no learned bias for scheme={scheme!r}, task={task!r}, seed={seed}")
        curve = results.biases[key]
        d = np.arange(curve.shape[1])
        for h, values in enumerate(curve):
            ax.plot(d, values, color=HEAD_COLORS[h % len(HEAD_COLORS)], ls=HEAD_STYLES[h % len(HEAD_STYLES)],
                    lw=1.1, label=f"head {h}")
        ax.axhline(0, color="0.3", lw=0.8)
        _offset_axis(ax, curve.shape[1], train_len, SMALL_OFFSET_TICKS)
        ax.set_title(textwrap.fill(results.labels.get(scheme, scheme), 30), fontsize=SMALL)
    for ax in axes[-1]:
        ax.set_xlabel("d = i − j (key d steps back)")
    for ax in axes[:, 0]:
        ax.set_ylabel("bias (logit units)")
    spare = axes.flat[-1] if len(schemes) < axes.size else None
    note = f"grey: offsets d ≥ {train_len},\nin no training sequence\nstart value of every bias: 0"
    if spare is not None:  # the empty slot holds the legend
        spare.legend(*axes.flat[0].get_legend_handles_labels(), loc="center", title=note)
    else:
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside right center", title=note)
    names = ", ".join(results.labels.get(s, s) for s in schemes)
    return describe(fig, f"Learned bias of each head against the offset d (how far back the key is), one panel per "
                         f"scheme ({names}), seed {seed}; every bias started at 0. Notice the peak at offset 3 and "
                         f"what each scheme does at the shaded offsets from {train_len} on, which no training "
                         "sequence contains.")


def mean_table_text(results, task, column="accuracy", schemes=None):
    """A text table: the mean over seeds at each length, and each seed at the longest (schemes: a subset)."""
    results = _check_results(results)
    lengths = results.lengths()
    width = max(len(results.labels.get(s, s)) for s in results.schemes())
    head = f"{task}: {column.replace('_', ' ')}, mean of seeds {results.seeds()}"
    lines = [head, f"{'scheme':<{width}}  " + "  ".join(f"{n:>5}" for n in lengths) + f"   seeds at {lengths[-1]}"]
    for scheme, means in results.mean_table(task, column):
        if schemes is not None and scheme not in schemes:
            continue
        seeds = results.values(scheme, task, lengths[-1], column)
        lines.append(f"{results.labels.get(scheme, scheme):<{width}}  " + "  ".join(f"{m:5.2f}" for m in means)
                     + "   " + " ".join(f"{v:.2f}" for v in seeds))
    return "\n".join(lines)
