"""A submission cannot forge, pre-empt or replay the record of its answers, as root and as a normal user.

One class of exercise 3, an honest notebook beside notebooks that each try one route to points they
did not write (question 7, `my_bucket`, 4 points), is graded by root in this process and by a normal
user through the instructor's command. Each route must earn at most a third of question 7, and be
named (in the feedback, and for the instructor in grades.json's flags); the honest notebook keeps
full marks and no flag:
- a `pre_run_cell` hook reads the nonce and the hidden cases from the grader's reading cell and
  prints a right record first (the answer cell is the blank stub);
- the same hook, with the grader's own record silenced (IPython's publish function replaced);
- the same hook, rewriting the grader's own record on its way out, its audit kept;
- the hook packed into one compressed line in the edited check cell, beside a wrong answer;
- an answer that walks up to the grader's reading code and calls its undo of the blocking;
- answers that raise the case they were called with (in a message, as a class name, in a
  KeyboardInterrupt that stops the reading cell), so that feedback would carry the hidden case out.
"""
from __future__ import annotations

import base64
import json
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

from isolation_helpers import ISOLATION, grade_as, normal_user_for_test

from t5lesson.grade import grade_folder
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.protocol import Limits

from synthetic_class import add_after, blank, full, set_cell, write

LIMITS = Limits(cell_timeout=20, notebook_timeout=90, harvest_timeout=20, startup_timeout=30)
Q7_POINTS = 4.0

# The right answer to question 7 (the solution's), kept inside the hook: the answer cell stays the blank stub.
_RIGHT = next(c.source for c in full().cells if c.get("metadata", {}).get("t5lesson", {}).get("cell") == "q7-answer")
_RIGHT = "import math\nimport numpy as np\n" + _RIGHT.replace("def my_bucket(", "def _right(")

# Reads `namespace["emit"](NONCE, SPEC, globals())` out of the reading cell and answers every case.
_FORGE = _RIGHT + '''
import ast, json, re
from IPython import get_ipython
import IPython.core.display_functions as _display

_publish = _display.publish_display_data
_MIME = "text/x-t5lesson-harvest"

def _forged(raw):
    found = re.search(r'namespace\\["emit"\\]\\((.*), globals\\(\\)\\)', raw or "")
    if not found:
        return None
    nonce, spec = ast.literal_eval("(" + found.group(1) + ")")
    if spec.get("id") != "q7":
        return None
    from t5lesson.grading.harvest import to_plain
    cases = [{"ok": to_plain(_right(*c["args"], **c["kwargs"]))} for c in spec["cases"]]
    return nonce, {"status": "ran", "cases": cases}

def _forge(info):
    made = _forged(info.raw_cell)
    if made is not None:
        _publish({_MIME: json.dumps({"nonce": made[0], "id": "q7", "record": made[1]})})
'''
FIRST = _FORGE + '\nget_ipython().events.register("pre_run_cell", _forge)\n'
SILENCED = _FORGE + '''
def _quiet(data, *args, **kwargs):
    if _MIME not in data:
        return _publish(data, *args, **kwargs)
import IPython.display
_display.publish_display_data = IPython.display.publish_display_data = _quiet
get_ipython().events.register("pre_run_cell", _forge)
'''
REWRITTEN = _FORGE + '''
_seen = {}

def _keep(info):
    _seen["raw"] = info.raw_cell

def _rewrite(data, *args, **kwargs):
    if _MIME in data:
        made = _forged(_seen.get("raw"))
        if made is not None:
            payload = json.loads(data[_MIME])
            payload["record"] = made[1]
            data = {_MIME: json.dumps(payload)}
    return _publish(data, *args, **kwargs)
import IPython.display
_display.publish_display_data = IPython.display.publish_display_data = _rewrite
get_ipython().events.register("pre_run_cell", _keep)
'''
PACKED = ('check("q7")\nimport zlib, base64; exec(zlib.decompress(base64.b64decode('
          + repr(base64.b64encode(zlib.compress(FIRST.encode())).decode()) + ')))')
WRONG_ANSWER = '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    return 0
'''
UNDO = '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        undo = frame.f_locals.get("restore")
        if callable(undo):
            undo()
            break
        frame = frame.f_back
    from t5lesson.buckets import relative_position_bucket
    import numpy as np
    return relative_position_bucket(np.asarray(relative_position), bidirectional, num_buckets, max_distance).tolist()
'''
LEAK = '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    raise RuntimeError("CASE" + repr((relative_position, bidirectional, num_buckets, max_distance)))
'''
LEAK_CLASS = '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    name = "CASE_%d_%d_%d" % (abs(hash(repr(relative_position))), num_buckets, max_distance)
    raise type(name, (Exception,), {})()
'''
LEAK_INTERRUPT = """
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    raise KeyboardInterrupt("CASE" + repr((relative_position, bidirectional, num_buckets, max_distance)))
"""

# student -> (what q7 may earn at most, words its feedback must hold, words it must not)
EXPECTED = {
    "honest": (Q7_POINTS, "Correct: all", "tampered"),
    "first": (Q7_POINTS / 3, "more than one record", None),
    "silenced": (Q7_POINTS / 3, "lacks the grader's own check", None),
    "rewritten": (Q7_POINTS / 3, "pre_run_cell callback", None),
    "packed": (Q7_POINTS / 3, "tampered", None),
    "undo": (Q7_POINTS / 3, "blocking of the reference was undone", None),
    "leak": (0.0, "raised RuntimeError", "CASE"),
    "leak_class": (0.0, "an exception of its own class", "CASE"),
    "leak_interrupt": (0.0, "could not be read back (KeyboardInterrupt", "CASE"),
}


def _build(folder: Path) -> None:
    folder.mkdir(parents=True)
    write(full(), folder / "honest.ipynb")
    for name, hook in (("first", FIRST), ("silenced", SILENCED), ("rewritten", REWRITTEN)):
        nb = full()
        set_cell(nb, "q7-answer", blank_answer())
        add_after(nb, "setup", hook)
        write(nb, folder / f"{name}.ipynb")
    nb = full()
    set_cell(nb, "q7-answer", WRONG_ANSWER)
    set_cell(nb, "q7-check", PACKED)
    write(nb, folder / "packed.ipynb")
    answers = {"undo": UNDO, "leak": LEAK, "leak_class": LEAK_CLASS, "leak_interrupt": LEAK_INTERRUPT}
    for name, answer in answers.items():
        write(set_cell(full(), "q7-answer", answer), folder / f"{name}.ipynb")


def blank_answer() -> str:
    return next(c.source for c in blank().cells if c.get("metadata", {}).get("t5lesson", {}).get("cell") == "q7-answer")


def _check(report: Path) -> None:
    doc = json.loads((report / "grades.json").read_text())
    rows = {s["student"]: s for s in doc["submissions"]}
    assert set(rows) == set(EXPECTED)
    for student, (most, said, unsaid) in EXPECTED.items():
        q7 = next(o for o in rows[student]["outcomes"] if o["question"] == "q7")
        feedback = (report / "feedback" / f"{student}.md").read_text()
        assert q7["points"] <= most + 1e-9, (student, q7)
        assert said in feedback, (student, feedback)
        if unsaid:
            assert unsaid not in feedback and unsaid not in json.dumps(rows[student]), (student, feedback)
        flagged = rows[student].get("flags", {})
        assert bool(flagged) == (student in ("first", "silenced", "rewritten", "packed", "undo")), (student, flagged)
    assert rows["honest"]["status"] == "graded" and sum(o["points"] for o in rows["honest"]["outcomes"]) == 14
    summary = (report / "summary.md").read_text()
    listed = summary.split("## Notebooks that reached into the grader's cells")[1].split("\n## ")[0]
    named = {line.split("`")[1] for line in listed.splitlines() if line.startswith("- `")}
    assert named == {"first", "silenced", "rewritten", "packed", "undo"}, listed


def test_forged_and_replayed_records_are_held_by_root(tmp_path):
    folder, report = tmp_path / "subs", tmp_path / "report"
    _build(folder)
    grade_folder(folder, report, limits=LIMITS, jobs=2, isolation=ISOLATION, seed="forged records")
    _check(report)


def test_forged_and_replayed_records_are_held_for_a_normal_user():
    user = normal_user_for_test()
    root = Path(tempfile.mkdtemp(prefix="t5forge-"))
    try:
        _build(root / "subs")
        done = grade_as(user, root, root / "subs", root / "report", LIMITS, "--seed", "forged records",
                        package=PACKAGE_PARENT)
        assert done.returncode == 0, done.stderr
        _check(root / "report")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_undone_blocking_is_seen_in_the_kernel_too():
    """still_blocked, in this process: True while blocked, False once the learner's code calls the undo."""
    from t5lesson.grading import harvest

    targets = ["t5lesson.buckets:relative_position_bucket", "t5lesson_no_such_module:f"]
    sys.modules.pop("t5lesson_no_such_module", None)
    restore = harvest.blocking(targets)
    try:
        assert harvest.still_blocked(targets)
    finally:
        restore()
    assert not harvest.still_blocked(targets)
