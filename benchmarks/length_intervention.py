"""Lesson 7, section 6: train the tiny T5 with the lesson's bucketing and with one whose every bucket is trained.

Run: python benchmarks/length_intervention.py [--check]

Writes t5lesson/lessons/length_intervention.json: for each setting of
`t5lesson.lessons.length_test.SETTINGS` and each seed of `SEEDS`, transformers' T5 of the
lesson's configuration trained by the lesson's recipe on strings of 3 to 8 digits, then decoded
greedily on 500 fresh strings of each length of `LENGTHS`: the whole-answer and per-position
accuracies. Prints what lesson 7 prints from the file (means over seeds, rounded to 0.1).
--check recomputes and compares with the stored file instead of writing it. A training run is
chaotic: on another CPU the raw numbers differ, and a mean over five runs can move by more than
its printed rounding. So the check reports whether the printed lines are the same and the
largest raw difference, and passes (exit status 0) when every statement the lesson makes about
these runs (`length_test.findings`) holds for the recomputed numbers.
Takes about 5 minutes of CPU time on one thread.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from t5lesson.lessons.length_test import (
    INTERVENTION_PATH,
    INTERVENTION_RECIPE,
    LENGTHS,
    SEEDS,
    SETTINGS,
    STRINGS,
    findings,
    intervention_lines,
    load_intervention,
    run_setting,
)


def compute():
    runs = []
    for name in SETTINGS:
        for seed in SEEDS:
            start = time.perf_counter()
            runs.append(run_setting(name, seed))
            whole = " ".join(f"{runs[-1]['whole'][str(n)]:.2f}" for n in LENGTHS)
            print(f"  {name}, seed {seed}: whole answer at {LENGTHS} digits {whole} "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    return {"generated_by": "benchmarks/length_intervention.py", "lengths": list(LENGTHS), "strings": STRINGS,
            "recipe": INTERVENTION_RECIPE,
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
    print(intervention_lines(computed))
    for statement, holds in findings(computed):
        print(f"{'holds' if holds else 'FAILS'}: {statement}")
    if args.check:
        stored = load_intervention()
        same = intervention_lines(computed) == intervention_lines(stored)
        print(f"largest difference of a per-position accuracy: {largest_difference(computed, stored):.3f}")
        print("printed lines: " + ("the same" if same else f"differ from {INTERVENTION_PATH.name}"))
        return 0 if all(holds for _, holds in findings(computed)) else 1
    INTERVENTION_PATH.write_text(json.dumps(computed, separators=(",", ":")) + "\n")
    print(f"wrote {INTERVENTION_PATH} ({INTERVENTION_PATH.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
