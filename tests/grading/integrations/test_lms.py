"""The LMS export: Canvas and Moodle layouts, numbers identical to the gradebook's, feedback as Markdown."""
from __future__ import annotations

import csv
import shutil
import subprocess

from conftest import ROOT, SAMPLE_EXERCISE, SAMPLE_TOTALS, grade_cli
from t5lesson.grading.verdict import format_points

IDS = "submission,lms_id,name,section\nada,S1001,\"Lovelace, Ada\",A\nben,S1002,Ben Bit,A\ncy,S1003,Cy Young,B\n" \
      "broken,S1004,Bo Ken,B\ndan,S1005,Dan Absent,B\n"
ASSIGNMENT = f"Exercise {SAMPLE_EXERCISE.id[:2]}"
(FREE,) = [q for q in SAMPLE_EXERCISE.questions if not q.auto_scored]  # the sample exercise has one free-text question
OUT_OF = format_points(SAMPLE_EXERCISE.auto_points)


def _export(report, tmp_path, *extra):
    tmp_path.mkdir(parents=True, exist_ok=True)
    ids = tmp_path / "ids.csv"
    ids.write_text(IDS, encoding="utf-8")
    out = tmp_path / "lms"
    result = subprocess.run(grade_cli("lms", str(report), "--ids", str(ids), "--out", str(out), *extra), cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    return result, out


def _gradebook(report) -> dict[str, dict]:
    with open(report / "gradebook.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_canvas_and_moodle_hold_the_gradebook_numbers(sample_runs, tmp_path):
    report = sample_runs["whole"]
    result, out = _export(report, tmp_path, "--assignment", ASSIGNMENT)
    assert result.returncode == 0, result.stderr
    assert "LMS ids without a submission (see unmatched.csv): dan" in result.stderr
    gradebook = _gradebook(report)
    with open(out / "canvas.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT]
    assert canvas[1] == ["    Points Possible", "", "", "", "", OUT_OF]  # free text is not marked yet
    by_id = {row[2]: row for row in canvas[2:]}
    assert by_id["S1001"][:5] == ["Lovelace, Ada", "", "S1001", "", "A"]
    lms_of = {"ada": "S1001", "ben": "S1002", "cy": "S1003", "broken": "S1004"}
    for student, lms_id in lms_of.items():
        row = gradebook[student]
        assert by_id[lms_id][5:] == [row["total"]]
    with open(out / "moodle.csv", newline="") as f:
        moodle = {row["ID number"]: row for row in csv.DictReader(f)}
    for student, lms_id in lms_of.items():
        assert moodle[lms_id][f"{ASSIGNMENT} (out of {OUT_OF})"] == gradebook[student]["total"]
        assert moodle[lms_id]["Feedback"] == (report / "feedback" / f"{student}.md").read_text()
    assert set(moodle) == set(lms_of.values())
    with open(out / "unmatched.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [{"what": "LMS id without a submission", "submission": "dan",
                                            "lms_id": "S1005"}]


def test_feedback_as_markdown(sample_runs, tmp_path):
    report = sample_runs["whole"]
    result, out = _export(report, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (out / "feedback" / "S1002.md").read_text() == (report / "feedback" / "ben.md").read_text()
    assert sorted(p.name for p in (out / "feedback").iterdir()) == [f"S100{i}.md" for i in range(1, 5)]


def test_free_text_points_count_once_marked(sample_runs, tmp_path):
    report = tmp_path / "report"
    shutil.copytree(sample_runs["whole"], report)
    with open(report / "free_text.csv", newline="") as f:
        sheet = list(csv.DictReader(f))
    marks = {"ada": FREE.points, "ben": FREE.points * 0.75, "cy": 0, "broken": 0}
    marks = {student: format_points(points) for student, points in marks.items()}
    for row in sheet:
        row["points"] = marks[row["student"]] if row["student"] != "cy" else ""
    _write(report / "free_text.csv", sheet)
    result, _ = _export(report, tmp_path)
    assert result.returncode == 2 and "marked only in part" in result.stderr

    for row in sheet:
        row["points"] = marks[row["student"]]
    _write(report / "free_text.csv", sheet)
    result, out = _export(report, tmp_path / "again")
    assert result.returncode == 0, result.stderr
    with open(out / "canvas.csv", newline="") as f:
        canvas = {row[2]: row for row in csv.reader(f)}
    assert canvas[""][5] == format_points(SAMPLE_EXERCISE.auto_points + FREE.points)  # automatic + free text
    for lms_id, student in (("S1001", "ada"), ("S1002", "ben"), ("S1003", "cy")):
        assert canvas[lms_id][5] == format_points(SAMPLE_TOTALS[student] + float(marks[student])), student
    assert f"- {FREE.id}: {marks['ben']}/{format_points(FREE.points)}" in (out / "feedback" / "S1002.md").read_text()


def _write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _synthetic_report(tmp_path, students, messages=None):
    """A report folder written by the grader's own code from made-up verdicts (no kernel runs)."""
    from t5lesson.grading.reports import store
    from t5lesson.grading.verdict import Graded, RunSettings, Status

    graded = []
    for n, student in enumerate(students):
        outcomes = [q.outcome("correct" if n % 2 else "incorrect", n % 2, (messages or {}).get(student, "ok."))
                    for q in SAMPLE_EXERCISE.questions]
        graded.append(Graded(student, f"{student}.ipynb", Status.GRADED, outcomes, [], {FREE.id: "text"}))
    report = tmp_path / "report"
    assert store.write_all(report, SAMPLE_EXERCISE, graded, RunSettings()) == []
    return report, {g.student: g.total for g in graded}


def test_ids_a_spreadsheet_would_read_as_formulas_are_matched_exactly(tmp_path):
    from t5lesson import exercises
    from t5lesson.grading.integrations.lms import export

    students = ["-x", "'-x", "=cmd", "'=cmd", "ada"]
    report, totals = _synthetic_report(tmp_path, students)
    cells = [row["student"] for row in csv.DictReader(open(report / "gradebook.csv", newline=""))]
    assert len(set(cells)) == 5 and all(c[:1] not in "=-" for c in cells)
    ids = tmp_path / "ids.csv"
    with open(ids, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "lms_id"])
        writer.writerows([s, f"L{n}"] for n, s in enumerate(students))
    result = export(report, ids, tmp_path / "lms", catalogue=exercises)
    assert result["exported"] == 5 and result["no_id"] == [] and result["no_submission"] == []
    moodle = list(csv.DictReader(open(tmp_path / "lms" / "moodle.csv", newline="")))
    grade_column = [c for c in moodle[0] if c.endswith(f"(out of {OUT_OF})")][0]
    got = {row["ID number"]: row[grade_column] for row in moodle}
    assert got == {f"L{n}": format_points(totals[s]) for n, s in enumerate(students)}


def test_lms_feedback_holds_no_live_link_image_or_escape(tmp_path):
    from t5lesson import exercises
    from t5lesson.grading.integrations.lms import export

    hostile = ("raised ValueError: [see your marks here](https://attacker.invalid) "
               "![p](https://attacker.invalid/p.png) <https://attacker.invalid> "
               "\x1b]0;window-title\x07\x1b[2J\x1b[31mRED\x1b[0m"
               "\n## Questions\n- q7: Correct: all cases right. [4/4] <img src=x onerror=alert(2)>")
    report, _ = _synthetic_report(tmp_path, ["mallory"], {"mallory": hostile})
    ids = tmp_path / "ids.csv"
    ids.write_text("submission,lms_id\nmallory,M1\n")
    export(report, ids, tmp_path / "lms", catalogue=exercises)
    markdown = (tmp_path / "lms" / "feedback" / "M1.md").read_text()
    moodle = (tmp_path / "lms" / "moodle.csv").read_text()
    for text in (markdown, moodle):
        assert "\x1b" not in text and "\x07" not in text
    # links, images and HTML stay text: their Markdown characters are escaped
    assert "\\[see your marks here\\](https://attacker.invalid)" in markdown and "!\\[p\\]" in markdown
    assert "\\<https://attacker.invalid\\>" in markdown and "\\<img src=x onerror=alert(2)\\>" in markdown
    assert markdown.count("\n## ") == 1  # no forged "## Questions" heading
    assert "\n- q7: Correct" not in markdown
