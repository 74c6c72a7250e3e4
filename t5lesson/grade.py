"""`python -m t5lesson.grade`, the instructor's command from before the move, runs t5lesson.grading.batch."""
from .grading.batch import Limits, grade_folder, main  # noqa: F401

if __name__ == "__main__":
    raise SystemExit(main())
