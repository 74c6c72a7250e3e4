"""What the bias costs: this package's Toeplitz construction vs transformers' compute_bias.

Shared by `benchmarks/bias_vs_reference.py` and lesson 6. Both are timed side by side in one
process, alternating, on the same table, and their outputs are checked equal first.
"""
from __future__ import annotations

import statistics
import time

from .._validate import check_bool, check_int
from ..common.figures import describe, new_figure, styled

__all__ = ["bias_timings", "bias_timing_figure"]


def bias_timings(lengths, heads=8, repeats=3, bidirectional=True, seed=0):
    """One row per length L (q_len = k_len = L): median seconds for ours and for the reference.

    Rows are dicts: length, ours_s, reference_s, speedup, equal (outputs identical).
    """
    import torch

    from ..bias import relative_bias
    from ..reference import reference_bias_layer

    lengths = [check_int("length", n, minimum=1) for n in lengths]
    heads = check_int("heads", heads, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    bidirectional = check_bool("bidirectional", bidirectional)
    table = torch.randn(32, heads, generator=torch.Generator().manual_seed(seed))
    ref = reference_bias_layer(table, bidirectional)
    rows = []
    with torch.no_grad():
        for n in lengths:
            ours = lambda n=n: relative_bias(table, n, n, bidirectional=bidirectional)
            theirs = lambda n=n: ref.compute_bias(n, n)[0]
            equal = bool(torch.equal(ours(), theirs()))
            times = {ours: [], theirs: []}
            for _ in range(repeats):
                for fn in (ours, theirs):
                    start = time.perf_counter()
                    fn()
                    times[fn].append(time.perf_counter() - start)
            ours_s, ref_s = statistics.median(times[ours]), statistics.median(times[theirs])
            rows.append({"length": n, "ours_s": ours_s, "reference_s": ref_s, "speedup": ref_s / ours_s,
                         "equal": equal})
    return rows


@styled
def bias_timing_figure(rows):
    """Time per call against L on log-log axes, both implementations, with an L² guide line."""
    from matplotlib.ticker import NullLocator

    lengths = [r["length"] for r in rows]
    fig = new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    ax.loglog(lengths, [r["reference_s"] * 1e3 for r in rows], "o-", label="transformers compute_bias")
    ax.loglog(lengths, [r["ours_s"] * 1e3 for r in rows], "s-", label="t5lesson relative_bias")
    guide = [rows[-1]["reference_s"] * 1e3 * (n / lengths[-1]) ** 2 for n in lengths]
    ax.loglog(lengths, guide, "k:", label="slope of L²")
    ax.set(xlabel="sequence length L (q_len = k_len)", ylabel="time per call (ms)",
           title="building the [heads, L, L] bias, one thread")
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(frameon=False)
    return describe(fig, f"Time per call in milliseconds against sequence length L from {lengths[0]} to {lengths[-1]} "
                    "(log-log) for transformers' compute_bias and t5lesson's relative_bias, with a dotted guide of "
                    "slope L². Notice that both grow like L² for long sequences and how far apart the two lines are.")
