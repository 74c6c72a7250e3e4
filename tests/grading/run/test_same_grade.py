"""The same notebook always gets the same grade: exit() and quit() included, graded twice.

In Jupyter, exit() stops the kernel a little later, so what the grader read before the kernel
went away depended on timing. The grading kernel (t5lesson/grading/sandbox/kernel.py) makes exit(),
quit(), ask_exit() and `exit_now` stop only their cell. A notebook that breaks its kernel's
messaging gets its own status ("kernel broken"), not "grader error".
"""
from __future__ import annotations

import csv
import io

from isolation_helpers import ISOLATION
from nbformat.v4 import new_code_cell

from t5lesson.grade import Limits, grade_folder

from synthetic_class import FULL_MARKS, add_after, full, write

LIMITS = Limits(cell_timeout=6, notebook_timeout=40, harvest_timeout=10, stuck_grace=3, startup_timeout=30)
COPIES = 2

ENDINGS = {
    "quit_at_end": "quit()",
    "exit_then_more": "exit()\nprint('never printed')",
    "ask_exit": "get_ipython().ask_exit()",
    "exit_now": "get_ipython().exit_now = True",
    "sys_exit": "import sys\nsys.exit(0)",
}


def _rows(report) -> list[dict]:
    return list(csv.DictReader(io.StringIO((report / "gradebook.csv").read_text())))


def test_exit_and_quit_give_the_same_grade_every_time(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    for name, code in ENDINGS.items():
        for copy in range(COPIES):
            nb = full()
            if name.endswith("at_end"):
                nb.cells.append(new_code_cell(code))
            else:
                add_after(nb, "q2-check", code)
            write(nb, folder / f"{name}-{copy}.ipynb")
    nb = full()
    add_after(nb, "q2-check", "get_ipython().kernel.session.key = b'not the key'")
    write(nb, folder / "broken_session-0.ipynb")

    reports = []
    for run in range(2):
        out = tmp_path / f"report{run}"
        graded = grade_folder(folder, out, limits=LIMITS, jobs=2, isolation=ISOLATION)
        reports.append((out / "gradebook.csv").read_text())
        rows = {row["student"]: row for row in _rows(out)}
        for name in ENDINGS:
            assert {(rows[f"{name}-{c}"]["total"], rows[f"{name}-{c}"]["status"]) for c in range(COPIES)} \
                == {(FULL_MARKS, "graded")}, name
        assert rows["broken_session-0"]["status"] == "kernel broken"
        notes = {g.student: " ".join(g.notes) for g in graded}
        assert "called exit() or quit()" in notes["quit_at_end-0"]
        assert "could no longer talk to the kernel" in notes["broken_session-0"]
    assert reports[0] == reports[1]
