"""The grader's expected failures: one base, `GradingError`, so that `t5grade` tells them from its own bugs.

A `GradingError` is something the instructor can fix from its one-line message (a flag, a folder,
a file the grader reads, the course folder); `t5grade` prints that line and exits 2 (1 for a
`ReportError`). Anything else that reaches the command is a bug in the grader: its traceback goes to
a log file that the one line names (`cli.main`). The subclasses keep the built-in they replaced
(`ValueError`, `RuntimeError`) as a second base, so callers that catch those still do.

Not here, on purpose: `harvest.GradingSetupError` (a verdict on the learner's class, raised inside
the learner's kernel, where `harvest` must import nothing of the package) and `sandbox.kernel`'s
`ExitCalled` (a `SystemExit` that stops one cell).
"""
from __future__ import annotations

__all__ = ["GradingError", "SettingsError", "InputError"]


class GradingError(Exception):
    """A failure the grader expects and explains in one line."""


class SettingsError(GradingError, ValueError):
    """A setting the instructor gave (a flag, an argument) that cannot be used as it is."""


class InputError(GradingError, ValueError):
    """A file or folder the grader reads (an id list, a report folder, a marked sheet) is not what it must be."""
