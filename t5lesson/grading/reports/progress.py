"""Progress of a class grading run on the command line, on stderr.

On a terminal: one tqdm bar, redrawn in place (count, rate, time left, statuses other than "graded"),
with a line above it for each such submission; otherwise one plain line per finished submission,
for the logs. `Progress` is the grader's `progress(done, total, graded, exercise)` callback. See
docs/grading.md, "Large classes: progress".
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import NoReturn, TextIO

from tqdm import tqdm

from ..exercise import Exercise
from ..verdict import Graded, Status, format_points
from .files import inert


class Progress:
    """Count finished submissions and show them as a bar (terminal) or as lines (logs)."""

    def __init__(self, stream: TextIO | None = None, *, bar: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.stream.isatty() and sys.stdout.isatty() if bar is None else bar
        self.clock = clock  # the lines' rate and time left (tqdm keeps its own time for the bar)
        self.start = clock()
        self.done = self.total = 0
        self.problems: Counter[str] = Counter()
        self._tqdm: tqdm[NoReturn] | None = None

    def status_text(self) -> str:
        """'2.0/min, 01:30 left, not graded: 3 (time limit 2, unreadable 1)', or '..., all graded'."""
        elapsed = self.clock() - self.start
        speed = "-/min, time left unknown"
        if self.done and elapsed > 0:
            rate = self.done * 60.0 / elapsed
            speed = f"{rate:.1f}/min, {tqdm.format_interval((self.total - self.done) * 60.0 / rate)} left"
        count = sum(self.problems.values())
        parts = ", ".join(f"{status} {n}" for status, n in sorted(self.problems.items()))
        return f"{speed}, {f'not graded: {count} ({parts})' if count else 'all graded'}"

    def begin(self, total: int) -> None:
        """Called once before the first submission runs: show the empty bar."""
        self.total, self.start = total, self.clock()
        if self.bar and total:
            self._open()

    def __call__(self, done: int, total: int, g: Graded, exercise: Exercise) -> None:
        self.done, self.total = done, total
        if g.status != Status.GRADED:
            self.problems[str(g.status)] += 1
        points = f"{format_points(g.total)}/{format_points(exercise.auto_points)}"
        line = f"[{done:>{len(str(total))}}/{total}] {inert(g.student)}: {points} {inert(g.status)} ({g.seconds:.1f} s)"
        if not self.bar:
            self.stream.write(f"{line} | {self.status_text()}\n")
            self.stream.flush()
            return
        bar = self._tqdm or self._open()
        counts = {"graded": done - sum(self.problems.values()), **dict(sorted(self.problems.items()))}
        bar.set_postfix_str(", ".join(f"{k}={n}" for k, n in counts.items()), refresh=False)
        bar.update(done - bar.n)
        if g.status != Status.GRADED:
            bar.write(line, file=self.stream)  # above the bar, which tqdm draws again below it
        if done == total:
            self.finish()

    def _open(self) -> tqdm[NoReturn]:
        # A terminal that reports no size (some pseudo-terminals say 0 x 0) gets 100 x 20, since tqdm
        # would draw nothing on it.
        try:
            sized = os.get_terminal_size(self.stream.fileno()).columns > 0
        except (AttributeError, OSError, ValueError):
            sized = False
        self._tqdm = bar = tqdm(total=self.total, file=self.stream, unit="notebook", dynamic_ncols=sized,
                                ncols=None if sized else 100, nrows=None if sized else 20, leave=True)
        return bar

    def finish(self) -> None:
        """End the bar's line (a no-op for lines, or when no bar was drawn)."""
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
