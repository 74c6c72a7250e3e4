"""Execute notebooks top to bottom in a fresh kernel and store them with their outputs.

Run: python tools/run_notebook.py notebooks/01_x.ipynb [more.ipynb ...] [--timeout 120] [--check]

Why not `jupyter nbconvert --execute`: nbclient can stall on cells that display widgets (it only
notices the kernel's reply when the per-cell timeout expires, in about half of fresh runs here).
`execute` below always runs with a per-cell timeout, so a stall costs at most that long instead of
hanging. Each run prints the notebook's wall time; a time near a multiple of the timeout means a
stall happened. Lessons run with the repository as working folder; solution notebooks in their own
folder, as nbval runs them (a free-text `check("qN")` reads the saved notebook it finds there).
After re-running a solution notebook, `t5grade generate` makes its exercise again.
--check executes without writing and fails on error.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, timeout: int = 300, *, cwd: Path | None = None, write: bool = True) -> float:
    """Run a notebook top to bottom in a fresh kernel (in `cwd`, default its folder); store it with
    its outputs unless write=False; return the wall time in seconds. The one way this course runs a
    stored notebook, lesson or solution.

    Every cell gets a timeout (nbclient can miss the kernel's reply on cells that display widgets).
    Widget state is not stored: every widget output also carries a static picture or a plain-text
    line for a reader without a kernel, and the state would copy every picture into the metadata.
    """
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, iopub_timeout=10,
                            shutdown_kernel="immediate", resources={"metadata": {"path": str(cwd or path.parent)}},
                            store_widget_state=False)
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)  # state stored by an earlier run
    if write:
        nbformat.write(nb, path)
    return seconds


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
