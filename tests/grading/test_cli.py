"""`t5grade`: a class graded on the command line is graded as `grade_folder` grades it, with a progress bar on a
terminal and plain lines in a log; its one error boundary: an expected failure is one line (exit 2), a bug names
its log (exit 3)."""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_EXERCISE, SAMPLE_TOTALS
from t5lesson.grade import main as t5grade
from t5lesson.grading import cli, errors
from t5lesson.grading.course import CourseError
from t5lesson.grading.records import BoundsError
from t5lesson.grading.reports.store import ReportError
from t5lesson.grading.verdict import format_points

ROOT = Path(__file__).resolve().parents[2]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_command_line_writes_what_grade_folder_writes(sample_runs):
    whole, command_line = _files(sample_runs["whole"]), _files(sample_runs["command_line"])
    assert {"gradebook.csv", "free_text.csv", "summary.md", "grades.json", "feedback/ada.md"} <= set(whole)
    assert sorted(whole) == sorted(command_line)
    assert [name for name in whole if whole[name] != command_line[name]] == []
    assert b"notes.txt" in whole["summary.md"]  # the folder's entries without a row are listed
    rows = {r["student"]: (r["total"], r["status"]) for r in csv.DictReader(
        (sample_runs["command_line"] / "gradebook.csv").open())}
    expected = {student: (format_points(total), "graded") for student, total in SAMPLE_TOTALS.items()}
    assert rows == {**expected, "broken": ("0", "unreadable")}


def test_progress_bar_on_a_terminal_and_lines_in_a_log(sample_runs):
    terminal, log = sample_runs["terminal"], sample_runs["log"]
    assert "\r  0%|" in terminal and "100%|" in terminal and "| 4/4 [" in terminal  # tqdm's bar, redrawn in place
    assert "unreadable=1" in terminal  # the statuses other than graded, in the bar's postfix
    out_of = format_points(SAMPLE_EXERCISE.auto_points)
    assert f"broken: 0/{out_of} unreadable" in terminal  # a problem gets a line of its own above the bar
    lines = [line for line in log.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == ["[1/2", "[2/2"]
    assert all(" | " in line and "/min" in line and "all graded" in line for line in lines)
    assert "\r" not in log and "\x1b" not in log


def test_the_engine_errors_share_one_base():
    for error in (CourseError, BoundsError, ReportError, errors.SettingsError, errors.InputError):
        assert issubclass(error, errors.GradingError)
    assert issubclass(errors.SettingsError, ValueError)  # callers that caught the ValueError it was still do


def test_bad_input_is_one_line_without_a_traceback(tmp_path):
    """An LMS export of a folder that is no report: exit 2, one line, no traceback (in a process of its own)."""
    (tmp_path / "not_a_report").mkdir()
    (tmp_path / "ids.csv").write_text("submission,lms_id\nada,1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "t5lesson.grade", "lms", str(tmp_path / "not_a_report"), "--ids",
                           str(tmp_path / "ids.csv"), "--out", str(tmp_path / "lms")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and "grades.json" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_setting_is_one_line(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    assert t5grade(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "class" / "report"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must not be inside the submissions folder" in err


@pytest.mark.parametrize("has_out", [True, False])
def test_a_bug_writes_its_traceback_to_a_named_log(tmp_path, monkeypatch, capsys, has_out):
    """A bug (here a KeyError planted in the LMS export) is no setting to fix: the one line names the log with the
    traceback, in the output folder when there is one, else in a temporary file."""
    def broken(*args, **kwargs):
        raise KeyError("planted")

    import t5lesson.grading.integrations.lms as lms

    monkeypatch.setattr(lms, "export", broken)
    monkeypatch.setattr(cli.tempfile, "tempdir", str(tmp_path))
    out = tmp_path / "lms"
    if has_out:
        out.mkdir()
    assert t5grade(["lms", str(tmp_path / "a"), "--ids", str(tmp_path / "ids.csv"), "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "KeyError" in err, err
    log = Path(re.search(r"the traceback is in (\S+)\. ", err).group(1))
    assert log.parent == (out.resolve() if has_out else tmp_path) and log.name.startswith("t5grade")
    text = log.read_text(encoding="utf-8")
    assert "Traceback" in text and "in broken" in text and "KeyError: 'planted'" in text


def test_hash_needs_the_exercise_whose_salt_the_key_carries(capsys):
    from t5lesson.exercises import get

    assert t5grade(["hash", "q1", "B", "--exercise", "01_unscaled_scores"]) == 0
    assert capsys.readouterr().out.strip() == get("01_unscaled_scores")["q1"].key
    with pytest.raises(SystemExit):  # argparse: --exercise is required, and must be an exercise of the course
        t5grade(["hash", "q1", "B"])
    assert t5grade(["hash", "q99", "B", "--exercise", "01_unscaled_scores"]) == 2
    assert "has no question 'q99'" in capsys.readouterr().err


def test_an_unknown_exercise_or_a_broken_template_is_one_line(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    base = ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "report"), "--quiet", "--isolation", "none"]
    assert t5grade([*base, "--exercise", "99_nothing"]) == 2
    assert "there is no exercise '99_nothing'; the course has 00_" in capsys.readouterr().err
    assert t5grade([*base, "--exercise", "01_unscaled_scores", "--template", str(tmp_path / "broken.ipynb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.ipynb is not a notebook" in err
