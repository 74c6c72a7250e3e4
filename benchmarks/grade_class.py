"""Time the class grader on 100 ordinary submissions: `python benchmarks/grade_class.py [--count N]`.

The submissions are the exercise-01 solution, a partly right one and a blank one, in turn
(tests/grading/synthetic_class.py makes them). The grader runs exactly as an instructor would run it,
`python -m t5lesson.grading.grade`, with its default limits, isolation and one job per core.
Target: under two minutes for 100 submissions on 2 cores.
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--target", type=float, default=120.0, help="seconds; exit 1 when slower")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "submissions", Path(tmp) / "report"
        copies(folder, args.count)
        start = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "t5lesson.grading.grade", str(folder), "--out", str(out)],
                                cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return 1
        rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
        isolation = next(line for line in (out / "summary.md").read_text().splitlines() if "isolation" in line)
    totals = sorted({row["total"] for row in rows})
    statuses = sorted({row["status"] for row in rows})
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"graded {len(rows)} submissions in {seconds:.1f} s on {cores} cores "
          f"({seconds / len(rows):.2f} s each, wall); totals {totals}; status {statuses}; {isolation.strip('- ')}")
    ok = len(rows) == args.count and statuses == ["graded"] and seconds < args.target
    print(f"target {args.target:.0f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
