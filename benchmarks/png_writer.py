"""The explorers' PNG writer (`t5lesson.common.figures.encode_png`) against Pillow's encoder.

Run: python benchmarks/png_writer.py [--repeats 15] [--only NAME ...]

Every registered explorer draws its default figure (2x pixels, as a slider move does); the same
RGBA pixels are then encoded `--repeats` times each way, taking turns so both see the same load:
- ours: `encode_png` (no row filter, zlib level 1);
- Pillow: `Image.fromarray(pixels).save(..., format="png", compress_level=1)` (its own row filters).
We print, per explorer, the median CPU time of each (on a shared machine wall-clock time also
counts waiting for a core; CPU time does not), how many times faster ours is, and how many more
bytes its file holds; then the medians over all explorers.
"""
from __future__ import annotations

import argparse
import io
import statistics
import time


def pillow_png(pixels) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def cpu_seconds(encode, pixels) -> tuple[float, int]:
    """(CPU seconds of one encoding, bytes it wrote)."""
    start = time.process_time()
    data = encode(pixels)
    return time.process_time() - start, len(data)


def compare(pixels, repeats: int) -> tuple[float, float, int, int]:
    """(median seconds ours, median seconds Pillow, bytes ours, bytes Pillow), measured in turns."""
    from t5lesson.common.figures import encode_png

    ours, theirs = [], []
    for _ in range(repeats):
        seconds, ours_bytes = cpu_seconds(encode_png, pixels)
        ours.append(seconds)
        seconds, pillow_bytes = cpu_seconds(pillow_png, pixels)
        theirs.append(seconds)
    return statistics.median(ours), statistics.median(theirs), ours_bytes, pillow_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", nargs="*", help="explorer names (default: all)")
    args = parser.parse_args()

    from t5lesson.explorers import load_all

    registry = load_all()
    print(f"{'explorer':32s} {'pixels':>11s} {'ours ms':>8s} {'Pillow ms':>9s} {'faster':>7s} {'bytes +':>8s}")
    speed, size = [], []
    for name in args.only or sorted(registry):
        pixels = registry[name]().pixels().copy()
        ours, theirs, ours_bytes, pillow_bytes = compare(pixels, args.repeats)
        speed.append(theirs / ours)
        size.append(ours_bytes / pillow_bytes - 1)
        shape = f"{pixels.shape[1]}x{pixels.shape[0]}"
        print(f"{name:32s} {shape:>11s} {ours * 1e3:8.1f} {theirs * 1e3:9.1f} {speed[-1]:6.1f}x {size[-1]:+8.0%}")
    print(f"median over {len(speed)} explorers: ours {statistics.median(speed):.1f}x faster than Pillow at level 1, "
          f"for {statistics.median(size):+.0%} bytes")


if __name__ == "__main__":
    main()
