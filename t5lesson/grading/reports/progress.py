"""Progress of a class grading run on the command line, on stderr.

On a terminal: one tqdm bar, redrawn in place (count, rate, time left, statuses other than "graded"),
with a line above it for each such submission; otherwise one plain line per finished submission,
for the logs. `Progress` is the grader's `progress(done, total, graded, exercise)` callback. See
docs/grading.md, "Large classes: progress, shards, merge".
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter

from tqdm import tqdm

from ..verdict import Status, format_points
from .files import inert

__all__ = ["Progress", "duration"]

def duration(seconds: float) -> str:
    """'45 s', '4 min 05 s', '2 h 07 min': short, and exact enough for a time left."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """Count finished submissions and show them as a bar (terminal) or as lines (logs)."""

    def __init__(self, stream=None, *, bar: bool | None = None, clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            bar = _is_tty(self.stream) and _is_tty(sys.stdout)
        self.bar = bar
        self.clock = clock  # the lines' rate and time left (tqdm keeps its own time for the bar)
        self.start = clock()
        self.done = 0
        self.total = 0
        self.problems: Counter = Counter()
        self._tqdm: tqdm | None = None

    # ------------------------------------------------------------------ numbers

    def rate(self) -> float | None:
        """Submissions per minute so far (None before the first one)."""
        elapsed = self.clock() - self.start
        return self.done * 60.0 / elapsed if self.done and elapsed > 0 else None

    def left(self) -> float | None:
        """Seconds until the last submission, at the rate so far."""
        rate = self.rate()
        return (self.total - self.done) * 60.0 / rate if rate else None

    def problems_text(self) -> str:
        """'not graded: 3 (time limit 2, unreadable 1)', or 'all graded'."""
        count = sum(self.problems.values())
        if not count:
            return "all graded"
        parts = ", ".join(f"{status} {n}" for status, n in sorted(self.problems.items()))
        return f"not graded: {count} ({parts})"

    def status_text(self) -> str:
        rate, left = self.rate(), self.left()
        rate_text = f"{rate:.1f}/min" if rate is not None else "-/min"
        left_text = f"{duration(left)} left" if left is not None else "time left unknown"
        return f"{rate_text}, {left_text}, {self.problems_text()}"

    # ------------------------------------------------------------------ the callback

    def begin(self, total: int) -> None:
        """Called once before the first submission runs: show the empty bar."""
        self.total, self.start = total, self.clock()
        if self.bar and total:
            self._open()

    def __call__(self, done: int, total: int, g, exercise) -> None:
        self.done, self.total = done, total
        if g.status != Status.GRADED:
            self.problems[str(g.status)] += 1
        width = len(str(total))
        points = f"{format_points(g.total)}/{format_points(exercise.auto_points)}"
        line = f"[{done:>{width}}/{total}] {inert(g.student)}: {points} {inert(g.status)} ({g.seconds:.1f} s)"
        if not self.bar:
            self._write(f"{line} | {self.status_text()}\n")
            return
        bar = self._tqdm or self._open()
        bar.set_postfix({"graded": done - sum(self.problems.values()), **dict(sorted(self.problems.items()))},
                        refresh=False)
        bar.update(done - bar.n)
        if g.status != Status.GRADED:
            bar.write(line, file=self.stream)  # above the bar, which tqdm draws again below it
        if done == total:
            self.finish()

    def _open(self) -> tqdm:
        # A terminal that reports no size (some pseudo-terminals say 0 x 0) gets 100 x 20, since tqdm
        # would draw nothing on it.
        sized = _columns(self.stream) > 0
        self._tqdm = tqdm(total=self.total, file=self.stream, unit="notebook", dynamic_ncols=sized,
                          ncols=None if sized else 100, nrows=None if sized else 20, leave=True)
        return self._tqdm

    def finish(self) -> None:
        """End the bar's line (a no-op for lines, or when no bar was drawn)."""
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _columns(stream) -> int:
    """The width of the terminal `stream` writes to (0 when it says none, or is not one)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
