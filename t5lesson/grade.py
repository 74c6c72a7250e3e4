"""`python -m t5lesson.grade`, the instructor's command from before the move, runs t5lesson.grading.grade."""
from .grading.grade import Limits, grade_folder, main  # noqa: F401

if __name__ == "__main__":
    raise SystemExit(main())
