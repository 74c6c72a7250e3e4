"""Kernels are isolated from each other and from the machine, as root and as a normal user.

One hostile class is graded twice: by root, in this process, and by a normal user (created with
useradd when missing), through the instructor's command. In both runs:
- a spy that looks for other kernels' channels (TCP ports in /proc/net/tcp, Unix sockets in
  /proc/net/unix, the grader's socket folders) while a victim is being graded reaches none;
- a thief reads nothing of the solutions or the other submissions, and the gradebook it tries
  to replace is the grader's; a vandal changes no submission;
- a snoop finds nothing of a second copy of the course placed elsewhere on the machine (outside
  every folder the grader hides), neither by its path nor through /proc (/proc/self/root,
  /proc/1/root, /proc/PID/cwd) nor by walking /; of the course folder it sees only the package,
  and its own submission's folder is not there at all: a kernel sees an allowlist, not the
  machine minus a list;
- what a submission leaves behind (System V and POSIX shared memory, files in /tmp, /var/tmp,
  /dev/shm, /run/lock, a process in a session of its own) is gone after the run;
- the disk a submission may fill is bounded in total, not per file;
- the memory of a submission is bounded in total, over all its processes.
Where kernels cannot be isolated the grader refuses, saying why, unless told `--isolation none`.

These tests skip where isolation is impossible (a normal user without unprivileged user
namespaces); CI sets T5LESSON_REQUIRE_ISOLATION=1 and runs as root, so there they must run.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from isolation_helpers import REQUIRED, WHY_NOT, normal_user, processes_running, run_as

from t5lesson.grade import grade_folder
from t5lesson.grade import main as t5grade
from t5lesson.grading.course import PACKAGE_PARENT
from t5lesson.grading.protocol import Limits
from t5lesson.grading.sandbox import namespaces
from t5lesson.grading.sandbox.walls import IsolationUnavailable, uids

from synthetic_class import FULL_MARKS, THIEF, VANDAL, add_after, blank, full, write

LIMITS = Limits(cell_timeout=20, notebook_timeout=60, harvest_timeout=10, stuck_grace=3, startup_timeout=30,
                memory_mb=1000, disk_mb=100)
SLEEPER = "987654"
SHM_KEY = 0x7E57

SPY = '''
import glob, json, os, socket, time
time.sleep(3)  # the victim is running by now
own = json.load(open("connection.json"))
own_ports = {v for k, v in own.items() if k.endswith("_port")}
reached = []
ports = set()
for name in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        for line in open(name).readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    except OSError:
        pass
for port in sorted(ports - own_ports):
    s = socket.socket(); s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port)); reached.append(port)
    except OSError:
        pass
    s.close()
paths = set(glob.glob("/tmp/t5grade-*/ipc/*/*"))
for line in open("/proc/net/unix").readlines()[1:]:
    fields = line.split()
    if len(fields) >= 8 and fields[7].startswith("/"):
        paths.add(fields[7])
for path in sorted(paths):
    if path.startswith(str(own.get("ip"))):
        continue
    s = socket.socket(socket.AF_UNIX); s.settimeout(0.5)
    try:
        s.connect(path); reached.append(path)
    except OSError:
        pass
    s.close()
raise RuntimeError(f"spy reached {len(reached)} of {len(ports - own_ports) + len(paths)}")
'''

LEAVER = f'''
import ctypes, os, subprocess
from multiprocessing import resource_tracker, shared_memory
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget({SHM_KEY}, 1 << 20, 0o1666)  # IPC_CREAT | 0666
block = shared_memory.SharedMemory(name="t5leak", create=True, size=1 << 20)
resource_tracker.unregister(block._name, "shared_memory")
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock"):
    if os.path.isdir(folder):
        open(os.path.join(folder, "t5leak-file"), "w").write("left behind")
subprocess.Popen(["sleep", "{SLEEPER}"], start_new_session=True)
raise RuntimeError(f"leaver made segment {{segment}}")
'''

SNOOP = '''
import glob, json, os, sys, time
copy, submissions, course = {copy!r}, {submissions!r}, {course!r}
for notebook in glob.glob(os.path.join(copy, "solutions", "03_*.ipynb")):  # this exercise's answers, if seen
    for cell in json.load(open(notebook))["cells"]:
        if cell.get("metadata", {{}}).get("t5lesson", {{}}).get("role") == "answer" and cell["cell_type"] == "code":
            exec("".join(cell["source"]), globals())
found = []
def look(path):
    try:
        if os.path.isdir(path):
            if os.listdir(path):
                found.append(path)
        elif os.path.exists(path):
            open(path, "rb").read(1)
            found.append(path)
    except OSError:
        pass
pids = [p for p in os.listdir("/proc") if p.isdigit()]
for way in ["", "/proc/self/root", "/proc/1/root"] + [f"/proc/{{p}}/root" for p in pids]:
    look(way + copy)
    look(way + copy + "/solutions")
for pid in pids:  # a process whose working folder lies outside the root would lead back to the machine's
    look(f"/proc/{{pid}}/cwd/" + "../" * 30 + copy.lstrip("/"))
if os.path.lexists(submissions):
    found.append(submissions)
environment = os.path.realpath(sys.prefix)  # a virtual environment inside the checkout is shown: the kernel runs on it
found += [os.path.join(course, name) for name in os.listdir(course)
          if name != "t5lesson" and not (environment + "/").startswith(os.path.join(course, name) + "/")]
deadline = time.monotonic() + 8
skip = {{"/proc", "/sys", "/dev", "/usr", os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}}
for folder, subfolders, files in os.walk("/"):
    subfolders[:] = [d for d in subfolders if os.path.join(folder, d) not in skip]
    if os.path.basename(copy) in subfolders:
        found.append(os.path.join(folder, os.path.basename(copy)))
    if time.monotonic() > deadline:
        break
raise RuntimeError(f"snoop found {{len(found)}}: {{found[:4]}}")
'''

DISK_HOG = '''
written = 0
try:
    for i in range(40):
        with open(f"/tmp/hog{i}", "wb") as f:
            f.write(b"x" * (60 * 2 ** 20))
        written += 1
finally:
    print("files written:", written)
'''

MEMORY_HOG = '''
import subprocess, sys, time
children = [subprocess.Popen([sys.executable, "-c", "x = bytearray(450 * 2 ** 20); import time; time.sleep(60)"])
            for _ in range(3)]
time.sleep(15)
raise RuntimeError(f"{sum(c.poll() is None for c in children)} children of 450 MB each lived on")
'''

SHM_HOG = '''
import os
with open("/dev/shm/big", "wb") as f:
    for _ in range(40):
        f.write(b"x" * (64 * 2 ** 20))
'''


def _need_isolation():
    if WHY_NOT is not None:
        if REQUIRED:
            pytest.fail(f"T5LESSON_REQUIRE_ISOLATION=1 but kernels cannot be isolated here: {WHY_NOT}")
        pytest.skip(f"kernels cannot be isolated here: {WHY_NOT}")


@pytest.fixture
def course_copy():
    """A second copy of the course's solutions and exercises, readable by all, outside every folder the grader hides."""
    base = next((d for d in ("/srv", "/opt", "/var/lib") if os.access(d, os.W_OK)), str(Path.home()))
    copy = Path(tempfile.mkdtemp(prefix="t5copy-", dir=base))
    try:
        shutil.copytree(PACKAGE_PARENT / "solutions", copy / "solutions")
        shutil.copytree(PACKAGE_PARENT / "t5lesson" / "exercises", copy / "t5lesson" / "exercises")
        os.chmod(copy, 0o755)
        yield copy
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _build(folder: Path, report: Path, copy: Path) -> None:
    folder.mkdir(parents=True)
    nb = full()
    add_after(nb, "setup", "import time\ntime.sleep(10)")
    write(nb, folder / "a_victim.ipynb")
    nb = full()
    add_after(nb, "setup", SPY)
    write(nb, folder / "a_spy.ipynb")
    nb = blank()
    add_after(nb, "q7-check", THIEF.format(submissions=str(folder), report=str(report)))
    add_after(nb, "q7-check", VANDAL.format(submissions=str(folder)))
    add_after(nb, "q7-check", THIEF.format(submissions=str(PACKAGE_PARENT / "solutions"), report=str(report)))
    write(nb, folder / "thief.ipynb")
    nb = blank()
    add_after(nb, "q7-check", SNOOP.format(copy=str(copy), submissions=str(folder), course=str(PACKAGE_PARENT)))
    write(nb, folder / "snoop.ipynb")
    nb = full()
    add_after(nb, "setup", LEAVER)
    write(nb, folder / "leaver.ipynb")
    nb = full()
    add_after(nb, "setup", DISK_HOG)
    add_after(nb, "setup", SHM_HOG)
    write(nb, folder / "disk_hog.ipynb")
    nb = full()
    add_after(nb, "setup", MEMORY_HOG)
    write(nb, folder / "memory_hog.ipynb")


def _hashes(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _sleepers() -> list[int]:
    return processes_running("sleep", SLEEPER)


def _leftovers() -> list[str]:
    found = [p for p in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")
             if os.path.exists(os.path.join(p, "t5leak-file"))]
    found += ["/dev/shm/t5leak"] if os.path.exists("/dev/shm/t5leak") else []
    try:
        keys = [int(line.split()[0]) for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    except OSError:
        keys = []
    found += ["System V segment"] if SHM_KEY in keys else []
    return found + [f"process {pid}" for pid in _sleepers()]


def _check_report(report: Path, folder: Path, before: dict, notes: dict[str, str], extra=()) -> None:
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((report / "gradebook.csv").read_text()))}
    assert set(rows) == {"a_victim", "a_spy", "thief", "snoop", "leaver", "disk_hog", "memory_hog", *extra}, rows
    assert rows["a_victim"]["total"] == FULL_MARKS
    assert "spy reached 0 of" in notes["a_spy"], notes["a_spy"]
    assert rows["thief"]["total"] == "0", notes["thief"]  # nothing of the solutions' or the others' answers
    assert "snoop found 0:" in notes["snoop"], notes["snoop"]
    assert rows["snoop"]["total"] == "0", notes["snoop"]  # nothing of the second copy's solutions either
    assert (report / "gradebook.csv").read_text().startswith("student,q1,")  # the grader's, not the thief's
    assert _hashes(folder) == before
    assert "No space left on device" in notes["disk_hog"], notes["disk_hog"]
    assert "went over its memory limit of 1000 MB" in notes["memory_hog"], notes["memory_hog"]
    assert "3 children" not in notes["memory_hog"]
    assert "leaver made segment" in notes["leaver"]
    deadline = time.monotonic() + 10
    while _leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _leftovers() == []


def test_a_hostile_class_graded_by_root(tmp_path, course_copy):
    _need_isolation()
    if os.geteuid() != 0:
        pytest.skip("this run is the root one; test_a_hostile_class_graded_by_a_normal_user covers this user")
    folder, report = tmp_path / "subs", tmp_path / "report"
    report.mkdir()
    _build(folder, report, course_copy)
    before = _hashes(folder)
    graded = grade_folder(folder, report, limits=LIMITS, jobs=2)
    notes = {g.student: " ".join(g.notes + [o.line() for o in g.outcomes]) for g in graded}
    _check_report(report, folder, before, notes)
    assert "own user id per kernel" in (report / "summary.md").read_text()


def test_a_hostile_class_graded_by_a_normal_user(course_copy):
    _need_isolation()
    user = normal_user() if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if isinstance(user, str):
        if REQUIRED:
            pytest.fail(user)
        pytest.skip(user)
    uid, gid = user
    root = Path(tempfile.mkdtemp(prefix="t5user-"))
    try:
        folder, report = root / "subs", root / "report"
        report.mkdir()
        _build(folder, report, course_copy)
        for path in [root, report, folder, *folder.iterdir()]:
            os.chown(path, uid, gid) if os.geteuid() == 0 else None
        os.chmod(root, 0o755)
        extra = ()
        if os.geteuid() == 0:  # a file and a folder the grader's user may not read: a row, and a line
            write(full(), folder / "locked.ipynb")
            (folder / "closed").mkdir()
            write(full(), folder / "closed" / "inside.ipynb")
            os.chmod(folder / "locked.ipynb", 0)
            os.chmod(folder / "closed", 0)
            extra = ("locked",)
        before = _hashes(folder)
        argv = [sys.executable, "-m", "t5lesson.grade", "grade", str(folder), "--out", str(report), "--jobs", "2",
                "--cell-timeout", str(LIMITS.cell_timeout), "--notebook-timeout", str(LIMITS.notebook_timeout),
                "--harvest-timeout", str(LIMITS.harvest_timeout), "--memory-mb", str(LIMITS.memory_mb),
                "--disk-mb", str(LIMITS.disk_mb), "--quiet"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C.UTF-8",
               "PYTHONPATH": os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p)}
        if os.geteuid() == 0:
            done = run_as(uid, gid, argv, cwd=str(root), env=env, timeout=600, reach=[str(PACKAGE_PARENT), str(root)])
        else:
            done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        summary = (report / "summary.md").read_text()
        assert "user namespaces" in summary or os.geteuid() != 0
        notes = {}
        for path in (report / "feedback").iterdir():
            notes[path.stem] = path.read_text().replace("\n", " ")
        _check_report(report, folder, before, notes, extra)
        if extra:
            assert "could not be opened (Permission denied)" in notes["locked"]
            assert "- `closed`: the folder could not be read (Permission denied)" in summary
    finally:
        for pid in _sleepers():
            os.kill(pid, 9)
        shutil.rmtree(root, ignore_errors=True)


def test_a_kernel_is_shown_the_course_package_not_the_checkout():
    paths = namespaces.needed_paths()
    package = str(PACKAGE_PARENT / "t5lesson")
    assert package in paths
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    in_checkout = [p for p in paths if p.startswith(str(PACKAGE_PARENT) + "/")
                   and not any(p == q or p.startswith(q + "/") for q in prefixes)]  # a venv in the checkout is fine
    assert in_checkout == [package]  # nor tests/ (on sys.path under pytest), nor the checkout itself
    assert not any(str(PACKAGE_PARENT).startswith(p.rstrip("/") + "/") or p == str(PACKAGE_PARENT) for p in paths)


def test_the_probe_sees_a_wall_that_does_not_hold(monkeypatch):
    """A root that showed more than its allowlist, such as the whole checkout (as PYTHONPATH names it) with its
    solutions, is caught by the probe. A checkout under /tmp is covered again by each kernel's own /tmp, so there
    a folder of the machine outside the allowlist stands in for it."""
    _need_isolation()
    command = namespaces.command
    checkout = str(PACKAGE_PARENT.resolve())
    under_writable = any(checkout.startswith(os.path.realpath(w) + "/") for w in namespaces.WRITABLE)
    machine = ["/opt", "/srv", "/mnt", "/media", "/home"]
    extra = next(p for p in ([] if under_writable else [checkout]) + machine if os.path.isdir(p))
    monkeypatch.setattr(namespaces, "command",
                        lambda keep, hide, writable, argv: command([*keep, extra], hide, writable, argv))
    why = namespaces.probe(uids(1)[0] if os.geteuid() == 0 else None)
    assert why is not None and "sees paths outside its allowlist" in why, why


def test_no_silent_fallback_without_isolation(tmp_path, monkeypatch, capsys):
    """Where kernels cannot be isolated the grader refuses and says why; --isolation none is explicit."""
    monkeypatch.setattr(namespaces, "probe", lambda uid=None: "unprivileged user namespaces are not available here")
    folder = tmp_path / "subs"
    folder.mkdir()
    write(full(), folder / "a.ipynb")
    with pytest.raises(IsolationUnavailable, match="not available here.*--isolation none"):
        grade_folder(folder, tmp_path / "report", run=lambda *args: (None, 0.0))
    assert t5grade(["grade", str(folder), "--out", str(tmp_path / "report"), "--quiet"]) == 2
    assert "--isolation none" in capsys.readouterr().err
    assert not (tmp_path / "report" / "gradebook.csv").exists()
    assert t5grade(["grade", str(folder), "--out", str(tmp_path / "report"), "--quiet", "--isolation", "none"]) == 0
    assert (tmp_path / "report" / "summary.md").read_text().startswith("**Graded WITHOUT isolation**")


def test_without_bubblewrap_the_grader_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(namespaces.shutil, "which", lambda name: None)
    why = namespaces.probe(uids(1)[0])
    assert why is not None and "apt install bubblewrap" in why, why
