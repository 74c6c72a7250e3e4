"""The class report: its tables (on a class made without kernels, and on a real run), and the page."""
from __future__ import annotations

import copy
import csv
import io

import nbformat
import pytest
from fake_class import fake_class

from conftest import ROOT, SAMPLE_EXERCISE
from t5lesson.exercises import Exercise
from t5lesson.grading.reports.class_page import class_report_files
from t5lesson.grading.reports.files import uncell
from t5lesson.grading.reports.store import question_titles


@pytest.fixture(scope="module")
def fake():
    exercise, graded = fake_class()
    return exercise, graded, class_report_files(exercise, graded)


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_questions_come_hardest_first_and_counts_add_up(fake):
    exercise, graded, files = fake
    rows = _rows(files["class_report/questions.csv"])
    auto = [r for r in rows if r["mean_fraction"]]
    fractions = [float(r["mean_fraction"]) for r in auto]
    free = [q.id for q in exercise.questions if not q.auto_scored]
    assert fractions == sorted(fractions) and free and [r["question"] for r in rows[len(auto):]] == free  # last
    ok = [g for g in graded if g.status == "graded"]
    for r in auto:
        assert int(r["graded_submissions"]) == len(ok) == 40
        assert sum(int(r[c]) for c in ("full", "partial", "zero", "not_attempted")) == 40
        earned = sum(o.points for g in ok for o in g.outcomes if o.question == r["question"])
        assert float(r["mean_points"]) == pytest.approx(earned / 40, abs=1e-4)


def test_wrong_answers_are_counted_with_the_feedback_they_got(fake):
    _, graded, files = fake
    rows = _rows(files["class_report/wrong_answers.csv"])
    q3 = [r for r in rows if r["question"] == "q3"]
    given = [next(o for o in g.outcomes if o.question == "q3") for g in graded
             if g.answers.get("q3") == {"answer": "12"}]
    assert q3[0]["answer"] == "12" and int(q3[0]["count"]) == len(given) > 0
    assert q3[0]["feedback"] == given[0].message == "that is the encoder's bucket; the decoder uses all its buckets " \
                                                    "for one side."
    strings = [r for r in rows if r["question"] == "q5" and uncell(r["answer"]) == "'12'"]
    assert strings and "drop the quotes" in strings[0]["feedback"]  # a string answer keeps its own feedback


def test_code_cases_that_failed_most(fake):
    _, graded, files = fake
    cases = [r for r in _rows(files["class_report/code_cases.csv"]) if r["question"] == "q7"]
    ran = [g for g in graded if g.status == "graded" and "failed" in g.answers.get("q7", {})]
    assert {int(r["attempted"]) for r in cases} == {len(ran)} and ran
    counts = [int(r["failed"]) for r in cases]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    top = cases[0]
    assert counts[0] == sum(1 for g in ran if int(top["case"]) - 1 in g.answers["q7"]["failed"])
    assert top["call"].startswith("my_bucket(") and top["topic"]


def _with_objectives(exercise, objectives) -> Exercise:
    """The exercise with each question's objectives replaced by objectives(question)."""
    questions = []
    for q in exercise.questions:
        q = copy.copy(q)
        object.__setattr__(q, "objectives", objectives(q))
        questions.append(q)
    return Exercise(exercise.id, exercise.title, tuple(questions))


def test_statuses_and_objectives(fake):
    exercise, graded, files = fake
    statuses = {r["status"]: r["students"] for r in _rows(files["class_report/statuses.csv"])}
    assert list(statuses)[-1] == "graded" and statuses["unreadable"] == "zoe_unreadable"
    assert statuses["time limit"] == "yann_loop" and statuses["kernel died"] == "xia_crash"
    named = sorted({str(o) for q in exercise.questions for o in q.objectives}, key=int)  # the bank's own
    objectives = _rows(files["class_report/objectives.csv"])
    assert named and [r["objective"] for r in objectives] == named
    for r in objectives:
        assert r["questions"] == " ".join(q.id for q in exercise.questions if int(r["objective"]) in q.objectives)
    without = class_report_files(_with_objectives(exercise, lambda q: ()), graded)
    assert _rows(without["class_report/objectives.csv"]) == []
    assert "No objectives recorded" in without["report.html"]

    with_objectives = _with_objectives(exercise, lambda q: {"q1": (1,), "q2": (1, 2), "q3": (2,)}.get(q.id, (3,)))
    files = class_report_files(with_objectives, graded)
    rows = _rows(files["class_report/objectives.csv"])
    assert [r["objective"] for r in rows] == ["1", "2", "3"] and rows[0]["questions"] == "q1 q2"
    ok = [g for g in graded if g.status == "graded"]
    earned = sum(o.points for g in ok for o in g.outcomes if o.question in ("q1", "q2"))
    possible = 40 * (exercise["q1"].points + exercise["q2"].points)
    assert float(rows[0]["mean_fraction"]) == pytest.approx(earned / possible, abs=1e-4)


def test_the_page_shows_every_table_and_escapes_student_text():
    exercise, graded = fake_class(count=3)
    graded[0].student = "<script>alert(1)</script>\x1b[31m"
    files = class_report_files(exercise, graded)
    page = files["report.html"]
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\x1b" not in page
    assert "http://" not in page and "https://" not in page and " src=" not in page  # loads nothing
    for path, text in files.items():
        if path.endswith(".csv"):
            name = path.removeprefix("class_report/").removesuffix(".csv")
            assert f'<h2 id="{name.replace("_", "-")}">' in page
            header = next(csv.reader(io.StringIO(text)))
            assert "".join(f"<th>{h}</th>" for h in header) in page or not _rows(text)


def test_the_real_run_writes_the_report(sample_runs):
    page = (sample_runs["whole"] / "report.html").read_text()
    exercise = SAMPLE_EXERCISE
    assert "broken" in page and "unreadable" in page
    titles = question_titles(exercise, nbformat.read(ROOT / "exercises" / f"{exercise.id}.ipynb", as_version=4))
    assert titles.keys() == set(exercise.ids)  # titles from the handed-out notebook
    questions = {r["question"]: r for r in _rows((sample_runs["whole"] / "class_report" / "questions.csv").read_text())}
    assert {q: r["title"] for q, r in questions.items()} == titles
    for q in exercise.ids:
        assert f"<td>{q}</td>" in page and f"<td>{titles[q]}</td>" in page
    wrong = _rows((sample_runs["whole"] / "class_report" / "wrong_answers.csv").read_text())
    assert {(r["question"], r["answer"]) for r in wrong} >= {("q1", "28"), ("q6", "B")}  # ben's answers
    cases = _rows((sample_runs["whole"] / "class_report" / "code_cases.csv").read_text())
    assert cases and all(r["failed"] == "1" and r["attempted"] == "2" for r in cases)  # ben fails 17 of 91
