"""Explorer update speed: in-place update + PNG render vs rebuilding the figure each move.

Run: python benchmarks/explorers.py [--moves 15] [--only NAME ...] [--against CHECKOUT [--rounds 3]]

For every registered explorer, at its default size (2x pixels, as shown in the notebook), we
make the same sequence of parameter changes two ways, side by side in this process:
- in place: `explorer.update(**change)` then `to_png()` (what a slider move costs in the kernel);
- naive rebuild: a new explorer, figure and artists built from scratch, then `to_png()` (what an
  `interact` cell that redraws a new figure on every move costs).
Each change is one control moved to a random value a learner can reach (a slider stop, an
option). We print the median wall-clock time of each, the ratio, the median and 95th
percentile CPU time of the in-place update (on a busy shared machine wall-clock time also
counts waiting for a core; CPU time does not), and the median size of its PNG (what the
browser receives and decodes on every move). Target: median in-place update under
`t5lesson.explorers.base.UPDATE_BUDGET_MS`.

--against CHECKOUT compares with another checkout of the course (its own `.venv`, say the main
branch before a change): one worker process per checkout, each importing its own `t5lesson`,
and the same moves measured in both, taking turns explorer by explorer for `--rounds` rounds,
so that both see the same load. It prints the in-place medians (wall and CPU) of each, their
ratio, and the load average before and after.

--compare-glyph-cache measures what the glyph cache (`render.cache_text`) is worth against plain
matplotlib text drawing: three explorers of each kind make the same moves, taking turns move by
move, for `--rounds` rounds: one drawing text the plain way, one caching whole strings only (the
cache's first level), one with the whole cache (whole strings, and each glyph's bitmap for strings
not seen before); each with caches of its own, empty at the start. It prints, per explorer, the
median in-place update (wall and CPU) of each, the CPU time the whole cache and its first level
save as a share of the plain update, and how many strings a move draws. Rule: the cache stays if
the median, over the explorers that draw text on a move (the others cannot gain), of the CPU time
it saves is more than 10 % of a plain update.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path


def target_s() -> float:
    """The budget of one move in seconds, as this checkout's package states it."""
    from t5lesson.explorers.base import UPDATE_BUDGET_MS

    return UPDATE_BUDGET_MS / 1e3


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


def percentile(values, q):
    """The q-th percentile (0-100) of values, linear between the closest ranks."""
    values = sorted(values)
    position = (len(values) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def bench(cls, count, rebuild=True):
    """Of an in-place update + PNG: median wall s, median and 95th percentile CPU s, median PNG bytes;
    and the median wall s of a rebuild (None without `rebuild`)."""
    explorer = cls()
    explorer.to_png()  # warm up fonts and caches
    values = dict(explorer.values)
    in_place, cpu, sizes, rebuilt = [], [], [], []
    for change in moves(cls, count):
        values.update(change)
        start, start_cpu = time.perf_counter(), time.process_time()
        png = explorer.update(**change).to_png()
        in_place.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        sizes.append(len(png))
        if rebuild:
            start = time.perf_counter()
            cls(**values).to_png()
            rebuilt.append(time.perf_counter() - start)
    return (statistics.median(in_place), statistics.median(cpu), percentile(cpu, 95), statistics.median(sizes),
            statistics.median(rebuilt) if rebuilt else None)


def _plain_text(explorer):
    """Make `explorer` draw text the plain matplotlib way, counting the strings it draws."""
    renderer = explorer.fig.canvas.get_renderer()
    plain = renderer.draw_text
    explorer.strings = 0

    def draw_text(*args, **kwargs):
        explorer.strings += 1
        return plain(*args, **kwargs)

    renderer.draw_text = draw_text  # an instance attribute: `cache_text` leaves such a renderer alone
    return explorer


GLYPH_SIDES = ("plain", "strings", "glyphs")  # no cache; whole strings only; strings and glyph bitmaps


def bench_glyph_cache(cls, count):
    """The same moves, taking turns, without the cache, with whole strings cached, and with glyph bitmaps
    cached too (each side with caches of its own, empty at the start): {side: (walls, cpus)}, and the
    number of strings each plain move drew."""
    from t5lesson.explorers import render

    caches = {side: ({}, {}) for side in GLYPH_SIDES}  # per side: _GLYPHS, _GLYPH_BITMAPS
    saved = render._GLYPHS, render._GLYPH_BITMAPS, render._GLYPH_LEVEL
    explorers, times, strings = {}, {side: ([], []) for side in GLYPH_SIDES}, []
    try:
        for side in GLYPH_SIDES:
            render._GLYPHS, render._GLYPH_BITMAPS = caches[side]
            render._GLYPH_LEVEL = saved[2] and side == "glyphs"  # read when `cache_text` wraps the renderer
            explorers[side] = _plain_text(cls()) if side == "plain" else cls()
            explorers[side].to_png()
        for change in moves(cls, count):
            for side, explorer in explorers.items():
                render._GLYPHS, render._GLYPH_BITMAPS = caches[side]
                explorer.strings = 0
                start, start_cpu = time.perf_counter(), time.process_time()
                explorer.update(**change).to_png()
                times[side][0].append(time.perf_counter() - start)
                times[side][1].append(time.process_time() - start_cpu)
            strings.append(explorers["plain"].strings)
    finally:
        render._GLYPHS, render._GLYPH_BITMAPS, render._GLYPH_LEVEL = saved
    return times, strings


def compare_glyph_cache(names, count, rounds):
    """Print the glyph cache's worth per explorer and the median over those that draw text on a move; 0."""
    from t5lesson.explorers import load_all

    registry = load_all()
    names = names or sorted(registry)
    print(f"{'explorer':<28} {'plain ms':>8} {'(cpu)':>6} {'strings':>8} {'(cpu)':>6} {'glyphs':>7} {'(cpu)':>6} "
          f"{'saved':>6} {'str.':>6} {'texts':>5}")
    worth = {}
    for name in names:
        walls = {side: [] for side in GLYPH_SIDES}
        cpus = {side: [] for side in GLYPH_SIDES}
        strings = []
        for _ in range(rounds):
            times, drawn = bench_glyph_cache(registry[name], count)
            for side, (wall, cpu) in times.items():
                walls[side] += wall
                cpus[side] += cpu
            strings += drawn
        wall = {side: statistics.median(walls[side]) for side in GLYPH_SIDES}
        cpu = {side: statistics.median(cpus[side]) for side in GLYPH_SIDES}
        saved = 1 - cpu["glyphs"] / cpu["plain"]  # the whole cache, as a share of a plain update
        strings_only = 1 - cpu["strings"] / cpu["plain"]  # its first level alone
        if statistics.median(strings) > 0:
            worth[name] = (saved, strings_only)
        print(f"{name:<28} " + " ".join(f"{wall[side] * 1e3:>{w}.1f} {cpu[side] * 1e3:>6.1f}"
                                         for side, w in zip(GLYPH_SIDES, (8, 8, 7), strict=True))
              + f" {saved * 100:>5.1f}% {strings_only * 100:>5.1f}% {statistics.median(strings):>5.0f}")
    print(f"(ms, medians over {rounds} x {count} moves, taking turns; saved: the CPU time of a plain update that "
          "the whole cache saves; str.: that whole strings alone save; texts: strings a move draws)")
    if worth:
        print(f"explorers that draw text on a move: {', '.join(worth)}\nmedian over them: the glyph cache saves "
              f"{statistics.median(w for w, _ in worth.values()) * 100:.1f} % of an update, whole strings alone "
              f"{statistics.median(s for _, s in worth.values()) * 100:.1f} % (it stays if > 10 %)")
    return 0


def worker(count):
    """Answer explorer names read from stdin with one JSON line each: {"wall": s, "cpu": s}."""
    from t5lesson.explorers import load_all

    registry = load_all()
    print(json.dumps({"ready": sorted(registry), "module": __import__("t5lesson").__file__}), flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name not in registry:
            print(json.dumps({"missing": name}), flush=True)
            continue
        wall, cpu, _, _, _ = bench(registry[name], count, rebuild=False)
        print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


class Worker:
    """A worker process in a checkout, with that checkout's Python (its .venv if it has one)."""

    def __init__(self, checkout: Path, count: int):
        python = checkout / ".venv" / "bin" / "python"
        self.proc = subprocess.Popen([str(python if python.exists() else sys.executable), str(Path(__file__).resolve()),
                                      "--worker", "--moves", str(count)], cwd=checkout, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env={**os.environ, "MPLBACKEND": "agg"})
        hello = json.loads(self.proc.stdout.readline())
        self.names, self.module = hello["ready"], hello["module"]

    def measure(self, name):
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def compare(against: Path, names, count, rounds):
    here = Path(__file__).resolve().parents[1]
    load_before = os.getloadavg()
    old, new = Worker(against, count), Worker(here, count)
    try:
        names = [n for n in (names or new.names) if n in old.names]
        print(f"old: {old.module}\nnew: {new.module}\nload average before: "
              + " ".join(f"{x:.2f}" for x in load_before))
        results = {n: {"old": [], "new": []} for n in names}
        for _ in range(rounds):
            for name in names:  # taking turns, so that both see the same load
                for side, w in (("old", old), ("new", new)):
                    results[name][side].append(w.measure(name))
    finally:
        old.close()
        new.close()
    print(f"{'explorer':<28} {'old wall':>9} {'old cpu':>8} {'new wall':>9} {'new cpu':>8} {'cpu ratio':>9}  "
          f"(ms, median over {rounds} rounds of {count} moves; target < {target_s() * 1e3:.0f} ms)")
    slow, target = [], target_s()
    for name, sides in results.items():
        med = {side: {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu")}
               for side, runs in sides.items()}
        print(f"{name:<28} {med['old']['wall'] * 1e3:>9.1f} {med['old']['cpu'] * 1e3:>8.1f} "
              f"{med['new']['wall'] * 1e3:>9.1f} {med['new']['cpu'] * 1e3:>8.1f} "
              f"{med['old']['cpu'] / med['new']['cpu']:>8.2f}x  {'ok' if med['new']['wall'] < target else 'SLOW'}")
        if med["new"]["wall"] >= target:
            slow.append(name)
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg())
          + f" (on {os.cpu_count()} CPUs: wall-clock times include waiting for one)")
    return 1 if slow else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=15)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--against", type=Path, help="another checkout to compare with, side by side")
    parser.add_argument("--rounds", type=int, default=3, help="with --against: rounds of taking turns")
    parser.add_argument("--compare-glyph-cache", action="store_true",
                        help="the glyph cache against plain matplotlib text, side by side")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.moves)
    if args.compare_glyph_cache:
        return compare_glyph_cache(args.only, args.moves, args.rounds)
    if args.against is not None:
        return compare(args.against.resolve(), args.only, args.moves, args.rounds)
    from t5lesson.explorers import load_all

    registry = load_all()
    names = args.only or sorted(registry)
    target = target_s()
    print(f"{'explorer':<28} {'in place ms':>12} {'(cpu ms)':>9} {'(cpu p95)':>9} {'PNG kB':>7} {'rebuild ms':>11} "
          f"{'ratio':>6}  target < {target * 1e3:.0f} ms")
    slow = []
    for name in names:
        fast, cpu, cpu_tail, png_bytes, naive = bench(registry[name], args.moves)
        print(f"{name:<28} {fast * 1e3:>12.1f} {cpu * 1e3:>9.1f} {cpu_tail * 1e3:>9.1f} {png_bytes / 1e3:>7.0f} "
              f"{naive * 1e3:>11.1f} {naive / fast:>5.1f}x  {'ok' if fast < target else 'SLOW'}")
        if fast >= target:
            slow.append(name)
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
