"""Run the full length-generalisation grid and store it for lesson 5.

Run: python benchmarks/lengthgen_full.py [--check] [--only SET ...]

Writes t5lesson/lengthgen/stored_results.json: every set of `t5lesson.lengthgen.stored.STORED_SETS`
(7 schemes x 2 tasks x 3 seeds at the default settings, plus two "train the biases harder"
variants), one row per scheme x task x length x seed, and the learned bias of seed 0; and
t5lesson/lengthgen/explorer_variants.json, the six T5 runs (max_distance 16 .. 512) that lesson
5b's explorer draws (set name "variants"). Prints the mean accuracy table and the time per set.
--check recomputes and compares with the stored files instead of writing them (exit status 1 on
a difference larger than 1e-6).
Takes about 2 minutes of CPU time on one thread (about 4 minutes wall-clock here under load).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from t5lesson.lengthgen.stored import STORED_PATH, STORED_SETS, compute_stored_set, load_stored
from t5lesson.lengthgen.variants import VARIANTS_PATH, load_variants, t5_variants, variants_to_json

VARIANTS = "variants"


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


def same_variants(a, b):
    """Same max_distances, numbers within 1e-6 (the stored rounding) and the same untrained buckets."""
    return a.keys() == b.keys() and all(
        np.allclose(a[k].accuracy, b[k].accuracy, atol=1e-6) and np.allclose(a[k].weight_on_key, b[k].weight_on_key,
                                                                               atol=1e-6)
        and np.allclose(a[k].table, b[k].table, atol=1e-6) and a[k].untrained_buckets == b[k].untrained_buckets
        for k in a)


def run_variants(check):
    start = time.perf_counter()
    variants = t5_variants()
    print(f"== {VARIANTS}: the explorer's T5 runs ({time.perf_counter() - start:.1f} s)")
    for v in variants.values():
        print(f"  max_distance {v.max_distance:>3}: accuracy " + " ".join(f"{a:.2f}" for a in v.accuracy))
    if check:
        if not same_variants(variants, load_variants()):
            print(f"   DIFFERS from {VARIANTS_PATH.name}")
            return False
        return True
    VARIANTS_PATH.write_text(json.dumps(variants_to_json(variants), separators=(",", ":")) + "\n")
    print(f"wrote {VARIANTS_PATH} ({VARIANTS_PATH.stat().st_size / 1024:.0f} KiB)")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the stored file instead of writing it")
    parser.add_argument("--only", nargs="*", choices=[*STORED_SETS, VARIANTS], help="sets to run (default: all)")
    args = parser.parse_args()
    names = args.only or [*STORED_SETS, VARIANTS]
    variants_ok = run_variants(args.check) if VARIANTS in names else True
    names = [name for name in names if name != VARIANTS]
    if not names:
        return 0 if variants_ok else 1
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
        return 1 if failed or not variants_ok else 0
    merged = {**stored, **computed}
    data = {"generated_by": "benchmarks/lengthgen_full.py",
            "sets": {name: {"description": STORED_SETS[name][0], **merged[name].to_json()} for name in STORED_SETS
                     if name in merged}}
    STORED_PATH.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {STORED_PATH} ({STORED_PATH.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
