"""How long the grader takes to draw each exercise's hidden cases (`Exercise.drawn(seed)`).

    python benchmarks/draw_times.py               # 5 seeds per exercise
    python benchmarks/draw_times.py --seeds 20

The grader draws once per exercise and run, so these times are paid once, not per submission.
The first draw of exercise 6 imports transformers and builds its first layer (seconds); the
report gives it apart from the later draws (median and slowest), which check each large-logit
case against transformers and the classic mistakes (`t5_layer_cases._well_posed`) and redraw it
where a verdict would hang on a hair.
"""
from __future__ import annotations

import argparse
import statistics
import time

from t5lesson import exercises

WITH_RECIPES = ("01_unscaled_scores", "03_relative_position_buckets", "04_bias_heatmaps",
                "05_length_generalisation", "06_t5_layer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="draws per exercise (the first one reported apart)")
    seeds = [f"benchmark {n}" for n in range(parser.parse_args().seeds)]
    for exercise_id in WITH_RECIPES:
        exercise = exercises.get(exercise_id)
        times = []
        for seed in seeds:
            start = time.perf_counter()
            exercise.drawn(seed)
            times.append(1000 * (time.perf_counter() - start))
        later = times[1:] or times
        print(f"{exercise_id}: first {times[0]:.0f} ms, then median {statistics.median(later):.0f} ms, "
              f"slowest {max(later):.0f} ms")


if __name__ == "__main__":
    main()
