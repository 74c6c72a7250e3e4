"""Cheap variants of the T5 scheme (one max_distance each), trained once and then cached.

The lesson's explorer moves a max_distance slider; every position of the slider is a separately
trained model. `t5_variants` trains the ones not yet in the cache and returns them all, so the
notebook pays for training once (about a second per variant) and a slider move only redraws.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import ArgumentError, check_int
from ..buckets import bucket_ranges
from ..lessons.progress import Progress
from .counts import pairs_per_parameter
from .run import Config, _check_config, evaluate, train
from .schemes import t5_scheme
from .tasks import get_task

__all__ = ["Variant", "t5_variants", "cached_variant_count"]


@dataclass(frozen=True)
class Variant:
    """One trained T5-bucket model, summarised: what the explorer draws."""

    max_distance: int
    task: str
    seed: int
    lengths: tuple  # evaluation lengths
    accuracy: tuple  # one per length
    weight_on_key: tuple  # one per length: largest head's mean attention on the key holding the answer
    bias: np.ndarray  # [heads, offsets] learned bias at d = 0..max(lengths)-1
    last_bucket_start: int  # smallest offset d in the last, open-ended bucket
    untrained_buckets: int  # buckets that no (query, key) pair of a training sequence uses


_CACHE: dict = {}


def cached_variant_count() -> int:
    return len(_CACHE)


def _train_variant(max_distance, task, seed, config, on_step=None):
    scheme = t5_scheme(max_distance)
    model = train(scheme, task, seed, config, on_step=on_step)
    scores = evaluate(model, task, config.eval_lens, config.eval_batch)[seed]
    pairs = pairs_per_parameter(scheme, config.train_len)
    return Variant(max_distance, task, seed, tuple(config.eval_lens), tuple(a for a, _ in scores),
                   tuple(w for _, w in scores), model.position.curve(max(config.eval_lens))[0],
                   bucket_ranges(False, scheme.num_buckets, max_distance).last_bucket_start,
                   int((pairs == 0).sum()))


def t5_variants(max_distances, task="copy-k", seed=0, config=None) -> dict:
    """{max_distance: Variant} for T5 buckets (16, causal) at each max_distance; cached.

    config: a Config (default: the lesson's, `Config()`).
    """
    task = get_task(task).name
    seed = check_int("seed", seed, minimum=0)
    config = Config() if config is None else _check_config(config)
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
