"""The grader and the generator find the course folder explicitly, never by guessing after an install."""
from __future__ import annotations

from pathlib import Path

import pytest

from t5lesson.exercises import get
from t5lesson.grade import grade_folder
from t5lesson.grade import main as t5grade
from t5lesson.grading import course
from t5lesson.grading.batch import load_template
from t5lesson.grading.course import CourseError, course_root

ROOT = Path(__file__).resolve().parents[3]


def test_a_checkout_is_its_own_course_folder():
    assert course_root() == ROOT
    assert t5grade(["generate", "--check", "--course", str(ROOT)]) == 0


def test_installed_outside_a_checkout_needs_course(monkeypatch, tmp_path):
    monkeypatch.setattr(course, "checkout", lambda: None)  # as in site-packages: no solutions/ beside the package
    with pytest.raises(CourseError, match="--course"):
        course_root()
    (tmp_path / "class").mkdir()
    with pytest.raises(CourseError):
        grade_folder(tmp_path / "class", tmp_path / "report", exercise_id="01_unscaled_scores")
    assert t5grade(["generate", "--check"]) == 2  # one line that says to pass --course, no traceback
    template = load_template(get("01_unscaled_scores"), course=ROOT)
    assert template.metadata["t5lesson"]["exercise"] == "01_unscaled_scores"


def test_a_folder_without_exercises_is_not_a_course(tmp_path):
    with pytest.raises(CourseError, match="not the course folder"):
        course_root(tmp_path)
