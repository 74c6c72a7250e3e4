"""The full grid, run once and stored as a small JSON file that lesson 5b loads.

Lesson 5 trains its copy-k models live, with the training loop written out in the notebook
(`run.train` holds the same lines). The whole grid (both tasks, all seven schemes, and the
"train the biases harder" variants) takes a few minutes of CPU time, so
`benchmarks/lengthgen_full.py` runs it and writes `stored_results.json` next to this file;
`load_stored()` reads it back for lesson 5b. Every set below is reproducible bit for bit on the
machine that wrote it (one thread, fixed seeds), and the test suite retrains lesson 5's part:

    python benchmarks/lengthgen_full.py            # recompute and rewrite the file
    python benchmarks/lengthgen_full.py --check    # recompute and compare with the file
"""
from __future__ import annotations

import json
from pathlib import Path

from .._validate import ArgumentError
from .run import Config, Results, run_experiment
from .schemes import SCHEMES

__all__ = ["STORED_PATH", "STORED_SETS", "LESSON_SCHEMES", "compute_stored_set", "load_stored"]

STORED_PATH = Path(__file__).with_name("stored_results.json")
SEEDS = (0, 1, 2)
LESSON_SCHEMES = ("t5", "per-offset-A", "per-offset-0", "per-offset-32", "t5-far")  # lesson 5b's copy-k five
HARDER = ("t5", "per-offset-A", "per-offset-0")
STORED_BIAS_OFFSETS = 128  # beyond 64 every stored curve is flat except ALiBi's straight line: keeps the file small

# name -> (what it is, schemes, tasks, seeds, Config changes)
STORED_SETS = {
    "default": ("the whole grid at the default settings", tuple(SCHEMES), ("copy-k", "last-marker"), SEEDS, {}),
    "bias_lr_0.3": ("biases trained 10x harder: learning rate 0.3 for the position table", HARDER,
                    ("copy-k", "last-marker"), SEEDS, {"bias_lr": 0.3}),
    "steps_1000": ("longer training: 1000 steps instead of 300", HARDER, ("copy-k", "last-marker"), SEEDS,
                   {"steps": 1000}),
}


def compute_stored_set(name) -> Results:
    """Run one of STORED_SETS (biases kept for seed 0 only, offsets 0..127)."""
    if name not in STORED_SETS:
        raise ArgumentError(f"name must be one of {list(STORED_SETS)}, got {name!r}")
    _, schemes, tasks, seeds, changes = STORED_SETS[name]
    results = run_experiment(schemes, tasks, seeds, Config(**changes), bias_offsets=STORED_BIAS_OFFSETS)
    results.biases = {key: value for key, value in results.biases.items() if key[2] == seeds[0]}
    return results


def load_stored(path=None) -> dict:
    """{set name: Results} from the stored JSON file (default: the one shipped with the package)."""
    path = STORED_PATH if path is None else Path(path)
    if not path.is_file():
        raise ArgumentError(f"no stored results at {path}; run: python benchmarks/lengthgen_full.py")
    data = json.loads(path.read_text())
    return {name: Results.from_json(entry) for name, entry in data["sets"].items()}
