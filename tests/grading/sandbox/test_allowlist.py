"""A grading kernel sees the system's folders, the Python environment and the course package, and
nothing else: another copy of the course elsewhere on the machine (its solutions included) is
invisible to it, whoever grades, root or a normal user.

The copies go where a colleague's checkout or a data folder would be (/srv, /opt, /work, /var/lib,
the grader's home); a submission looks for them by path, through /proc/self/root, and by listing
their folders, and raises with what it saw, so the feedback carries the answer.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from isolation_helpers import REQUIRED, WHY_NOT, normal_user, run_as

from conftest import ROOT, SEED, feedback_of
from t5lesson.grading.course import PACKAGE_PARENT

from synthetic_class import add_after, full, write

PLACES = ("/srv", "/opt", "/work", "/var/lib", os.path.expanduser("~"))


def _need_isolation():
    if WHY_NOT is not None:
        if REQUIRED:
            pytest.fail(f"isolation is required here: {WHY_NOT}")
        pytest.skip(WHY_NOT)


def _copies() -> list[Path]:
    """A copy of the course's solutions and bank in each place (those that exist and take it)."""
    made, name = [], f"t5copy-{uuid.uuid4().hex[:8]}"
    for place in PLACES:
        if not os.path.isdir(place):
            continue
        copy = Path(place) / name
        try:
            shutil.copytree(ROOT / "solutions", copy / "solutions")
            shutil.copytree(ROOT / "t5lesson" / "exercises", copy / "t5lesson" / "exercises")
        except OSError:
            shutil.rmtree(copy, ignore_errors=True)
            continue
        os.chmod(copy, 0o755)
        made.append(copy)
    return made


def _looker(copies: list[Path]) -> str:
    paths = [str(c / "solutions" / "03_relative_position_buckets.ipynb") for c in copies]
    return f"""
import os
_seen = [p for p in {paths!r} if os.path.exists(p) or os.path.exists("/proc/self/root" + p)]
for _folder in {sorted({str(c.parent) for c in copies})!r}:
    try:
        _seen += [os.path.join(_folder, n) for n in os.listdir(_folder) if n.startswith("t5copy-")]
    except OSError:
        pass
raise RuntimeError(f"the probe saw {{sorted(set(_seen))}}")
"""


def _class(folder: Path, copies: list[Path]) -> None:
    folder.mkdir()
    write(add_after(full(), "q1-answer", _looker(copies)), folder / "looker.ipynb")


def _saw(report: Path) -> str:
    text = feedback_of(report)["looker"]
    assert "the probe saw" in text, text
    return text.split("the probe saw ", 1)[1].split("]", 1)[0] + "]"


def _grade_and_look(tmp: Path, copies, as_user=None) -> str:
    folder, report = tmp / "subs", tmp / "report"
    _class(folder, copies)
    argv = [sys.executable, "-m", "t5lesson.grade", "grade", str(folder), "--out", str(report), "--quiet",
            "--jobs", "1", "--seed", SEED]
    if as_user is None:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    else:
        uid, gid = as_user
        for path in (tmp, folder, *folder.iterdir()):
            os.chown(path, uid, gid)
        report.mkdir()
        os.chown(report, uid, gid)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8",
               "PYTHONPATH": str(PACKAGE_PARENT)}
        done = run_as(uid, gid, argv, cwd=str(tmp), env=env, timeout=600, reach=[str(PACKAGE_PARENT), str(tmp)])
    assert done.returncode == 0, done.stderr[-3000:]
    return _saw(report)


def test_the_grader_itself_can_see_the_copies():
    copies = _copies()
    try:
        assert copies and all((c / "solutions").is_dir() for c in copies)  # the probe has something to find
    finally:
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)


@pytest.mark.parametrize("who", ["root", "a normal user"])
def test_a_kernel_cannot_see_another_copy_of_the_course(who):
    _need_isolation()
    user = None
    if who == "a normal user":
        user = normal_user() if os.geteuid() == 0 else None
        if isinstance(user, str):
            pytest.fail(user) if REQUIRED else pytest.skip(user)
    elif os.geteuid() != 0:
        pytest.skip("the tests run as a normal user: the other case covers it")
    copies = _copies()
    tmp = Path(tempfile.mkdtemp(prefix="t5allow-"))
    os.chmod(tmp, 0o755)
    try:
        assert _grade_and_look(tmp, copies, user) == "[]"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)
