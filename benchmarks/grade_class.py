"""Submissions per minute of the class grader, and what that means for a large class.

    python benchmarks/grade_class.py                  # 100 submissions (a few minutes on 2 cores)
    python benchmarks/grade_class.py --count 1000     # the same at 1,000 (about ten times longer)
    python benchmarks/grade_class.py --against /tmp/oldmain   # the same folder with another checkout, in turn

The submissions are, in turn, the solution and the handed-out (blank) notebook of --exercise
(default 01), or with --exercise 03 the synthetic class's full, partial and blank ones
(tests/grading/synthetic_class.py). Each is graded as an instructor grades it, `t5grade grade`,
with its default limits and one job per core. --against DIR grades the same folder with the
checkout in DIR too, alternating the two REPEAT times: `python -m t5lesson.grade` run from DIR
with DIR/.venv/bin/python where there is one (so that the other checkout's kernels import its
own package, not this one's), else this interpreter; the output names the interpreter of each
side and the load average, since on a shared machine the ratio says more than the rates. The
report gives the rate (submissions per minute, wall clock, start-up included) and projects it
to a class of --class-size (2,000) on one machine like this one.
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


def python_of(checkout: Path) -> str:
    """The interpreter that grades with `checkout`: its own virtual environment's, else this one."""
    own = checkout / ".venv" / "bin" / "python"
    return str(own) if checkout != ROOT and own.exists() else sys.executable


def _grade(args: list[str], isolation: str, checkout: Path = ROOT) -> float:
    start = time.monotonic()
    # a checkout from before the one command (no `grade` subcommand) takes the folder first
    sub = ["grade"] if (checkout / "t5lesson" / "grading" / "cli.py").exists() else []
    command = [python_of(checkout), "-m", "t5lesson.grade", *sub, *args, "--quiet", "--isolation", isolation]
    result = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the grader failed:\n{result.stderr}")
    return time.monotonic() - start


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def projection(rate: float, class_size: int) -> str:
    """A line of arithmetic: a class of `class_size` at `rate` per minute."""
    return f"a class of {class_size:,} at {rate:.1f} per minute: {_hours(class_size / rate * 60)} on this machine"


def _class(folder: Path, count: int, exercise: str) -> None:
    if exercise == "03":
        copies(folder, count)
        return
    import nbformat

    [name] = [p.name for p in (ROOT / "solutions").glob(f"{exercise}_*.ipynb")]
    made = [nbformat.writes(nbformat.read(ROOT / where / name, as_version=4)) for where in ("solutions", "exercises")]
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"student{i:03d}.ipynb").write_text(made[i % 2], encoding="utf-8")


def compare(folder: Path, tmp: Path, other: Path, isolation: str, repeat: int, count: int) -> list[str]:
    """Grade `folder` with this checkout and `other` in turn; lines with each rate and their ratio."""
    times = {"this": [], "other": []}
    for k in range(repeat):
        for who, checkout in (("this", ROOT), ("other", other))[:: 1 if k % 2 == 0 else -1]:
            times[who].append(_grade([str(folder), "--out", str(tmp / f"{who}{k}")], isolation, checkout))
    rate = {who: count * 60 / min(t) for who, t in times.items()}
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return [f"side by side, {count} submissions, {repeat} turns each, best of each: this checkout "
            f"{rate['this']:.1f} per minute ({', '.join(f'{t:.0f} s' for t in times['this'])}; {python_of(ROOT)}), "
            f"{other} {rate['other']:.1f} per minute ({', '.join(f'{t:.0f} s' for t in times['other'])}; "
            f"{python_of(other)}); ratio {rate['this'] / rate['other']:.2f}; load average after (1, 5, 15 min) {load}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--class-size", type=int, default=2000)
    parser.add_argument("--exercise", default="01", help="01-06 (solution and blank in turn), or 03 (synthetic class)")
    parser.add_argument("--against", type=Path, help="another checkout (e.g. a git worktree of an older commit)")
    parser.add_argument("--repeat", type=int, default=2, help="turns of each checkout with --against")
    parser.add_argument("--isolation", choices=("auto", "none"), default="auto",
                        help="as the grader's option (auto refuses where kernels cannot be isolated)")
    parser.add_argument("--target", type=float, default=25.0,
                        help="submissions per minute; exit 1 when slower (default 25: 50 in two minutes)")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "submissions", Path(tmp) / "report"
        _class(folder, args.count, args.exercise)
        if args.against:
            for line in compare(folder, Path(tmp), args.against.resolve(), args.isolation, args.repeat, args.count):
                print(line)
        seconds = _grade([str(folder), "--out", str(out)], args.isolation)
        rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
        isolation = next(line for line in (out / "summary.md").read_text().splitlines() if "isolation" in line)
    rate = len(rows) * 60 / seconds
    statuses = sorted({row["status"] for row in rows})
    totals = sorted({row["total"] for row in rows})
    print(f"graded {len(rows)} submissions in {seconds:.1f} s on {cores} cores (load average at start {load:.1f}): "
          f"{rate:.1f} submissions per minute, {seconds / len(rows):.2f} s each (wall, start-up included); "
          f"totals {totals}; status {statuses}; {isolation.strip('- ')}")
    print(projection(rate, args.class_size))
    ok = len(rows) == args.count and statuses == ["graded"] and rate >= args.target
    print(f"target {args.target:.0f} per minute: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
