"""Notebooks handed out before the package was split (commit 92d9028) still check and grade.

`held_92d9028/01_unscaled_scores.ipynb` is exercise 1 exactly as handed out then, with a
student's right answers typed into its answer cells. Its provided cells (setup and imports)
are the old ones; the grader must not fail on them.

Exercise 1 has since been re-cut to follow lesson 1 (its bucket questions went to exercise 3,
lesson 1's numbers and code came in from exercise 2), so only the questions asked both then and
now (q1, q2, q4, and the free text q3) can still be answered right by this notebook; the others
and the new cells are graded and reported as they are in the exercise today.
"""
from __future__ import annotations

import importlib
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from isolation_helpers import ISOLATION
from nbclient import NotebookClient

from t5lesson import exercises as bank
from t5lesson.grade import Limits, grade_folder

HERE = Path(__file__).resolve().parent
HELD = HERE / "held_92d9028" / "01_unscaled_scores.ipynb"
STILL_ASKED = ("q1", "q2", "q4")  # the auto-graded questions of exercise 1 then that it still asks

# The t5lesson import lines of the code cells of notebooks/ and exercises/ at commit 92d9028 whose
# modules still live at that path. The handed-out exercise notebooks import only `t5lesson.check`
# and `t5lesson`; the old lesson-module paths were retired (tests/test_old_paths.py).
IMPORTS_AT_92D9028 = """
from t5lesson import bucket_ranges
from t5lesson import causal_mask, relative_bias
from t5lesson.check import checker
from t5lesson.explorers.bias_heatmap import BiasHeatmapExplorer
from t5lesson.explorers.warmup import SoftmaxOfTwo
from t5lesson.lengthgen import SCHEMES, Config, evaluate, run_experiment, t5_variants, train
from t5lesson.lengthgen.counts import offset_counts, pairs_per_parameter, training_pairs_behind_offset
from t5lesson.lengthgen.figures import accuracy_figure, as_image, bias_figure, mean_table_text, pairs_figure
from t5lesson.lengthgen.stored import LESSON_SCHEMES, STORED_SETS, load_stored
from t5lesson.reference import reference_attention, reference_mask, report_match
from t5lesson.reference import reference_bias
""".strip().splitlines()


@pytest.mark.parametrize("line", IMPORTS_AT_92D9028)
def test_old_import_lines_still_work(line):
    module, names = re.fullmatch(r"from ([\w.]+) import (.+)", line).groups()
    loaded = importlib.import_module(module)
    for name in names.split(", "):
        assert hasattr(loaded, name), f"{line}: {name} is gone"


def test_held_notebook_checks_in_its_kernel():
    nb = nbformat.read(HELD, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    lines = [output.get("text", "").strip() for cell in nb.cells if cell.cell_type == "code"
             for output in cell.get("outputs", []) if output.get("name") == "stdout"]
    verdicts = {line.split(": ")[0]: line for line in lines if re.match(r"q\d+: ", line)}
    assert set(verdicts) == {"q1", "q2", "q4", "q5", "q6", "q7"}, lines  # one line per check cell, no traceback
    assert all(verdicts[q].split(": ")[1].startswith("Correct") for q in STILL_ASKED), verdicts


def test_held_notebook_grades_what_is_still_asked(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(HELD, folder / "held.ipynb")
    [graded] = grade_folder(folder, tmp_path / "report", limits=Limits(startup_timeout=30), jobs=1,
                            isolation=ISOLATION)
    exercise = bank.get("01_unscaled_scores")
    points = {o.question: o.points for o in graded.outcomes}
    assert graded.status == "graded", graded
    assert all(points[q] == exercise[q].points for q in STILL_ASKED), graded.outcomes
    # Notes only about the exercise's new shape (its setup and new cells), never an error in the old cells.
    assert all("provided cell" in note or "answer cell of q" in note for note in graded.notes), graded.notes
