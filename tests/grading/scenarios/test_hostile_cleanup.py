"""What a kernel leaves on the machine, and what it hides from the limits, never costs the class.

Each class is graded through the instructor's command, as root and as a normal user (created
with useradd when missing), with a temp folder of its own (TMPDIR), so that what a run leaves
behind can be seen:
- a kernel that builds a 5,000-level folder tree in its socket folder (found from its connection
  file) and in its home, and a tree of 6,000 levels planted in every run's job folder, socket
  folder and in the batch's socket root (as a kernel that got one there would leave it): the
  reports are written, the two honest rows keep the totals they get without the hostile one, the
  hostile row has its verdict, and no run folder is left in the temp folder;
- a kernel that writes 5 x 20 MB and 10,000 empty files into its socket folder (with
  --disk-mb 16) lands none there: the folder is read-only once the kernel's sockets are bound;
- as a normal user (no cgroup), a kernel that hides 1,200 MB in memfd files (written, never
  mapped) under --memory-mb 800 is stopped with the memory verdict; the control is graded; and
  780 MB of files held open in its own /tmp (a tmpfs bounded by --disk-mb) are not memory there.
These tests skip where kernels cannot be isolated (CI requires them: T5LESSON_REQUIRE_ISOLATION=1).
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from isolation_helpers import REQUIRED, WHY_NOT, normal_user_for_test, run_as

from conftest import SAMPLES, SEED, feedback_of
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.sandbox.resources import remove_tree

from synthetic_class import add_after, full, write

RUN_FOLDERS = ("t5grade-", "t5ipc-")

DEEP_TREES = '''
import json, os
sockets = os.path.dirname(json.load(open(os.path.expanduser("~/connection.json")))["ip"])
made = {}
for name, where in (("sockets", sockets), ("home", os.path.expanduser("~"))):
    levels, error = 0, ""
    try:
        fd = os.open(where, os.O_RDONLY)
        for _ in range(5000):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd, levels = below, levels + 1
        os.close(fd)
    except OSError as exc:
        error = exc.strerror
    made[name] = [levels, error]
raise RuntimeError(f"deep trees: {made}")
'''

SOCKET_DISK = '''
import json, os
folder = os.path.dirname(json.load(open(os.path.expanduser("~/connection.json")))["ip"])
mb, files, errors = 0, 0, set()
for i in range(5):
    try:
        with open(os.path.join(folder, f"big{i}"), "wb") as f:
            for _ in range(20):
                f.write(b"x" * 2 ** 20)
                mb += 1
    except OSError as exc:
        errors.add(exc.strerror)
for i in range(10000):
    try:
        open(os.path.join(folder, f"empty{i}"), "w").close()
        files += 1
    except OSError as exc:
        errors.add(exc.strerror)
raise RuntimeError(f"socket folder: {mb} MB and {files} files written, errors {sorted(errors)}")
'''

MEMFD = '''
import os, time
fds = []
for i in range(30):
    fd = os.memfd_create(f"hidden{i}")
    for _ in range(40):
        os.write(fd, b"x" * 2 ** 20)
    fds.append(fd)
time.sleep(600)  # held until the memory watch stops the kernel (or the cell's time limit does)
raise RuntimeError("memfd files of 1200 MB survived")
'''

# The instructor's command, with every run's job folder, socket folder and the batch's socket root
# given a 6,000-level tree after the kernel has run (where a kernel that got one there leaves it).
PLANTING = '''
import os, sys
from pathlib import Path
from t5lesson.grading.protocol import Job
from t5lesson.grading.run import execute
from t5lesson.grade import main

def tree(top):
    fd = os.open(top, os.O_RDONLY)
    for _ in range(6000):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(fd)

real = execute._execute
def planted(job_dir, limits, pool):
    result = real(job_dir, limits, pool)
    sockets = Path(Job.read(job_dir / "job.json").sandbox.ipc_dir)
    for top in (job_dir / "planted", sockets / "planted", sockets.parent / ("planted-" + job_dir.name)):
        top.mkdir()
        tree(top)
    return result
execute._execute = planted
sys.exit(main(sys.argv[1:]))
'''


def _need_isolation():
    if WHY_NOT is not None:
        if REQUIRED:
            pytest.fail(f"T5LESSON_REQUIRE_ISOLATION=1 but kernels cannot be isolated here: {WHY_NOT}")
        pytest.skip(f"kernels cannot be isolated here: {WHY_NOT}")


def _user(who: str) -> tuple[int, int] | None:
    """None to grade as this process's own user, else (uid, gid) of a normal user (this process is root)."""
    if who == "root":
        if os.geteuid() != 0:
            pytest.skip("the tests run as a normal user: the normal user's run covers this one")
        return None
    if os.geteuid() != 0:
        return None  # the tests run as a normal user already
    return normal_user_for_test()


@pytest.fixture
def place():
    """A short private folder (socket paths must stay short): subs/, tmp/ (the run's TMPDIR), the report."""
    base = Path(tempfile.mkdtemp(prefix="t5hc-", dir="/tmp"))
    os.chmod(base, 0o755)
    (base / "subs").mkdir()
    (base / "tmp").mkdir(mode=0o700)
    try:
        yield base
    finally:
        remove_tree(base)


def _grade(base: Path, user, *options: str, planting: bool = False) -> tuple[dict, dict]:
    """Grade base/subs into base/report as `user` (None: root); return (rows by student, feedback by student)."""
    argv = ["grade", str(base / "subs"), "--out", str(base / "report"), "--seed", SEED, "--jobs", "1", "--quiet",
            *options]
    argv = [sys.executable, "-c", PLANTING, *argv] if planting else [sys.executable, "-m", "t5lesson.grade", *argv]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "LANG": "C.UTF-8",
           "TMPDIR": str(base / "tmp"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p)}
    if user is None:
        done = subprocess.run(argv, cwd=base, env=env, capture_output=True, text=True, timeout=600)
    else:
        for path in [base, *base.rglob("*")]:
            os.chown(path, *user)
        done = run_as(*user, argv, cwd=str(base), env=env, timeout=600, reach=[str(PACKAGE_PARENT), str(base)])
    assert done.returncode == 0, done.stderr[-3000:]
    left = [name for name in os.listdir(base / "tmp") if name.startswith(RUN_FOLDERS)]
    assert left == [], left  # nothing of a run is left in the temp folder
    report = base / "report"
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((report / "gradebook.csv").read_text()))}
    return rows, feedback_of(report)


@pytest.fixture(scope="module")
def honest_totals():
    """ada's and ben's totals, graded without a hostile notebook beside them."""
    _need_isolation()
    base = Path(tempfile.mkdtemp(prefix="t5hc-", dir="/tmp"))
    try:
        (base / "subs").mkdir()
        (base / "tmp").mkdir()
        for name in ("ada", "ben"):
            shutil.copy(SAMPLES / f"{name}.ipynb", base / "subs" / f"{name}.ipynb")
        rows, _ = _grade(base, None)
        return {name: rows[name]["total"] for name in ("ada", "ben")}
    finally:
        remove_tree(base)


@pytest.mark.parametrize("who", ["root", "normal user"])
def test_deep_trees_cost_no_reports(place, who, honest_totals):
    _need_isolation()
    user = _user(who)
    for name in ("ada", "ben"):
        shutil.copy(SAMPLES / f"{name}.ipynb", place / "subs" / f"{name}.ipynb")
    nb = full()
    add_after(nb, "setup", DEEP_TREES)
    write(nb, place / "subs" / "deep.ipynb")
    rows, feedback = _grade(place, user, planting=True)
    assert set(rows) == {"ada", "ben", "deep"}
    assert {name: rows[name]["total"] for name in ("ada", "ben")} == honest_totals
    assert rows["deep"]["status"] == "graded", feedback["deep"]
    # its socket folder was read-only by the time its code ran; its home (its own tmpfs) took the tree
    assert "deep trees: {'sockets': [0, 'Read-only file system'], 'home': [5000, '']}" in feedback["deep"], \
        feedback["deep"]


@pytest.mark.parametrize("who", ["root", "normal user"])
def test_the_socket_folder_takes_nothing_from_the_disk(place, who):
    _need_isolation()
    user = _user(who)
    shutil.copy(SAMPLES / "ada.ipynb", place / "subs" / "ada.ipynb")
    nb = full()
    add_after(nb, "setup", SOCKET_DISK)
    write(nb, place / "subs" / "filler.ipynb")
    rows, feedback = _grade(place, user, "--disk-mb", "16")
    assert rows["filler"]["status"] == "graded" and rows["ada"]["status"] == "graded"
    assert "socket folder: 0 MB and 0 files written, errors ['Read-only file system']" in feedback["filler"], \
        feedback["filler"]


def test_memfd_files_count_against_a_normal_user_s_memory_limit(place, honest_totals):
    _need_isolation()
    user = _user("normal user")
    shutil.copy(SAMPLES / "ada.ipynb", place / "subs" / "ada.ipynb")
    nb = full()
    add_after(nb, "setup", MEMFD)
    write(nb, place / "subs" / "hider.ipynb")
    rows, feedback = _grade(place, user, "--memory-mb", "800", "--cell-timeout", "120", "--notebook-timeout", "400")
    assert "went over its memory limit of 800 MB" in feedback["hider"], feedback["hider"]
    assert "survived" not in feedback["hider"]
    assert rows["ada"]["status"] == "graded" and rows["ada"]["total"] == honest_totals["ada"], feedback["ada"]


TMP_FILES_HELD = '''
files = []
for i in range(13):
    f = open(f"/tmp/held{i}", "wb")
    f.write(b"x" * (60 * 2 ** 20))
    f.flush()
    files.append(f)
raise RuntimeError(f"holding {len(files) * 60} MB of files in /tmp")
'''


def test_files_on_the_kernel_s_own_tmpfs_are_disk_not_memory(place, honest_totals):
    """Held open, the files of the kernel's own tmpfs count against --disk-mb only, not against the memory watch."""
    _need_isolation()
    user = _user("normal user")
    nb = full()
    add_after(nb, "setup", TMP_FILES_HELD)
    write(nb, place / "subs" / "keeper.ipynb")
    rows, feedback = _grade(place, user, "--memory-mb", "800", "--disk-mb", "1000")
    assert "holding 780 MB of files in /tmp" in feedback["keeper"], feedback["keeper"]
    assert rows["keeper"]["status"] == "graded" and "memory limit" not in feedback["keeper"]
