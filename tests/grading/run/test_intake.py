"""The submissions folder: ids without invisible characters, and reading only what the survey saw."""
from __future__ import annotations

import os

from t5lesson.grading.run import intake


def _notebook(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ids_hold_no_invisible_or_direction_characters(tmp_path):
    for name in ("ada\u200b", "ada?", "nimda\u202eexe", "tab\there", "zero\u2066width\u2069", "plain"):
        _notebook(tmp_path / f"{name}.ipynb", "{}")
    found, _ = intake.survey(tmp_path)
    students = sorted(e.student for e in found)
    assert students == ["ada?", "ada?~2", "nimda?exe", "plain", "tab?here", "zero?width?"]
    for student in students:
        assert all(c.isprintable() for c in student), student


def test_a_folder_swapped_for_a_link_after_the_survey_is_not_followed(tmp_path, monkeypatch):
    submissions, elsewhere = tmp_path / "submissions", tmp_path / "solutions"
    _notebook(submissions / "zz" / "03.ipynb", "the student's blank notebook")
    _notebook(elsewhere / "03.ipynb", "SECRET solution")
    found, _ = intake.survey(submissions)
    (entry,) = found
    assert intake.read(entry, 1 << 20) == b"the student's blank notebook"

    os.rename(submissions / "zz", submissions / "zz_orig")
    os.symlink(elsewhere, submissions / "zz")
    opened, real_open = [], os.open

    def recording_open(*args, **kwargs):  # what every descriptor read opens refers to
        fd = real_open(*args, **kwargs)
        info = os.fstat(fd)
        opened.append((info.st_dev, info.st_ino))
        return fd

    monkeypatch.setattr(intake.os, "open", recording_open)
    data = intake.read(entry, 1 << 20)
    assert isinstance(data, intake.Unreadable) and "replaced after the submissions folder was surveyed" in data.reason
    solution, other_folder = os.stat(elsewhere / "03.ipynb"), os.stat(elsewhere)
    assert opened and (solution.st_dev, solution.st_ino) not in opened
    assert (other_folder.st_dev, other_folder.st_ino) not in opened


def test_a_folder_replaced_by_another_real_folder_is_refused(tmp_path):
    submissions = tmp_path / "submissions"
    _notebook(submissions / "zz" / "03.ipynb", "blank")
    (entry,) = intake.survey(submissions)[0]
    os.rename(submissions / "zz", tmp_path / "kept")
    _notebook(submissions / "zz" / "03.ipynb", "another file under the same name")
    data = intake.read(entry, 1 << 20)
    assert isinstance(data, intake.Unreadable) and "replaced" in data.reason


def test_a_file_replaced_after_the_survey_is_refused(tmp_path):
    _notebook(tmp_path / "ada.ipynb", "first")
    (entry,) = intake.survey(tmp_path)[0]
    os.rename(tmp_path / "ada.ipynb", tmp_path / "old")
    os.symlink(tmp_path / "old", tmp_path / "ada.ipynb")
    assert isinstance(intake.read(entry, 1 << 20), intake.Unreadable)
    os.unlink(tmp_path / "ada.ipynb")
    _notebook(tmp_path / "ada.ipynb", "second")
    assert intake.read(entry, 1 << 20) == intake.CHANGED
