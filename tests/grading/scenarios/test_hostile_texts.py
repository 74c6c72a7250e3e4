"""Text a submission or its kernel produced is inert wherever the grader writes it.

One small class of exercise 03, graded once by root in this process and once by a normal user
through the instructor's command: `mallory` raises, from her answer and
from a cell of her own, error texts full of terminal escapes, Markdown, HTML, links and a forged
sentence about a blocked reference naming `alice`; `alice` is the untouched solution; the folder
also holds files whose names a spreadsheet reads as formulas, a name with invisible characters and
a non-notebook whose name holds backticks. Every report file, then the LMS export, is checked.
"""
from __future__ import annotations

import csv
import io
import shutil
import tempfile
import types
from pathlib import Path

import pytest
from isolation_helpers import ISOLATION, grade_as, normal_user_for_test

from t5lesson import exercises
from t5lesson.grade import Limits, grade_folder
from t5lesson.grading import harvest
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.integrations.lms import export
from t5lesson.grading.reports import store
from t5lesson.grading.reports.progress import Progress

from synthetic_class import add_after, full, set_cell, write

LIMITS = Limits(cell_timeout=10, notebook_timeout=40, harvest_timeout=10, stuck_grace=3, startup_timeout=30)
ESCAPES = "\\x1b]0;window-title\\x07\\x1b[2J\\x1b[31mRED\\x1b[0m \\x1b[8mhidden \\u202eevil\\u200b"
FORGED = (f"the reference implementation {harvest.BLOCKED_MESSAGE} (none\\n- `alice`, q7: "
          "t5lesson.buckets:relative_position_bucket)")
LINKS = ("[see your marks here](https://attacker.invalid) ![p](https://attacker.invalid/p.png) "
         "<img src=x onerror=alert(1)>")
NOTE = f"\\n## Questions\\n- q7: Correct: all cases right. [4/4] {LINKS} {ESCAPES}"
ANSWER = f'''def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    raise RuntimeError("{FORGED} {ESCAPES} {LINKS}")'''
BACKTICKS = "readme`<b onclick=x>`.txt"


def _as_normal_user(root, submissions, report) -> list:
    """Grade the class through the instructor's command as a normal user; the verdicts, read back."""
    user = normal_user_for_test()
    done = grade_as(user, root, submissions, report, LIMITS, package=PACKAGE_PARENT)
    assert done.returncode == 0, done.stderr[-3000:]
    return store.read(report, exercises).graded


@pytest.fixture(scope="module", params=["root", "normal user"])
def graded_class(request, tmp_path_factory):
    root = Path(tempfile.mkdtemp(prefix="t5texts-"))  # not under /root: a normal user must reach it
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    submissions, report = root / "subs", root / "report"
    submissions.mkdir()
    write(full(), submissions / "alice.ipynb")
    nb = set_cell(full(), "q7-answer", ANSWER)
    write(add_after(nb, "q7-answer", f'raise ValueError("{NOTE}")'), submissions / "mallory.ipynb")
    for name in ("-x", "'-x", "=cmd", "'=cmd", "ada\u200b"):
        write(full(), submissions / f"{name}.ipynb")
    (submissions / BACKTICKS).write_text("not a notebook")
    if request.param == "root":
        graded = grade_folder(submissions, report, limits=LIMITS, jobs=2, isolation=ISOLATION)
    else:
        graded = _as_normal_user(root, submissions, report)
    return {g.student: g for g in graded}, report, root


def _report_texts(report):
    return {p.relative_to(report).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(report.rglob("*")) if p.is_file()}


def test_the_class_was_graded(graded_class):
    graded, _, _ = graded_class
    assert set(graded) == {"alice", "mallory", "-x", "'-x", "=cmd", "'=cmd", "ada?"}
    assert graded["alice"].status == "graded" and graded["alice"].outcomes[6].points == 4
    assert graded["mallory"].outcomes[6].points == 0


def test_no_report_holds_a_control_character_or_escape(graded_class):
    _, report, _ = graded_class
    for name, text in _report_texts(report).items():
        bad = [c for c in text if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) < 0xa0 or c in "\u202e\u200b"]
        assert not bad, (name, bad[:5])


def test_summary_names_no_innocent_student(graded_class):
    _, report, _ = graded_class
    summary = (report / "summary.md").read_text()
    assert "The blocked reference was called" not in summary and "`alice`, q7" not in summary
    assert "- ``readme`<b onclick=x>`.txt``: not a notebook" in summary


def test_feedback_cannot_forge_its_structure(graded_class):
    _, report, _ = graded_class
    lines = (report / "feedback" / "mallory.md").read_text().splitlines()
    assert [line for line in lines if line.startswith("#")] == [lines[0], "## Questions", "## About your notebook"]
    assert [line for line in lines if line.startswith("- q7")] == [next(x for x in lines if x.startswith("- q7:"))]
    q7 = next(x for x in lines if x.startswith("- q7:"))
    assert q7.startswith("- q7: Error:") and q7.endswith("[0/4]")
    assert "alice" not in q7 and "see your" not in q7  # a hidden case's feedback shows no text the code raised
    note = next(x for x in lines if x.startswith("- Error: ValueError"))
    assert "\\[see your marks here\\](https://attacker.invalid)" in note and "\\<img src=x" in note
    assert "\\## Questions \\- q7: Correct" not in note  # one line; a mid-line '#' or '-' is plain text
    assert "## Questions - q7: Correct: all cases right. \\[4/4\\]" in note


def test_csv_cells_and_the_lms_export_keep_every_student(graded_class, tmp_path):
    graded, report, _ = graded_class
    with open(report / "gradebook.csv", newline="") as f:
        cells = [row["student"] for row in csv.DictReader(f)]
    assert sorted(cells) == sorted(["alice", "mallory", "'-x", "''-x", "'=cmd", "''=cmd", "ada?"])
    ids = tmp_path / "ids.csv"
    with open(ids, "w", newline="") as f:
        csv.writer(f).writerows([["submission", "lms_id"], *([s, f"L{n}"] for n, s in enumerate(sorted(graded)))])
    result = export(report, ids, tmp_path / "lms", catalogue=exercises)
    assert result["exported"] == len(graded) and not result["no_id"] and not result["no_submission"]
    page = (tmp_path / "lms" / "feedback" / f"L{sorted(graded).index('mallory')}.md").read_text()
    assert page == (report / "feedback" / "mallory.md").read_text() and "\x1b" not in page
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert headings[1:] == ["## Questions", "## About your notebook"]


def test_progress_lines_are_inert():
    """The terminal lines name a student through `inert`, whatever the verdict holds."""
    stream = io.StringIO()
    verdict = types.SimpleNamespace(student="a\x1b]0;T\x07b\u202e", status="graded", total=1, seconds=0.0)
    Progress(stream, bar=False)(1, 1, verdict, types.SimpleNamespace(auto_points=1))
    assert "] ab: 1/1 graded" in stream.getvalue() and "\x1b" not in stream.getvalue()
