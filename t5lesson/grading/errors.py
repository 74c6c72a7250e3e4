"""The grader's expected failures: one base, `GradingError`, so that `t5grade` tells them from its own bugs.

A `GradingError` is one the instructor can fix from its one-line message; anything else reaching
`cli.main` is a bug, whose traceback goes to a log file. The subclasses keep the built-in they
replaced as a second base.
"""
from __future__ import annotations


class GradingError(Exception):
    """A failure the grader expects and explains in one line."""


class SettingsError(GradingError, ValueError):
    """A setting the instructor gave (a flag, an argument) that cannot be used as it is."""


class InputError(GradingError, ValueError):
    """A file or folder the grader reads (an id list, a report folder, a marked sheet) is not what it must be."""
