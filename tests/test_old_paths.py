"""Module paths from before the split into core, lessons/ and grading/ still import, as the same modules."""
import importlib
import subprocess
import sys

import pytest

from t5lesson._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_is_the_new_module(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]


def test_submodule_of_a_moved_package_is_not_loaded_twice():
    old = importlib.import_module("t5lesson.exercise_bank.ex01_unscaled_scores")
    assert old is importlib.import_module("t5lesson.exercises.ex01_unscaled_scores")


def test_learner_import_and_instructor_command():
    from t5lesson.check import checker
    from t5lesson.grading.check import checker as moved

    assert checker is moved
    result = subprocess.run([sys.executable, "-m", "t5lesson.grade", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--out" in result.stdout, result.stderr
