"""The report folder: one file that cannot be written costs no other, and summary.md names it."""
from __future__ import annotations

from fake_class import fake_class

from t5lesson.grading.reports import store
from t5lesson.grading.verdict import RunSettings


def test_a_file_that_cannot_be_written_costs_no_other(tmp_path):
    exercise, graded = fake_class(count=3)
    (tmp_path / "feedback").write_text("a file where the feedback folder should be")
    failed = store.write_all(tmp_path, exercise, graded, RunSettings())
    assert len(failed) == len(graded) and all(f.startswith("feedback/") for f in failed)
    for name in ("gradebook.csv", "free_text.csv", "grades.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    summary = (tmp_path / "summary.md").read_text()
    assert "## Reports not written" in summary and summary.count("\n- feedback/") == len(graded)
    assert not list(tmp_path.glob("**/.report-*.tmp"))  # no temporary file left behind
