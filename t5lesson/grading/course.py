"""Where the course repository is: the folder with exercises/ and solutions/ next to the package.

The grader needs it for the handed-out exercise and for the folders its kernels must not see;
the generator reads solutions/ and writes exercises/. From a checkout (an editable install) it is
the checkout itself; after a non-editable install nothing is guessed: `--course DIR` says where it
is, and without it the grader refuses to run rather than hide the wrong folders.
"""
from __future__ import annotations

from pathlib import Path

from .errors import GradingError

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding the t5lesson package
HIDDEN = ("solutions", "tests", ".git", "benchmarks")  # what a grading kernel must not read


class CourseError(GradingError, ValueError):
    """The course folder is needed and was neither given nor found."""


def checkout() -> Path | None:
    """The repository this package runs from, if it runs from one (it has solutions/ beside t5lesson/)."""
    return PACKAGE_PARENT if (PACKAGE_PARENT / "solutions").is_dir() else None


def course_root(explicit: Path | None = None) -> Path:
    """The course folder: `explicit` when given, else the checkout; a CourseError when there is neither."""
    if explicit is not None:
        root = Path(explicit).resolve()
        if not (root / "solutions").is_dir() and not (root / "exercises").is_dir():
            raise CourseError(f"{root} is not the course folder: it has neither exercises/ nor solutions/")
        return root
    found = checkout()
    if found is None:
        raise CourseError("t5lesson is installed outside the course repository; pass --course with the folder "
                          "that holds exercises/ and solutions/")
    return found
