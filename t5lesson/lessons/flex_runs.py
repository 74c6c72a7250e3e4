"""Lesson 8's GPU measurements: the stored runs of `benchmarks/flex_attention.py --gpu`, and their tables.

The figures live in one place, `flex_gpu_runs.json` beside this module, with the machine, the
PyTorch and transformers versions, the TF32 setting and the command that produced them. They
were measured on a lent GPU and are shown as stored: a CPU cannot re-measure them. The ratios
(how many times faster, how many times less memory) are computed here from the stored figures,
so they cannot drift from them. A new GPU run writes a JSON of the same shape (`--json`), which
`load_gpu_runs(path)` reads as well.
"""
from __future__ import annotations

import copy
import functools
import json
import textwrap
from pathlib import Path

from .._validate import ArgumentError

__all__ = ["GPU_RUNS_PATH", "load_gpu_runs", "gpu_runs_table", "TABLES"]

GPU_RUNS_PATH = Path(__file__).with_name("flex_gpu_runs.json")
REQUIRED = ("source", "machine", "torch", "transformers", "tf32", "command", "attention", "layer", "bias_builder")
TABLES = ("attention", "layer", "bias_builder")
WIDTH = 90  # the widest line a table may print: it must fit a notebook's output without wrapping
LAYER_BACKENDS = (("transformers_eager", "transformers eager"), ("transformers_sdpa", "transformers sdpa"),
                  ("transformers_flex_attention", "transformers flex_attention"),
                  ("score_mod", "per-offset score_mod (ours)"))


@functools.cache
def _stored(path: str) -> dict:
    runs = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = [key for key in REQUIRED if key not in runs]
    if missing:
        raise ArgumentError(f"{path} is not a record of GPU runs: it lacks {missing}")
    return runs


def load_gpu_runs(path=None) -> dict:
    """The stored GPU runs (a fresh copy, safe to change): machine, versions, TF32, command, source and
    the three tables, "attention", "layer" and "bias_builder", each {"what": ..., "rows": [...]}."""
    return copy.deepcopy(_stored(str(path or GPU_RUNS_PATH)))


def _header(runs) -> list[str]:
    tf32 = "on" if runs["tf32"] else "off"
    return [f"{runs['machine']}, PyTorch {runs['torch']}, transformers {runs['transformers']}, TF32 {tf32}; "
            f"H = {runs['heads']}, d = {runs['d_kv']}",
            f"command: {runs['command']}"]


def _attention_lines(rows) -> list[str]:
    lines = [f"{'L':>7} {'dtype':>5} {'eager ms':>9} {'GiB':>6} {'flex ms':>8} {'GiB':>6} {'faster':>7} "
             f"{'less memory':>11} {'largest diff':>12}"]
    for r in rows:
        lines.append(f"{r['L']:>7,} {r['dtype']:>5} {r['eager_ms']:>9.4g} {r['eager_peak_gib']:>6.4g} "
                     f"{r['flex_ms']:>8.4g} {r['flex_peak_gib']:>6.4g} {r['eager_ms'] / r['flex_ms']:>6.1f}x "
                     f"{r['eager_peak_gib'] / r['flex_peak_gib']:>10.0f}x {r['largest_difference']:>12.1e}")
    return lines


def _layer_lines(rows) -> list[str]:
    title = "one layer, " + (rows[0]["dtype"] if rows else "")
    lines = [f"{'L':>7}  {title:<28} {'ms':>7} {'peak GiB':>9} {'ours is faster':>15} {'less memory':>12}"]
    for r in rows:
        ours_ms, ours_gib = r["score_mod_ms"], r["score_mod_peak_gib"]
        for key, label in LAYER_BACKENDS:
            ms, gib = r.get(f"{key}_ms"), r.get(f"{key}_peak_gib")
            if ms is None:  # a backend that could not run on that machine (a new run records why)
                lines.append(f"{r['L']:>7,}  {label:<28} {'did not run':>17}")
                continue
            ratios = f"{ms / ours_ms:>14.0f}x {gib / ours_gib:>11.0f}x" if key != "score_mod" else ""
            lines.append(f"{r['L']:>7,}  {label:<28} {ms:>7.4g} {gib:>9.4g} {ratios}".rstrip())
    return lines


def _bias_builder_lines(rows) -> list[str]:
    lines = [f"{'L':>7} {'RelativePositionBias: faster than compute_bias':>47} {'share of a plain write':>23}"]
    for r in rows:
        lines.append(f"{r['L']:>7,} {r['speedup_vs_compute_bias']:>46.1f}x {r['write_bandwidth_share']:>22.0%}")
    return lines


def gpu_runs_table(which="attention", runs=None) -> str:
    """One stored table as text no wider than 90 characters, headed by its machine, versions and command.

    which: "attention" (eager against FlexAttention), "layer" (transformers' backends against the
    per-offset score_mod) or "bias_builder" (RelativePositionBias against compute_bias).
    """
    if which not in TABLES:
        raise ArgumentError(f"which must be one of {TABLES}, got {which!r}")
    runs = runs if runs is not None else _stored(str(GPU_RUNS_PATH))
    body = {"attention": _attention_lines, "layer": _layer_lines, "bias_builder": _bias_builder_lines}[which]
    lines = _header(runs) + body(runs[which]["rows"])
    if which == "layer" and runs["layer"].get("largest_difference_note"):
        lines.append(runs["layer"]["largest_difference_note"])
    lines.append("measured on that machine and stored; not re-measured here")
    return "\n".join(_wrapped(lines))


def _wrapped(lines):
    """Every line within WIDTH: a long note is broken at spaces (a table's line is never that long)."""
    for line in lines:
        yield from textwrap.wrap(line, WIDTH) if len(line) > WIDTH else [line]
