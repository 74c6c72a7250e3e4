"""The instructor's composition root: the engine (`t5lesson.grading`) bound to this course's exercises.

`t5grade` (pyproject's console script) and `python -m t5lesson.grade` run `main`; see
`t5lesson.grading.cli` for the commands. The functions below are the engine's, with the catalogue
of exercises filled in.
"""
from __future__ import annotations

from functools import partial

from . import exercises
from .exercises import objectives
from .grading import batch, cli
from .grading.integrations import gradescope, lms, shards
from .grading.protocol import Limits
from .grading.reports import store

__all__ = ["main", "grade_folder", "merge", "export_lms", "build_autograder", "read_report", "Limits"]

grade_folder = partial(batch.grade_folder, catalogue=exercises)
merge = partial(shards.merge, catalogue=exercises)
export_lms = partial(lms.export, catalogue=exercises)
build_autograder = partial(gradescope.build, catalogue=exercises)


def read_report(report_dir):
    return store.read(report_dir, exercises)


def _objectives(markdown: bool) -> str:
    return objectives.syllabus_markdown() + "\n" if markdown else objectives.objectives_csv()


def main(argv=None) -> int:
    return cli.main(argv, catalogue=exercises, objectives=_objectives)


if __name__ == "__main__":
    raise SystemExit(main())
