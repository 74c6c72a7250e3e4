"""Execute notebooks top to bottom in a fresh kernel and store them with their outputs.

Run: python tools/run_notebook.py notebooks/01_x.ipynb [more.ipynb ...] [--timeout 120] [--check]

Why not `jupyter nbconvert --execute`: nbclient can stall on cells that display widgets (it only
notices the kernel's reply when the per-cell timeout expires, in about half of fresh runs here).
`t5lesson.grading.authoring.generate.execute` (the same code that refreshes solutions/) always runs with
a per-cell timeout, so a stall costs at most that long instead of hanging. Each run prints the
notebook's wall time; a time near a multiple of the timeout means a stall happened. Lessons
run with the repository as working folder; solution notebooks in their own folder, as nbval and
`generate --execute` run them (a free-text `check("qN")` reads the saved notebook it finds there).
--check executes without writing and fails on error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t5lesson.grading.authoring.generate import execute

ROOT = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=120, help="per-cell limit in seconds")
    parser.add_argument("--check", action="store_true", help="execute but do not write")
    args = parser.parse_args()
    for path in args.paths:
        cwd = path.resolve().parent if path.resolve().parent.name == "solutions" else ROOT
        seconds = execute(path, args.timeout, cwd=cwd, write=not args.check)
        print(f"{path}: executed in {seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
