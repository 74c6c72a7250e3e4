"""The learner's import, short and stable: `from t5lesson.check import checker` (the code: t5lesson.grading.check)."""
from .grading.check import Checker, checker  # noqa: F401
