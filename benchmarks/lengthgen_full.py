"""Run the full length-generalisation grid and store it for lesson 5.

Run: python benchmarks/lengthgen_full.py [--check] [--only SET ...]

Writes t5lesson/lengthgen/stored_results.json: every set of `t5lesson.lengthgen.stored.STORED_SETS`
(7 schemes x 2 tasks x 3 seeds at the default settings, plus two "train the biases harder"
variants), one row per scheme x task x length x seed, and the learned bias of seed 0. Prints
the mean accuracy table and the time per set. --check recomputes and compares with the stored
file instead of writing it (exit status 1 on a difference larger than 1e-6).
Takes about 2 minutes of CPU time on one thread (about 4 minutes wall-clock here under load).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from t5lesson.lengthgen.stored import STORED_PATH, STORED_SETS, compute_stored_set, load_stored


def table(results):
    lengths = results.lengths()
    lines = []
    for task in results.tasks():
        lines.append(f"{task}: mean accuracy over seeds {results.seeds()} at " + ", ".join(map(str, lengths)))
        for scheme in results.schemes():
            if results.select(scheme=scheme, task=task):
                means = " ".join(f"{results.mean(scheme, task, n):.2f}" for n in lengths)
                lines.append(f"  {scheme:<14} {means}")
    return "\n".join(lines)


def _labels(row):
    return {k: v for k, v in row.items() if not isinstance(v, float)}


def same(a, b):
    """Same rows (numbers within 1e-6) and the same learned biases (within 1e-4, the stored rounding)."""
    rows_equal = len(a.rows) == len(b.rows) and all(
        _labels(x) == _labels(y) and all(abs(x[k] - y[k]) <= 1e-6 for k in x if isinstance(x[k], float))
        for x, y in zip(a.rows, b.rows, strict=True))
    biases_equal = a.biases.keys() == b.biases.keys() and all(
        np.allclose(a.biases[k], b.biases[k], atol=1e-4) for k in a.biases)
    return rows_equal and biases_equal


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the stored file instead of writing it")
    parser.add_argument("--only", nargs="*", choices=list(STORED_SETS), help="sets to run (default: all)")
    args = parser.parse_args()
    names = args.only or list(STORED_SETS)
    stored = load_stored() if (args.check or args.only) else {}
    computed, failed = {}, []
    for name in names:
        start = time.perf_counter()
        computed[name] = compute_stored_set(name)
        print(f"== {name}: {STORED_SETS[name][0]} ({time.perf_counter() - start:.1f} s)")
        print(table(computed[name]))
        if args.check and not same(computed[name], stored[name]):
            failed.append(name)
            print(f"   DIFFERS from {STORED_PATH.name}")
    if args.check:
        return 1 if failed else 0
    merged = {**stored, **computed}
    data = {"generated_by": "benchmarks/lengthgen_full.py",
            "sets": {name: {"description": STORED_SETS[name][0], **merged[name].to_json()} for name in STORED_SETS
                     if name in merged}}
    STORED_PATH.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {STORED_PATH} ({STORED_PATH.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
