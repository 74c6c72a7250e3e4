"""Lesson 8's numbers and figure: what a materialised [batch, heads, L, L] tensor costs, against the per-offset bias.

    gib(batch, heads, q_len, k_len, dtype)   the size of one such tensor, in GiB (2 ** 30 bytes)
    memory_lines(lengths, heads)             a printed table: one [1, heads, L, L] tensor in fp32 and bf16,
                                             and the [heads, 2L - 1] per-offset vector FlexAttention reads
    memory_figure(lengths, heads)            the same, drawn on log-log axes

Sizes are element counts times the bytes of one element (`torch.finfo(dtype).bits // 8`): arithmetic,
the same on every machine.
"""
from __future__ import annotations

import torch

from ..common.figures import describe, new_figure, series_style, styled

__all__ = ["gib", "memory_lines", "memory_figure", "LENGTHS"]

LENGTHS = (512, 2048, 8192, 16384, 65536)
GIB = 2 ** 30


def _bytes(dtype) -> int:
    return torch.finfo(dtype).bits // 8


def gib(batch: int, heads: int, q_len: int, k_len: int, dtype=torch.float32) -> float:
    """GiB of one [batch, heads, q_len, k_len] tensor of `dtype`."""
    return batch * heads * q_len * k_len * _bytes(dtype) / GIB


def _per_offset_kib(heads: int, length: int, dtype=torch.float32) -> float:
    return heads * (2 * length - 1) * _bytes(dtype) / 2 ** 10


def memory_lines(lengths=LENGTHS, heads: int = 8) -> str:
    """One line per length: a [1, heads, L, L] tensor in fp32 and bf16, and the per-offset vector (fp32)."""
    lines = [f"{'L':>7}  {'[1, H, L, L] fp32':>18}  {'bf16':>10}  {'per-offset [H, 2L-1] fp32':>26}"]
    for n in lengths:
        lines.append(f"{n:>7,}  {gib(1, heads, n, n):>14.3f} GiB  {gib(1, heads, n, n, torch.bfloat16):>6.3f} GiB"
                     f"  {_per_offset_kib(heads, n):>22.1f} KiB")
    return "\n".join(lines)


@styled
def memory_figure(lengths=LENGTHS, heads: int = 8):
    """Log-log: GiB of a [1, heads, L, L] tensor (fp32, bf16) and of the per-offset vector, against L."""
    import numpy as np

    grid = np.geomspace(lengths[0], lengths[-1], 50)
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot()
    series = [("[1, H, L, L] in fp32 (the eager bias, or scores)", lambda n: gib(1, heads, n, n)),
              ("[1, H, L, L] in bf16", lambda n: gib(1, heads, n, n, torch.bfloat16)),
              ("per-offset vector [H, 2L - 1], fp32", lambda n: _per_offset_kib(heads, n) * 2 ** 10 / GIB)]
    for k, (label, size) in enumerate(series):
        style = series_style(k)
        ax.plot(grid, [size(n) for n in grid], color=style["color"], linestyle=style["linestyle"], label=label)
        ax.plot(lengths, [size(n) for n in lengths], color=style["color"], marker=style["marker"], linestyle="none")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L (queries = keys)")
    ax.set_ylabel("GiB")
    ax.set_title(f"One tensor's memory, H = {heads} heads")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left")
    return describe(fig, f"Log-log plot of memory against sequence length for H = {heads}. A [1, H, L, L] tensor "
                         "grows with the square of L: about 8 GiB in fp32 and 4 GiB in bf16 at L = 16,384. "
                         "The per-offset vector FlexAttention reads grows linearly: 4 MiB at L = 65,536, where "
                         "one fp32 [1, H, L, L] tensor takes 128 GiB.")
