"""The instructor's composition root: the engine (`t5lesson.grading`) bound to this course's exercises.

`t5grade` (pyproject's console script) and `python -m t5lesson.grade` run `main`; see
`t5lesson.grading.cli` for the commands. The functions below are the engine's, with the catalogue
of exercises filled in. The engine's heavy modules load on first use, so `main` can keep out an
optional import first (see `cli.main`).
"""
from __future__ import annotations

from . import exercises
from .grading.protocol import Limits

__all__ = ["main", "grade_folder", "export_lms", "read_report", "Limits"]


def grade_folder(submissions, out, **options):
    from .grading.batch import grade_folder

    return grade_folder(submissions, out, catalogue=exercises, **options)


def export_lms(report, ids_path, out, **options):
    from .grading.integrations.lms import export

    return export(report, ids_path, out, catalogue=exercises, **options)


def read_report(report_dir):
    from .grading.reports.store import read

    return read(report_dir, exercises)


def _objectives(markdown: bool) -> str:
    from .exercises import objectives

    return objectives.syllabus_markdown() + "\n" if markdown else objectives.objectives_csv()


def main(argv=None) -> int:
    from .grading import cli

    return cli.main(argv, catalogue=exercises, objectives=_objectives)


if __name__ == "__main__":
    raise SystemExit(main())
