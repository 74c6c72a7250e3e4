"""Explorer update speed: in-place update + PNG render vs rebuilding the figure each move.

Run: python benchmarks/explorers.py [--moves 15] [--only NAME ...]

For every registered explorer, at its default size (2x pixels, as shown in the notebook), we
make the same sequence of parameter changes two ways, side by side in this process:
- in place: `explorer.update(**change)` then `to_png()` (what a slider move costs in the kernel);
- naive rebuild: a new explorer, figure and artists built from scratch, then `to_png()` (what an
  `interact` cell that redraws a new figure on every move costs).
Each change is one control moved to a random value a learner can reach (a slider stop, an
option). We print the median wall-clock time of each, the ratio, and the median CPU time of
the in-place update (on a busy shared machine wall-clock time also counts waiting for a core;
CPU time does not). Target: median in-place update under 30 ms.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from t5lesson.explorers import load_all


def moves(cls, count, seed=0):
    """`count` single-parameter changes drawn from each control's range, reproducibly."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        p = cls.params[i % len(cls.params)]
        if p.options is not None:
            value = rng.choice(p.options)
        elif p.stops is not None:
            value = rng.choice(p.stops)
        elif isinstance(p.default, bool):
            value = rng.choice([True, False])
        elif isinstance(p.default, int):
            step = int(p.step or 1)
            value = p.min + step * rng.randrange((int(p.max) - int(p.min)) // step + 1)
        else:  # a float slider's steps
            step = p.step or (p.max - p.min) / 100
            value = min(p.max, p.min + step * rng.randrange(round((p.max - p.min) / step) + 1))
        out.append({p.name: value})
    return out


def bench(cls, count):
    explorer = cls()
    explorer.to_png()  # warm up fonts and caches
    values = dict(explorer.values)
    in_place, cpu, rebuild = [], [], []
    for change in moves(cls, count):
        values.update(change)
        start, start_cpu = time.perf_counter(), time.process_time()
        explorer.update(**change).to_png()
        in_place.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        start = time.perf_counter()
        cls(**values).to_png()
        rebuild.append(time.perf_counter() - start)
    return statistics.median(in_place), statistics.median(cpu), statistics.median(rebuild)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=15)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    registry = load_all()
    names = args.only or sorted(registry)
    print(f"{'explorer':<28} {'in place ms':>12} {'(cpu ms)':>9} {'rebuild ms':>11} {'ratio':>6}  target < 30 ms")
    slow = []
    for name in names:
        fast, cpu, naive = bench(registry[name], args.moves)
        print(f"{name:<28} {fast * 1e3:>12.1f} {cpu * 1e3:>9.1f} {naive * 1e3:>11.1f} {naive / fast:>5.1f}x  "
              f"{'ok' if fast < 0.03 else 'SLOW'}")
        if fast >= 0.03:
            slow.append(name)
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
