"""Module paths from before the package was split into rooms (core, lessons/, grading/), kept importable.

Lesson notebooks a learner saved earlier say, for example, `from t5lesson.scaling import ...`.
Each old path below imports as the very module that now holds that code (same object, so
`t5lesson.scaling is t5lesson.lessons.dot_products`), without a file left behind in the
package's top folder. `t5lesson.check` and `t5lesson.grade` are real files instead: the first
is the learner's import in every exercise notebook, the second must run with `python -m`.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "t5lesson._checks": "t5lesson._validate",
    "t5lesson.scaling": "t5lesson.lessons.dot_products",
    "t5lesson.folding": "t5lesson.lessons.folding",
    "t5lesson.costs": "t5lesson.lessons.bias_timing",
    "t5lesson.pair_counts": "t5lesson.lessons.pair_counts",
    "t5lesson.toy_heads": "t5lesson.lessons.toy_heads",
    "t5lesson.learned_bias": "t5lesson.lessons.learned_bias",
    "t5lesson.bias_sharing": "t5lesson.lessons.bias_sharing",
    "t5lesson.bucket_steps": "t5lesson.lessons.bucket_steps",
    "t5lesson.position_figures": "t5lesson.lessons.position_figures",
    "t5lesson.figures": "t5lesson.lessons.figures",
    "t5lesson.explorers.scaling": "t5lesson.explorers.score_spread",
    "t5lesson.explorers.folding": "t5lesson.explorers.bias_scale",
    "t5lesson.explorers.lengthgen": "t5lesson.explorers.length_generalisation",
    "t5lesson.explorers.buckets_explorer": "t5lesson.explorers.bucket_boundaries",
    "t5lesson.questions": "t5lesson.grading.questions.kinds",
    "t5lesson.harvest": "t5lesson.grading.harvest",
    "t5lesson.generate": "t5lesson.grading.authoring.generate",
    "t5lesson.exercise_source": "t5lesson.grading.authoring.notebook_format",
    "t5lesson.submission": "t5lesson.grading.run.compose",
    "t5lesson.sandbox": "t5lesson.grading.sandbox.launcher",
    "t5lesson.runner": "t5lesson.grading.run.worker",
    "t5lesson.report": "t5lesson.grading.reports.gradebook",
    "t5lesson.exercise_bank": "t5lesson.exercises",
    "t5lesson.exercise_bank.plain_code": "t5lesson.grading.questions.structured",
}


def new_name(old: str) -> str | None:
    """Where an old module path lives now (submodules of a moved package included), or None."""
    head = old
    while head.count(".") >= 1:
        if head in MOVED:
            return MOVED[head] + old[len(head):]
        head = head.rpartition(".")[0]
    return None


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the module that now holds its code."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("t5lesson.") or new_name(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = importlib.import_module(new_name(spec.name))
        spec.loader_state = module.__spec__  # the import system overwrites __spec__; put it back below
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())
