"""The grading engine: question kinds, `check()` in the notebook, the class grader. It knows no course:
the exercises it grades (the bank) are `t5lesson/exercises/`, bound to it by `t5lesson.check` and `t5lesson.grade`.

See docs/grading.md. The learner imports `from t5lesson.check import checker`; the instructor
runs `t5grade grade SUBMISSIONS_DIR --out REPORT_DIR`.
"""
import sys


def skip_uri_grammar() -> None:
    """Keep jsonschema's optional rfc3987_syntax out of the engine's own processes (`t5grade`, the
    worker; never a learner's kernel): it builds a whole grammar on import, for URI checks grading never makes."""
    # None in sys.modules is how Python marks a module that must not be imported; typeshed allows only modules
    sys.modules.setdefault("rfc3987_syntax", None)  # pyright: ignore[reportArgumentType]
