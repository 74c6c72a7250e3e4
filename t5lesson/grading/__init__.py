"""The graded exercises: question kinds and the exercise bank, `check()` in the notebook, the class grader.

See docs/grading.md. The learner imports `from t5lesson.check import checker`; the instructor
runs `python -m t5lesson.grading.batch SUBMISSIONS_DIR --out REPORT_DIR`.
"""
