"""solutions/ -> exercises/: stripped, blanked, cleared, reproducible; and graded end to end."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from isolation_helpers import ISOLATION_ARGS

from t5lesson import exercises
from t5lesson.exercises import get
from t5lesson.grade import main as t5grade
from t5lesson.grading.authoring import generate
from t5lesson.grading.authoring.notebook_format import SourceError, make_exercise, strip_solutions, validate

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9]*.ipynb"))


def test_exercises_are_up_to_date():
    assert t5grade(["generate", "--check"]) == 0, "run `t5grade generate` and commit exercises/"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_generation_is_byte_for_byte_reproducible(solution):
    first, second = generate.build(solution, exercises), generate.build(solution, exercises)
    assert first == second == (ROOT / "exercises" / solution.name).read_text(encoding="utf-8")


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_exercise_holds_no_solution_and_no_output(solution):
    exercise = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
    source = nbformat.read(solution, as_version=4)
    text = (ROOT / "exercises" / solution.name).read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    for cell in exercise.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    solved = {c.id: c.source for c in source.cells if c.metadata["t5lesson"].get("role") == "answer"}
    for cell in exercise.cells:
        if cell.id in solved:
            assert cell.source != solved[cell.id]


def test_strip_quiz_answers_and_function_bodies():
    quiz = "x = 1\n### BEGIN SOLUTION\nanswer_q1 = 'B'  # why\nhelper = 3\n### END SOLUTION"
    assert strip_solutions(quiz) == "x = 1\nanswer_q1 = None  # YOUR ANSWER HERE\nhelper = None  # YOUR ANSWER HERE"
    working = "x = 1\nanswer_q1 = None  # YOUR ANSWER HERE\nhelper = None  # your working, not graded"
    assert strip_solutions(quiz, graded="answer_q1") == working  # scaffolding does not look like an answer
    code = "def f(x):\n    '''doc'''\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n"
    assert strip_solutions(code) == "def f(x):\n    '''doc'''\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"


@pytest.mark.parametrize("source", [
    "### BEGIN SOLUTION\nx = 1", "x = 1\n### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
])
def test_unmatched_markers_are_errors(source):
    with pytest.raises(SourceError):
        strip_solutions(source)


def test_format_errors_are_caught():
    nb = nbformat.read(SOLUTIONS[0], as_version=4)
    exercise = get("01_unscaled_scores")
    validate(nb, exercise)
    broken = nbformat.from_dict(nb)
    broken.cells = [c for c in broken.cells if c.metadata["t5lesson"].get("question") != "q5"
                    or c.metadata["t5lesson"].get("role") != "answer"]
    with pytest.raises(SourceError, match="q5 needs exactly one code answer cell"):
        validate(broken, exercise)
    nb.cells[2].source += "\n### BEGIN SOLUTION\n### END SOLUTION"
    with pytest.raises(SourceError, match="outside an answer cell"):
        make_exercise(nb, exercise)


@pytest.mark.parametrize("old,new,error", [
    ("# Exercise 1: T5's unscaled score", "# Exercise 1: a T5 score", "the bank's title"),
    ("## Question 9 (4 points)", "## Question 9 (3 points)", "question 9 says 3 points"),
    ("## Question 3 (2 points, marked by your instructor)", "## Question 3 (2 points)", "marked by the instructor"),
    ('checker("01_unscaled_scores")', 'checker("01_unscaled")', "checker"),
])
def test_shown_facts_must_agree_with_the_bank(old, new, error):
    """Title, points and exercise id have one source, the bank; the notebook may only repeat them."""
    nb = nbformat.read(SOLUTIONS[0], as_version=4)
    changed = [c for c in nb.cells if old in c.source]
    assert changed, old
    changed[0].source = changed[0].source.replace(old, new)
    with pytest.raises(SourceError, match=error):
        validate(nb, get("01_unscaled_scores"))


def test_check_mode_reports_stale_and_orphan_files(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()
    shutil.copy(SOLUTIONS[0], tmp_path / "solutions" / SOLUTIONS[0].name)
    exercises = tmp_path / "exercises"
    exercises.mkdir()
    (exercises / SOLUTIONS[0].name).write_text("{}")
    (exercises / "99_orphan.ipynb").write_text("{}")
    assert t5grade(["generate", "--check", "--course", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "stale" in err and "99_orphan.ipynb has no source" in err


def _grade(folder: Path, out: Path, exercise_id: str) -> None:
    command = [sys.executable, "-m", "t5lesson.grade", "grade", str(folder), "--out", str(out),
               "--exercise", exercise_id, "--seed", "test_generate", *ISOLATION_ARGS]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "[2/2]" in result.stderr  # progress lines


def _files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_solution_full_marks_and_blank_not_attempted(solution, tmp_path):
    """The real grader, from the command line: what CI relies on for every exercise notebook."""
    exercise = get(nbformat.read(solution, as_version=4).metadata["t5lesson"]["exercise"])
    folder = tmp_path / "submissions"
    folder.mkdir()
    shutil.copy(solution, folder / "solution.ipynb")
    shutil.copy(ROOT / "exercises" / solution.name, folder / "blank.ipynb")
    _grade(folder, tmp_path / "first", exercise.id)
    gradebook = (tmp_path / "first" / "gradebook.csv").read_text()
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(gradebook))}
    assert float(rows["solution"]["total"]) == exercise.auto_points and rows["solution"]["status"] == "graded"
    assert float(rows["blank"]["total"]) == 0 and rows["blank"]["status"] == "graded"
    feedback = (tmp_path / "first" / "feedback" / "blank.md").read_text()
    lines = [line for line in feedback.splitlines() if line.startswith("- q")]
    assert len(lines) == len(exercise.questions) and all("Not attempted" in line for line in lines)
    for student in ("solution", "blank"):  # every provided cell ran in the graded kernel as in class
        text = (tmp_path / "first" / "feedback" / f"{student}.md").read_text()
        assert "in the provided cell" not in text, text
    submissions = json.loads((tmp_path / "first" / "grades.json").read_text())["submissions"]
    assert not any(s.get("flags") for s in submissions), submissions  # nothing flagged in honest notebooks
    if solution == SOLUTIONS[0]:  # grading again gives the same files, byte for byte
        _grade(folder, tmp_path / "second", exercise.id)
        assert _files(tmp_path / "first") == _files(tmp_path / "second")
