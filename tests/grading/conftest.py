"""One graded class shared by the tests of what comes after grading (command line, report, LMS).

The three real sample submissions (tests/sample_class: ada full marks, ben 8.22, cy 0; see
SAMPLE_TOTALS and README's instructor's guide) plus one file that is not JSON, graded in this
process and again through the command line under a pseudo-terminal (so it draws the progress
bar); then ben and cy alone through the command line with pipes (plain lines, as in a log).
That is eight kernel runs in all, under a minute on a quiet 2-core machine.
"""
from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import nbformat
import pytest
from isolation_helpers import ISOLATION, ISOLATION_ARGS

from t5lesson import exercises as bank
from t5lesson.grade import grade_folder

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "sample_class"
# The exercise the sample class answers (read from ada's notebook), and each sample's total: ada
# answers everything right, so she gets every automatically graded point of that exercise.
SAMPLE_EXERCISE = bank.get(nbformat.read(SAMPLES / "ada.ipynb", as_version=4).metadata["t5lesson"]["exercise"])
# the seed every test grades with (the hidden cases are drawn from it), so reports are reproducible
SEED = "test-suite-seed"
SAMPLE_TOTALS = {"ada": SAMPLE_EXERCISE.auto_points, "ben": 8.22, "cy": 0.0}


def run_in_terminal(argv: list[str], timeout: float = 300) -> tuple[int, str]:
    """Run a command with stdout and stderr on a pseudo-terminal; return (exit code, what it wrote)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # 160 columns
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the other side closed: the process has exited
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def grade_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "t5lesson.grade", *args]


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample_runs")
    submissions = root / "submissions"
    submissions.mkdir()
    for path in sorted(SAMPLES.glob("*.ipynb")):
        shutil.copy(path, submissions / path.name)
    (submissions / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (submissions / "notes.txt").write_text("not a notebook: listed in the summary, no row", encoding="utf-8")

    whole = root / "whole"
    grade_folder(submissions, whole, jobs=2, isolation=ISOLATION, seed=SEED)

    command_line = root / "command_line"
    code, terminal = run_in_terminal(grade_cli("grade", str(submissions), "--out", str(command_line),
                                               "--seed", SEED, *ISOLATION_ARGS))
    assert code == 0, terminal
    two = root / "two"
    two.mkdir()
    for name in ("ben.ipynb", "cy.ipynb"):
        shutil.copy(submissions / name, two / name)
    piped = subprocess.run(grade_cli("grade", str(two), "--out", str(root / "two_report"), "--seed", SEED,
                                     *ISOLATION_ARGS), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    return {"root": root, "submissions": submissions, "whole": whole, "command_line": command_line,
            "terminal": terminal, "log": piped.stderr}


def feedback_of(report: Path) -> dict[str, str]:
    """{student: their notes and question lines, as plain text}: what the feedback files say, read from
    grades.json (the Markdown files escape the learner's text, so a probe's printout reads with backslashes)."""
    import json

    doc = json.loads((report / "grades.json").read_text(encoding="utf-8"))
    return {s["student"]: " ".join(s["notes"] + [o["message"] for o in s["outcomes"]]) for s in doc["submissions"]}
