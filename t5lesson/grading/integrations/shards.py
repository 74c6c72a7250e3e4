"""Grade one class on many machines: `--shard K/N` grades a slice, `merge` puts the slices together.

Shard K of N takes the K-th, (K+N)-th, ... submission of the sorted list (`batch.shard_of`),
whatever machine runs it; `merge` reads each folder's grades.json, checks that they belong
together (same exercise and settings, every shard once, no student twice) and writes the whole
class's report with the code of a single run, byte for byte. See docs/grading.md, "Large
classes: progress, shards, merge".
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ..errors import InputError, SettingsError
from ..exercise import Catalogue
from ..reports import store
from ..verdict import Graded, RunSettings

__all__ = ["parse_shard", "merge"]


def parse_shard(text: str) -> tuple[int, int]:
    """'3/8' -> (3, 8); an argparse type, so a bad value is a clean usage error."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard: write K/N, e.g. 3/8") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"shard {text!r}: K must be between 1 and N")
    return k, n


def _check_shards(runs: list[tuple[Path, store.Run]]) -> None:
    """Either whole runs, or each shard K/N of one N once."""
    seen: dict[str, Path] = {}
    for folder, run in runs:
        if run.shard in seen:
            raise InputError(f"shard {run.shard} appears twice: {seen[run.shard]} and {folder}")
        if run.shard:
            seen[run.shard] = folder
    if seen and len(seen) != len(runs):
        raise InputError("cannot merge shards with whole runs")
    counts = {shard.partition("/")[2] for shard in seen}
    if len(counts) > 1:
        raise InputError(f"these reports come from different shard counts: {', '.join(sorted(counts))}")
    n = int(counts.pop()) if counts else 0
    missing = [f"{k}/{n}" for k in range(1, n + 1) if f"{k}/{n}" not in seen]
    if missing:
        raise InputError(f"missing shard(s) {', '.join(missing)}: grade them first (or merge what you have "
                         "with --allow-missing)")


def _merged_settings(runs: list[tuple[Path, store.Run]]) -> RunSettings:
    """The settings of the whole class: the shards' common ones, and each machine setting's values joined."""
    def comparable(settings: RunSettings) -> dict[str, object]:
        return {k: v for k, v in settings.to_json().items() if k not in (*RunSettings.MACHINE, "shard")}

    first_folder, first = runs[0]
    for folder, run in runs[1:]:
        if run.exercise.id != first.exercise.id:
            raise InputError(f"{folder} grades exercise {run.exercise.id}, {first_folder} grades {first.exercise.id}")
        base, other = comparable(first.settings), comparable(run.settings)
        if other != base:
            differ = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
            raise InputError(f"{folder} was graded with other settings than {first_folder}: {', '.join(differ)}")
    joined = {key: "; ".join(sorted({getattr(run.settings, key) for _, run in runs} - {""}))
              for key in RunSettings.MACHINE}
    return replace(first.settings, shard=None, **joined)


def merge(report_dirs: list[Path], out: Path, *, catalogue: Catalogue, allow_missing: bool = False) -> list[Graded]:
    """Merge report folders of one exercise into `out`; return the merged verdicts."""
    if not report_dirs:
        raise SettingsError("name at least one report folder to merge")
    if any(Path(d).resolve() == Path(out).resolve() for d in report_dirs):
        raise SettingsError("write the merged report to a new folder, not into one of the shards")
    runs = [(Path(d), store.read(Path(d), catalogue)) for d in report_dirs]
    settings = _merged_settings(runs)
    if not allow_missing:
        _check_shards(runs)
    graded: list[Graded] = []
    where: dict[str, Path] = {}
    for folder, run in runs:
        for g in run.graded:
            if g.student in where:
                raise InputError(f"student {g.student!r} is in both {where[g.student]} and {folder}")
            where[g.student] = folder
            graded.append(g)
    skipped = sorted({(s.relative, s.reason): s for _, run in runs for s in run.skipped}.values(),
                     key=lambda s: s.relative)
    first = runs[0][1]
    failed = store.write_all(Path(out), first.exercise, graded, settings, skipped=skipped, titles=first.titles)
    if failed:
        raise store.ReportError(failed)
    return graded
