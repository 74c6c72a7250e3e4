"""The grading engine: question kinds, `check()` in the notebook, the class grader. It knows no course:
the exercises it grades (the bank) are `t5lesson/exercises/`, bound to it by `t5lesson.check` and `t5lesson.grade`.

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
    # None in sys.modules is how Python marks a module that must not be imported; typeshed allows only modules
    sys.modules.setdefault("rfc3987_syntax", None)  # pyright: ignore[reportArgumentType]
