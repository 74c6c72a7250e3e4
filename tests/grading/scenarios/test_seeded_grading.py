"""The instructor's seed: the same seed gives byte-identical reports, another seed other cases; the
seed is recorded for the instructor and shown to no student; and the reference is blocked from the
run's first cell, so a copy taken at import time is as blocked as the original.

Real kernels grade a partly right exercise-3 notebook (its `my_bucket` goes wrong in the
logarithmic range, so which cases fail depends on the draw) and an exercise-1 notebook that copies
the reference's code object at import time.
"""
from __future__ import annotations

import json
import subprocess
import sys

from isolation_helpers import ISOLATION_ARGS

from conftest import ROOT, grade_cli
from t5lesson.grading.run import compose

from synthetic_class import load, partial, set_cell, write

SOLUTION_01 = ROOT / "solutions" / "01_unscaled_scores.ipynb"
# an answer that takes the reference's code before any answer is read: blocked all the same
COPIED_REFERENCE = """
import types

import t5lesson.saturation as _saturation

_copy = types.FunctionType(_saturation.softmax_entropy.__code__, _saturation.softmax_entropy.__globals__)


def my_entropy(weights):
    return float(_copy(weights))
"""


def _grade(folder, out, *extra):
    done = subprocess.run(grade_cli("grade", str(folder), "--out", str(out), "--quiet", "--jobs", "2",
                                    *ISOLATION_ARGS, *extra), cwd=ROOT, capture_output=True, text=True, timeout=600)
    return done


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_one_seed_gives_identical_reports_and_another_seed_other_cases(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(partial(), folder / "pat.ipynb")
    runs = {}
    for name, seed in (("a", "first seed"), ("again", "first seed"), ("b", "second seed")):
        done = _grade(folder, tmp_path / name, "--seed", seed)
        assert done.returncode == 0, done.stderr
        runs[name] = _files(tmp_path / name)
    assert runs["a"] == runs["again"]
    assert runs["a"]["feedback/pat.md"] != runs["b"]["feedback/pat.md"]
    summary = runs["a"]["summary.md"].decode()
    assert "`first seed`" in summary and "--seed 'first seed'" in summary
    assert json.loads(runs["a"]["grades.json"])["settings"]["seed"] == "first seed"
    assert b"first seed" not in runs["a"]["feedback/pat.md"]  # feedback goes to the student


def test_the_seed_comes_from_a_file_or_is_drawn_and_recorded(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(partial(), folder / "pat.ipynb")
    secret = tmp_path / "seed.txt"
    secret.write_text("from a file\n", encoding="utf-8")
    done = _grade(folder, tmp_path / "filed", "--seed-file", str(secret))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "filed" / "grades.json").read_text())["settings"]["seed"] == "from a file"
    done = _grade(folder, tmp_path / "drawn")
    assert done.returncode == 0, done.stderr
    drawn = json.loads((tmp_path / "drawn" / "grades.json").read_text())["settings"]["seed"]
    assert len(drawn) == 16 and drawn in (tmp_path / "drawn" / "summary.md").read_text()


def test_bad_seed_settings_get_one_line(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    for extra, words in ((["--seed", "a", "--seed-file", str(empty)], "not both"),
                         (["--seed-file", str(empty)], "is empty")):
        done = _grade(folder, tmp_path / "out", "--exercise", "03_relative_position_buckets", *extra)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_reference_copied_at_import_is_blocked(tmp_path):
    assert "t5lesson.saturation:softmax_entropy" in compose.run_blocked(
        __import__("t5lesson.exercises", fromlist=["get"]).get("01_unscaled_scores"))
    folder = tmp_path / "class"
    folder.mkdir()
    write(set_cell(load(SOLUTION_01), "q7-answer", COPIED_REFERENCE), folder / "copier.ipynb")
    done = _grade(folder, tmp_path / "report", "--seed", "s")
    assert done.returncode == 0, done.stderr
    [row] = json.loads((tmp_path / "report" / "grades.json").read_text())["submissions"]
    q7 = next(o for o in row["outcomes"] if o["question"] == "q7")
    assert q7["points"] == 0 and "not available while your answer is graded" in q7["message"], q7
    assert "The blocked reference was called" in (tmp_path / "report" / "summary.md").read_text()


def test_a_module_imported_after_the_first_cell_is_blocked_and_still_imports():
    code = ("from t5lesson.grading import harvest\n"
            "harvest.block_for_the_run(['t5lesson.lessons.tiny_t5:greedy', 'json:dumps'])\n"
            "import json\n"
            "try:\n    json.dumps(1)\nexcept RuntimeError:\n    print('json blocked')\n"
            "import t5lesson.lessons.tiny_t5 as t\n"
            "try:\n    t.greedy(None, None, None)\nexcept RuntimeError as e:\n    print('greedy blocked')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split("\n")[:2] == ["json blocked", "greedy blocked"], done.stderr


def _drawn_for_each(folder, seed: str) -> dict:
    """{student: {question: the cases its reading cell carries}} for one grading of `folder`, with the
    run step replaced by a spy (no kernel runs; one job, so submissions are composed in folder order)."""
    import ast
    import re

    from t5lesson import exercises as bank
    from t5lesson.grading.batch import grade_folder
    from t5lesson.grading.run import intake

    emitted = re.compile(r'namespace\["emit"\]\((.*), globals\(\)\)')
    composed = []

    def spy(prep, limits, work, uid, walls):
        specs = [ast.literal_eval("(" + emitted.search(prep.notebook.cells[i].source).group(1) + ")")[1]
                 for i in prep.harvest_cell.values()]
        composed.append({spec["id"]: spec.get("cases") for spec in specs})
        return None, 0.0

    grade_folder(folder, folder.parent / f"report-{seed}-{len(list(folder.parent.iterdir()))}", catalogue=bank,
                 run=spy, seed=seed, jobs=1)
    return dict(zip([entry.student for entry in intake.survey(folder)[0]], composed, strict=True))


def test_each_submission_meets_its_own_hidden_cases_and_a_regrade_the_same(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("pat", "sam"):
        write(partial(), folder / f"{name}.ipynb")  # the very same bytes, two students
    edited = partial()
    edited.cells[-1].source += "\n"
    write(edited, folder / "pat_again.ipynb")
    first, again = _drawn_for_each(folder, "one class seed"), _drawn_for_each(folder, "one class seed")
    assert first == again  # a regrade meets the same cases
    shared = total = 0
    for one, other in (("pat", "sam"), ("pat", "pat_again"), ("sam", "pat_again")):
        for question in ("q7", "q8"):
            mine, theirs = first[one][question], first[other][question]
            assert mine != theirs, (one, other, question)
            shared += sum(a == b for a, b in zip(mine, theirs, strict=True))
            total += len(mine)
    # each case comes from one of VARIANTS drawn sets, so two students share about a quarter of the
    # drawn cases by chance (and every fixed one); one pair may share more, the class as a whole not
    assert shared < total / 2, (shared, total)
