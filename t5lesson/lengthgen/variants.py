"""The explorer's T5 runs, one per max_distance, trained once and stored as data.

Lesson 5b's explorer moves a max_distance slider; every stop is a separately trained model
(copy-k, seed 0, T5 buckets with 16 causal buckets, the lesson's `Config`). `t5_variants` trains
them (with lesson 5's `train`) and caches them in this process; `benchmarks/lengthgen_full.py`
stores what the explorer draws in `explorer_variants.json`: per max_distance the accuracy and the
attention on the right key at each evaluation length, and the learned bucket table
[buckets, heads], from which `load_variants` rebuilds each head's bias curve. Reading the file
needs NumPy only, not torch (this module imports torch only when asked to train);
`tests/lengthgen/test_variants.py` retrains some stops and compares, and
`python benchmarks/lengthgen_full.py --check --only variants` retrains all of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import ArgumentError, check_int
from ..buckets import bucket_ids, bucket_ranges

__all__ = ["Variant", "VARIANTS_PATH", "MAX_DISTANCES", "t5_variants", "load_variants", "variants_to_json",
           "cached_variant_count"]

VARIANTS_PATH = Path(__file__).with_name("explorer_variants.json")
MAX_DISTANCES = tuple(2 ** k for k in range(4, 10))  # 16 .. 512, one trained model each
NUM_BUCKETS = 16


@dataclass(frozen=True)
class Variant:
    """One trained T5-bucket model, summarised: what the explorer draws."""

    max_distance: int
    task: str
    seed: int
    train_len: int
    lengths: tuple  # evaluation lengths
    accuracy: tuple  # one per length
    weight_on_key: tuple  # one per length: largest head's mean attention on the key holding the answer
    table: np.ndarray  # [buckets, heads] the learned bias of each bucket
    untrained_buckets: int  # buckets that no (query, key) pair of a training sequence uses

    @property
    def last_bucket_start(self) -> int:
        """Smallest offset d in the last, open-ended bucket."""
        return bucket_ranges(False, NUM_BUCKETS, self.max_distance).last_bucket_start

    @property
    def bias(self) -> np.ndarray:
        """[heads, offsets] learned bias at d = 0 .. max(lengths) - 1 (the key d steps back)."""
        d = np.arange(max(self.lengths))
        return self.table[bucket_ids(-d, False, NUM_BUCKETS, self.max_distance)].T


_CACHE: dict = {}


def cached_variant_count() -> int:
    return len(_CACHE)


def _train_variant(max_distance, task, seed, config, on_step=None):
    from .counts import pairs_per_parameter
    from .run import evaluate, train
    from .schemes import t5_scheme

    scheme = t5_scheme(max_distance, NUM_BUCKETS)
    model = train(scheme, task, seed, config, on_step=on_step)
    scores = evaluate(model, task, config.eval_lens, config.eval_batch)[seed]
    table = model.position.t5.table.detach().double().numpy().copy()  # [buckets, heads] (one model)
    pairs = pairs_per_parameter(scheme, config.train_len)
    return Variant(max_distance, task, seed, config.train_len, tuple(config.eval_lens),
                   tuple(a for a, _ in scores), tuple(w for _, w in scores), table, int((pairs == 0).sum()))


def t5_variants(max_distances=MAX_DISTANCES, task="copy-k", seed=0, config=None) -> dict:
    """{max_distance: Variant} for T5 buckets (16, causal) at each max_distance, trained now; cached.

    config: a lengthgen Config (default: the lesson's, `Config()`). Needs torch.
    """
    from ..common.progress import Progress
    from .run import Config, check_config
    from .tasks import get_task

    task = get_task(task).name
    seed = check_int("seed", seed, minimum=0)
    config = Config() if config is None else check_config(config)
    if not max_distances:
        raise ArgumentError("max_distances must list at least one value")
    keys = {}
    for max_distance in max_distances:
        max_distance = check_int("each max_distance", max_distance, minimum=9)  # > max_exact = 8
        keys[max_distance] = (max_distance, task, seed, config)
    missing = [key for key in keys.values() if key not in _CACHE]
    if missing:  # a progress bar only when there is training to do
        with Progress(len(missing) * config.steps,
                      f"training {len(missing)} models, {config.steps} steps each") as bar:
            for key in missing:
                _CACHE[key] = _train_variant(*key, on_step=bar.update)
    return {max_distance: _CACHE[key] for max_distance, key in keys.items()}


def variants_to_json(variants) -> dict:
    """A JSON-able dict of {max_distance: Variant} (numbers rounded to 6 decimals)."""
    return {"generated_by": "benchmarks/lengthgen_full.py",
            "variants": [{"max_distance": v.max_distance, "task": v.task, "seed": v.seed, "train_len": v.train_len,
                          "lengths": list(v.lengths), "accuracy": [round(a, 6) for a in v.accuracy],
                          "weight_on_key": [round(w, 6) for w in v.weight_on_key],
                          "table": np.round(v.table, 6).tolist(), "untrained_buckets": v.untrained_buckets}
                         for v in variants.values()]}


def load_variants(path=None) -> dict:
    """{max_distance: Variant} from the stored file (default: the one shipped with the package). NumPy only."""
    path = VARIANTS_PATH if path is None else Path(path)
    if not path.is_file():
        raise ArgumentError(f"no stored explorer variants at {path}; run: python benchmarks/lengthgen_full.py "
                            "--only variants")
    out = {}
    for entry in json.loads(path.read_text())["variants"]:
        out[entry["max_distance"]] = Variant(entry["max_distance"], entry["task"], entry["seed"], entry["train_len"],
                                             tuple(entry["lengths"]), tuple(entry["accuracy"]),
                                             tuple(entry["weight_on_key"]), np.asarray(entry["table"], dtype=float),
                                             entry["untrained_buckets"])
    return out
