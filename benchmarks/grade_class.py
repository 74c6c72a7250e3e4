"""Submissions per minute of the class grader, and what that means for a large class.

    python benchmarks/grade_class.py                  # 100 submissions (a few minutes on 2 cores)
    python benchmarks/grade_class.py --count 1000     # the same at 1,000 (about ten times longer)
    python benchmarks/grade_class.py --shards 4       # also grade as 4 shards in turn, then merge
    python benchmarks/grade_class.py --exercise 06 --count 30 --against OLD_CHECKOUT
        # exercise 6 (the module question), graded by this checkout and by OLD_CHECKOUT's grader
        # (e.g. `git archive REV | tar -x -C OLD_CHECKOUT`) in one run, the same submissions

The submissions are the exercise-01 solution, a partly right one and a blank one, in turn
(tests/grading/synthetic_class.py makes them). The grader runs exactly as an instructor runs
it, `python -m t5lesson.grading.grade`, with its default limits and one job per core. The
report gives the rate (submissions per minute, wall clock, start-up included) and projects it
to a class of --class-size (2,000): hours on one machine like this one, and on N machines
(`--shard K/N`, then `merge`). With --shards the shards run one after another here, so their
sum is the time one machine needs, and the merge is checked to equal the single run.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "grading"))

from synthetic_class import copies  # noqa: E402


def _grade(args: list[str], isolation: str, root: Path = ROOT) -> float:
    start = time.monotonic()
    command = [sys.executable, "-m", "t5lesson.grading.grade", *args, "--quiet", "--isolation", isolation]
    env = dict(os.environ, PYTHONPATH=str(root))  # the grader (and its kernels' t5lesson) of that checkout
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"the grader failed:\n{result.stderr}")
    return time.monotonic() - start


def exercise6_copies(folder: Path, count: int) -> None:
    """`count` submissions of exercise 6: the solution, one with the padding mask left out, and the blank
    exercise, in turn."""
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    solution = nbformat.read(ROOT / "solutions" / "06_t5_layer.ipynb", as_version=4)
    partial = nbformat.read(ROOT / "solutions" / "06_t5_layer.ipynb", as_version=4)
    [cell] = [c for c in partial.cells if c.metadata.get("t5lesson", {}).get("cell") == "q4-answer"]
    cell.source = cell.source.replace("allowed = allowed & attention_mask.bool()",
                                      "allowed = allowed | attention_mask.bool()")  # padding not masked
    blank = nbformat.read(ROOT / "exercises" / "06_t5_layer.ipynb", as_version=4)
    for i in range(count):
        nbformat.write((solution, partial, blank)[i % 3], folder / f"student{i:03d}.ipynb")


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def projection(rate: float, class_size: int, machines=(1, 4, 10, 20, 50)) -> list[str]:
    """Lines of arithmetic: a class of `class_size` at `rate` per minute per machine."""
    one = class_size / rate * 60
    lines = [f"a class of {class_size:,} at {rate:.1f} per minute per machine like this one:"]
    for n in machines:
        lines.append(f"  {n:>3} machine(s) (--shard K/{n}): {_hours(one / n)} each, "
                     f"{-(-class_size // n):,} submissions per shard")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--shards", type=int, default=0, help="also grade as N shards in turn and merge them")
    parser.add_argument("--class-size", type=int, default=2000)
    parser.add_argument("--isolation", choices=("auto", "none"), default="auto",
                        help="as the grader's option (auto refuses where kernels cannot be isolated)")
    parser.add_argument("--target", type=float, default=25.0,
                        help="submissions per minute; exit 1 when slower (default 25: 50 in two minutes)")
    parser.add_argument("--exercise", choices=("03", "06"), default="03",
                        help="03: the synthetic class of exercise 3; 06: exercise 6's module question")
    parser.add_argument("--against", type=Path, help="another checkout whose grader grades the same submissions, "
                                                     "right after this one's")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "submissions", Path(tmp) / "report"
        if args.exercise == "06":
            exercise6_copies(folder, args.count)
        else:
            copies(folder, args.count)
        seconds = _grade([str(folder), "--out", str(out)], args.isolation)
        against = None
        if args.against:
            print(f"this checkout: {args.count} submissions in {seconds:.1f} s", flush=True)
            other = Path(tmp) / "against"
            against = _grade([str(folder), "--out", str(other)], args.isolation, root=args.against.resolve())
            old_rows = list(csv.DictReader(io.StringIO((other / "gradebook.csv").read_text())))
        rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
        isolation = next(line for line in (out / "summary.md").read_text().splitlines() if "isolation" in line)
        shard_lines = []
        if args.shards:
            times = [_grade([str(folder), "--out", str(Path(tmp) / f"shard{k}"), "--shard", f"{k}/{args.shards}"],
                            args.isolation)
                     for k in range(1, args.shards + 1)]
            merged = Path(tmp) / "merged"
            subprocess.run([sys.executable, "-m", "t5lesson.grade", "merge",
                            *[str(Path(tmp) / f"shard{k}") for k in range(1, args.shards + 1)], "--out", str(merged)],
                           cwd=ROOT, check=True, capture_output=True)
            same = all((out / name).read_bytes() == (merged / name).read_bytes()
                       for name in ("gradebook.csv", "free_text.csv", "summary.md", "report.html", "grades.json"))
            shard_lines = [f"{args.shards} shards in turn: {', '.join(f'{t:.0f} s' for t in times)} "
                           f"(sum {sum(times):.0f} s; the slowest is the wall time on {args.shards} machines); "
                           f"merged report identical to the single run: {'yes' if same else 'NO'}"]
    rate = len(rows) * 60 / seconds
    statuses = sorted({row["status"] for row in rows})
    totals = sorted({row["total"] for row in rows})
    print(f"graded {len(rows)} submissions in {seconds:.1f} s on {cores} cores (load average at start {load:.1f}): "
          f"{rate:.1f} submissions per minute, {seconds / len(rows):.2f} s each (wall, start-up included); "
          f"totals {totals}; status {statuses}; {isolation.strip('- ')}")
    if against is not None:
        old_rate = len(old_rows) * 60 / against
        old_totals = sorted({r["total"] for r in old_rows})
        print(f"{args.against}: {len(old_rows)} submissions in {against:.1f} s: {old_rate:.1f} per minute; "
              f"this checkout is {rate / old_rate:.2f} times as fast (totals there {old_totals})")
    for line in shard_lines + projection(rate, args.class_size):
        print(line)
    ok = len(rows) == args.count and statuses == ["graded"] and rate >= args.target
    print(f"target {args.target:.0f} per minute: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
