"""How fast the lessons' helpers are, where their docstrings say why they are built the way they are.

Run: python benchmarks/lesson_helpers.py [--repeats 9]

- `encode_png` keeps RGBA: dropping the alpha of an opaque figure gives zlib less to compress,
  but copying the three-byte pixels out costs more. We time both on a full-width figure.
- `compact_png` (what a notebook stores) against `encode_png` (what a slider move sends): the
  compact one is too slow for slider moves, a few times smaller.
- `train_recall` (lesson 2) with its defaults, the run a lesson cell makes.

Each figure is the median wall-clock time of `--repeats` runs, with the CPU time beside it (on a
busy shared machine wall time also counts waiting for a core; CPU time does not).
"""
from __future__ import annotations

import argparse
import statistics
import time
import zlib

import numpy as np

from t5lesson.common.figures import WIDTH, compact_png, encode_png, new_figure, png_file, png_shape, style


def timed(function, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of `repeats` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def full_width_pixels() -> np.ndarray:
    """The RGBA pixels of a full-width figure with a few curves, as a lesson draws one."""
    fig = new_figure(WIDTH, 3.9)
    ax = fig.subplots()
    x = np.linspace(0, 10, 400)
    for k in range(4):
        ax.plot(x, np.sin(x + k), label=f"curve {k}")
    ax.legend()
    with style():
        fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())


def encode_rgb(pixels) -> bytes:
    """`encode_png` with the alpha dropped first: the alternative its docstring turns down."""
    rgb = np.ascontiguousarray(pixels[..., :3])
    height, width, channels = png_shape(rgb)
    rows = np.empty((height, width * channels + 1), dtype=np.uint8)
    rows[:, 0] = 0
    rows[:, 1:] = rgb.reshape(height, -1)
    return png_file(width, height, channels, zlib.compress(rows, 1))


def train_recall_defaults():
    from t5lesson.lessons.folding import train_recall

    return train_recall("folded")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    pixels = full_width_pixels()
    print(f"full-width figure: {pixels.shape[1]} x {pixels.shape[0]} pixels")
    rows = [
        ("encode_png (RGBA, slider moves)", lambda: encode_png(pixels)),
        ("encode_png after dropping alpha", lambda: encode_rgb(pixels)),
        ("compact_png (stored in notebooks)", lambda: compact_png(pixels)),
        ("train_recall('folded'), defaults (lesson 2)", train_recall_defaults),
    ]
    for name, function in rows:
        wall, cpu = timed(function, args.repeats)
        print(f"{name:42s} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU")
    sizes = {"encode_png": len(encode_png(pixels)), "compact_png": len(compact_png(pixels))}
    print("bytes: " + ", ".join(f"{name} {size:,}" for name, size in sizes.items()))


if __name__ == "__main__":
    main()
