"""`t5grade`'s one error boundary: an expected failure is one line (exit 2), a bug names its log (exit 3)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from t5lesson.grade import main as t5grade
from t5lesson.grading import cli, errors
from t5lesson.grading.course import CourseError
from t5lesson.grading.records import BoundsError
from t5lesson.grading.reports.store import ReportError

ROOT = Path(__file__).resolve().parents[2]


def test_the_engine_errors_share_one_base():
    for error in (CourseError, BoundsError, ReportError, errors.SettingsError, errors.InputError):
        assert issubclass(error, errors.GradingError)
    assert issubclass(errors.SettingsError, ValueError)  # callers that caught the ValueError it was still do


def test_bad_input_is_one_line_without_a_traceback(tmp_path):
    """A merge of a folder that is no report: exit 2, one line, no traceback (in a process of its own)."""
    (tmp_path / "not_a_report").mkdir()
    done = subprocess.run([sys.executable, "-m", "t5lesson.grade", "merge", str(tmp_path / "not_a_report"),
                           "--out", str(tmp_path / "merged")], cwd=ROOT, capture_output=True, text=True, timeout=120)
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
    """A bug (here a KeyError planted in the merge) is no setting to fix: the one line names the log with the
    traceback, in the output folder when there is one, else in a temporary file."""
    def broken(*args, **kwargs):
        raise KeyError("planted")

    import t5lesson.grading.integrations.shards as shards

    monkeypatch.setattr(shards, "merge", broken)
    monkeypatch.setattr(cli.tempfile, "tempdir", str(tmp_path))
    out = tmp_path / "merged"
    if has_out:
        out.mkdir()
    assert t5grade(["merge", str(tmp_path / "a"), "--out", str(out)]) == 3
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
