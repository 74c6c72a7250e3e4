"""What notebooks saved before the package's split need: `t5lesson.check` and the instructor's command.

Handed-out exercise notebooks (tests/grading/scenarios/held_92d9028 holds one) import only
`from t5lesson.check import checker`, and that path is a real module. The old lesson-module paths
(`t5lesson.scaling`, `t5lesson.folding`, ...) were kept for one round by an import hook; no
notebook uses them any more, and the hook is gone: they fail like any missing module.
"""
import importlib
import subprocess
import sys

import pytest

RETIRED = ("t5lesson.scaling", "t5lesson.folding", "t5lesson.costs", "t5lesson.questions", "t5lesson.harvest",
           "t5lesson.exercise_bank", "t5lesson.explorers.scaling", "t5lesson.grading.bank", "t5lesson.grading.grade",
           # moved to t5lesson.common (shared by the lessons, lengthgen and the explorers); no notebook names these
           "t5lesson.lessons.figures", "t5lesson.lessons.progress", "t5lesson.lessons.determinism",
           # cut with the features they served (docs/grading.md, "Why not otter-grader, nbgrader or Gradescope alone")
           "t5lesson.grading.integrations.shards", "t5lesson.grading.integrations.gradescope",
           "t5lesson.grading.reports.class_page", "t5lesson.grading.questions.answers",
           "t5lesson.grading.sandbox.bubblewrap", "t5lesson.grading.questions.substance")  # merged


def test_learner_import():
    from t5lesson.check import checker

    check, hint = checker("01_unscaled_scores")
    assert callable(check) and callable(hint)


@pytest.mark.parametrize("old", RETIRED)
def test_retired_path_is_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_no_import_hook():
    import t5lesson

    assert not [f for f in sys.meta_path if type(f).__module__.startswith("t5lesson")], t5lesson


def test_instructor_command():
    for argv in (["-m", "t5lesson.grade", "--help"], ["-m", "t5lesson.grade", "grade", "--help"]):
        result = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
        assert result.returncode == 0 and "t5grade" in result.stdout, result.stderr
    assert "--out" in result.stdout and "--memory-mb" in result.stdout
