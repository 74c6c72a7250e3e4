"""Lesson 7, section 6: the tiny T5 past its training length, with two controls for the untrained buckets.

Run: python benchmarks/length_intervention.py [--check]

Writes t5lesson/lessons/length_intervention.json: for each setting of
`t5lesson.lessons.length_test.SETTINGS` and each seed of `SEEDS`, transformers' T5 of the
lesson's configuration trained by the lesson's recipe on strings of 3 to 8 digits (150 or 400
steps; the lesson's bucketing, or 8 buckets that training all reaches), then decoded greedily
on 500 fresh strings of each length of `LENGTHS`, as trained and, for the lesson's bucketing,
again with its untrained buckets patched (each given its nearest trained bucket's values): the
whole-answer, ended-early and per-position accuracies. Prints what lesson 7 prints from the
file (means over seeds) and each run's whole answers.
--check recomputes and compares with the stored file instead of writing it. A training run is
chaotic: on another CPU the raw numbers differ, and a mean over five runs can move by more than
its printed rounding. So the check reports whether the printed lines are the same and the
largest raw difference, and passes (exit status 0) when every statement the lesson makes about
these runs (`length_test.findings`) holds for the recomputed numbers.
Takes about 10 minutes of CPU time on one thread.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from t5lesson.lessons.length_test import (
    INTERVENTION_PATH,
    LENGTHS,
    RECIPE,
    SEEDS,
    SETTINGS,
    STRINGS,
    findings,
    intervention_lines,
    load_intervention,
    run_seed,
)


def compute():
    runs = []
    for seed in SEEDS:
        start = time.perf_counter()
        for row in run_seed(seed):
            runs.append(row)
            whole = " ".join(f"{row['whole'][str(n)]:.2f}" for n in LENGTHS)
            print(f"  seed {seed}, {row['setting']}: whole answer at {LENGTHS} digits {whole} "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    return {"generated_by": "benchmarks/length_intervention.py", "lengths": list(LENGTHS), "strings": STRINGS,
            "recipe": {key: value for key, value in RECIPE.items() if key != "steps"},
            "settings": {name: list(value) for name, value in SETTINGS.items()}, "runs": runs}


def largest_difference(a, b):
    return max(abs(x - y) for ra, rb in zip(a["runs"], b["runs"], strict=True)
               for n in map(str, a["lengths"]) for x, y in zip(ra["per_position"][n], rb["per_position"][n],
                                                                strict=True))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the stored file instead of writing it")
    args = parser.parse_args()
    computed = compute()
    if not args.check:
        INTERVENTION_PATH.write_text(json.dumps(computed, separators=(",", ":")) + "\n")
        print(f"wrote {INTERVENTION_PATH} ({INTERVENTION_PATH.stat().st_size / 1024:.0f} KiB)")
    print(intervention_lines(computed))
    for statement, holds in findings(computed):
        print(f"{'holds' if holds else 'FAILS'}: {statement}")
    if args.check:
        stored = load_intervention()
        same = intervention_lines(computed) == intervention_lines(stored)
        print(f"largest difference of a per-position accuracy: {largest_difference(computed, stored):.3f}")
        print("printed lines: " + ("the same" if same else f"differ from {INTERVENTION_PATH.name}"))
    return 0 if all(holds for _, holds in findings(computed)) else 1


if __name__ == "__main__":
    sys.exit(main())
