"""Which isolation the grading tests can ask for on this machine.

`ISOLATION` is "auto" where the grader can isolate kernels here (as root, or with bubblewrap),
else "none": the tests that do not depend on isolation then still run everywhere, and those
that do skip with the reason in `WHY_NOT`.
"""
from __future__ import annotations

from t5lesson.grading import sandbox
from t5lesson.grading.grade import _uids

WHY_NOT = sandbox.probe(_uids(1)[0])
ISOLATION = "auto" if WHY_NOT is None else "none"
