"""The graded exercises: question kinds and the exercise bank, `check()` in the notebook, the class grader.

See docs/grading.md. The learner imports `from t5lesson.check import checker`; the instructor
runs `t5grade grade SUBMISSIONS_DIR --out REPORT_DIR`.
"""
