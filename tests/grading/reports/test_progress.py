"""The progress display: a tqdm bar on a terminal, plain lines in logs, with rate, time left and problems."""
from __future__ import annotations

import io

from t5lesson import exercises as bank
from t5lesson.grading.reports.progress import Progress
from t5lesson.grading.verdict import Graded, Status, format_points

EXERCISE = bank.get("01_unscaled_scores")
OUT_OF = format_points(EXERCISE.auto_points)  # a line shows "total/points the grader can award"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _graded(student: str, status=Status.GRADED) -> Graded:
    return Graded(student, f"{student}.ipynb", status, [], seconds=6.0)


def _run(bar: bool, statuses) -> str:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, bar=bar, clock=clock)
    progress.begin(len(statuses))
    for done, status in enumerate(statuses, 1):
        clock.now += 30  # one submission every 30 s: 2 per minute
        progress(done, len(statuses), _graded(f"s{done}", status), EXERCISE)
    return stream.getvalue()


def test_lines_for_logs_carry_count_rate_time_left_and_problems():
    out = _run(False, [Status.GRADED, Status.TIME_LIMIT, Status.GRADED, Status.UNREADABLE])
    lines = out.splitlines()
    assert len(lines) == 4 and "\r" not in out and "\x1b" not in out
    assert lines[0].startswith(f"[1/4] s1: 0/{OUT_OF} graded (6.0 s) | 2.0/min, 01:30 left, all graded")
    assert lines[1].endswith("2.0/min, 01:00 left, not graded: 1 (time limit 1)")
    assert lines[3].endswith("00:00 left, not graded: 2 (time limit 1, unreadable 1)")


def test_bar_on_a_terminal_redraws_one_line_and_names_problems_above_it():
    out = _run(True, [Status.GRADED, Status.KERNEL_DIED, Status.GRADED])
    frames = out.split("\r")  # tqdm draws each frame after a carriage return
    assert frames[1].startswith("  0%|") and "| 0/3 [" in frames[1]  # the empty bar, before the first one ends
    assert f"[2/3] s2: 0/{OUT_OF} kernel died (6.0 s)\n" in frames  # a line of its own for the problem
    last = frames[-1]
    assert last.startswith("100%|") and "| 3/3 [" in last and last.endswith("\n")  # the bar's line ends once done
    assert last.rstrip().endswith(", graded=2, kernel died=1]")  # (tqdm pads a frame shorter than the one before)
    assert out.count("\n") == 2  # the problem line and the end of the bar: nothing else scrolls


def test_auto_mode_is_plain_when_the_stream_is_not_a_terminal():
    assert Progress(io.StringIO()).bar is False

