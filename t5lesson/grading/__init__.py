"""The graded exercises: question kinds and the exercise bank, `check()` in the notebook, the class grader.

See docs/grading.md. The learner imports `from t5lesson.check import checker`; the instructor
runs `t5grade grade SUBMISSIONS_DIR --out REPORT_DIR`.
"""
import sys


def skip_uri_grammar() -> None:
    """Go without jsonschema's optional rfc3987_syntax, which builds a whole grammar when it is imported
    (by nbformat, through jsonschema), in every process, for URI checks that grading never makes.

    For the engine's own processes only (`t5grade`, the worker), before nbformat is imported: never
    in a learner's kernel.
    """
    sys.modules.setdefault("rfc3987_syntax", None)
