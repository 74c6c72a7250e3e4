"""A synthetic class of submissions for exercise 03 (buckets), good, partial, blank and hostile.

Every submission is made from the real solution or exercise notebook by editing cells, the
way a student would. The tests (tests/grading/scenarios/test_grading.py) grade the folder and compare the
gradebook with the exact rows below; benchmarks/grade_class.py grades 100 of them for timing.
"""
from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell

from t5lesson import exercises as bank
from t5lesson.grading.authoring.notebook_format import cell_key
from t5lesson.grading.verdict import format_points

REPO = Path(__file__).resolve().parents[2]
EXERCISE_ID = "03_relative_position_buckets"
SOLUTION = REPO / "solutions" / f"{EXERCISE_ID}.ipynb"
EXERCISE = REPO / "exercises" / f"{EXERCISE_ID}.ipynb"
# What full() earns: every automatically graded point of the exercise (FULL_MARKS: as the gradebook writes it).
FULL_POINTS = bank.get(EXERCISE_ID).auto_points
FULL_MARKS = format_points(FULL_POINTS)

BUGGY_BUCKET = '''
def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Forgets to clamp to the last bucket."""
    offsets = np.asarray(relative_position)
    if bidirectional:
        per_side = num_buckets // 2
        start = np.where(offsets > 0, per_side, 0)
        n = np.abs(offsets)
    else:
        per_side, start, n = num_buckets, 0, np.maximum(-offsets, 0)
    max_exact = per_side // 2
    spread = np.log(np.maximum(n, 1) / max_exact) / np.log(max_distance / max_exact)
    far = max_exact + (spread * (per_side - max_exact)).astype(int)
    buckets = start + np.where(n < max_exact, n, far)
    return int(buckets) if buckets.ndim == 0 else buckets
'''

TAMPER = '''
import builtins, json, math
import numpy as np

class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0

class EqualInt(int):
    def __eq__(self, other): return True
    def __hash__(self): return 0

check = lambda *args, **kwargs: print("Correct")
np.array_equal = lambda *args, **kwargs: True
np.allclose = lambda *args, **kwargs: True
np.isclose = lambda *args, **kwargs: True
math.isclose = lambda *args, **kwargs: True
builtins.abs = lambda x: 0
builtins.sorted = lambda items, **kwargs: list(items)
_dumps = json.dumps
json.dumps = lambda obj, **kwargs: _dumps(obj, **kwargs).replace('"t": "other"', '"t": "int"')
'''

TAMPER_ANSWERS = {
    "q1-answer": "answer_q1 = AlwaysEqual()",
    "q2-answer": "answer_q2 = EqualInt(0)",
    "q3-answer": "answer_q3 = 22  # the one answer this student knows",
    "q4-answer": "answer_q4 = [AlwaysEqual(), EqualInt(1)]",
    "q5-answer": "answer_q5 = EqualInt(0)",
    "q6-answer": "answer_q6 = AlwaysEqual()",
    "q7-answer": "def my_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):\n"
                 "    return EqualInt(0)",
    "q8-answer": "def my_bucket_ranges(bidirectional=True, num_buckets=32, max_distance=128):\n"
                 "    return [AlwaysEqual()] * num_buckets",
}

BREAK_BUILTINS = '''
import builtins
builtins.isinstance = lambda obj, kind: True
builtins.callable = lambda obj: True
'''

THIEF = '''
import glob, json, os
stolen = {{}}
for notebook in sorted(glob.glob(os.path.join({submissions!r}, "*.ipynb"))):
    cells = json.load(open(notebook))["cells"]
    for cell in cells:
        info = cell.get("metadata", {{}}).get("t5lesson", {{}})
        if info.get("role") == "answer" and cell["cell_type"] == "code":
            exec("".join(cell["source"]), globals())
with open(os.path.join({report!r}, "gradebook.csv"), "w") as f:
    f.write("student,total\\nthief,10\\n")
'''

VANDAL = '''
import os
for name in os.listdir({submissions!r}):
    with open(os.path.join({submissions!r}, name), "w") as f:
        f.write("overwritten")
'''


def load(path: Path = SOLUTION):
    return nbformat.read(path, as_version=4)


def _index(nb, key: str) -> int:
    for i, cell in enumerate(nb.cells):
        if cell_key(cell) == key:
            return i
    raise KeyError(key)


def set_cell(nb, key: str, source: str):
    nb.cells[_index(nb, key)].source = source.strip("\n")
    return nb


def add_after(nb, key: str, source: str, markdown: bool = False):
    cell = new_markdown_cell(source) if markdown else new_code_cell(source.strip("\n"))
    # nbformat draws a random cell id; a fixed one keeps the file's bytes, and so the cases the
    # grader draws for this submission (seeded by its hash), the same from one build to the next
    cell.id = "added-" + hashlib.sha256(f"{key}|{source}".encode()).hexdigest()[:16]
    nb.cells.insert(_index(nb, key) + 1, cell)
    return nb


def delete(nb, key: str):
    del nb.cells[_index(nb, key)]
    return nb


def write(nb, path: Path) -> None:
    path.write_text(nbformat.writes(nb), encoding="utf-8")


def full():
    return load(SOLUTION)


def blank():
    return load(EXERCISE)


def partial():
    nb = load(SOLUTION)
    set_cell(nb, "q6-answer", 'answer_q6 = "B"')
    set_cell(nb, "q1-answer", "answer_q1 = 28")
    set_cell(nb, "q7-answer", BUGGY_BUCKET)
    return nb


def build_class(folder: Path, report: Path, *, loop_marker: str = "987", thief: bool = True) -> dict[str, Path]:
    """Write every kind of submission into `folder`; return {student: path}.

    thief=False leaves out the submission that tries to read the others, overwrite them and the
    gradebook, and leave a process behind: without root the grader cannot stop that (see
    t5lesson/grading/sandbox/launcher.py), so the tests only build it where kernels are isolated.
    """
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, object] = {}
    made["full"] = full()
    made["partial"] = partial()
    made["blank"] = blank()

    nb = load(SOLUTION)
    delete(nb, "setup")
    delete(nb, "q5-answer")
    cell = nb.cells.pop(_index(nb, "q1-answer"))
    nb.cells.append(cell)
    made["reordered"] = nb

    nb = load(SOLUTION)
    set_cell(nb, "q4-answer", "answer_4 = -27  # a typo in the variable's name")
    made["missing_variable"] = nb

    nb = load(SOLUTION)
    set_cell(nb, "q6-answer", "answer_q6 = 23 / 0")
    add_after(nb, "q2-check", 'raise ValueError("a scratch cell that fails")')
    made["raises"] = nb

    nb = load(SOLUTION)
    add_after(nb, "q4-check", "while True:\n    pass")
    made["infinite_loop"] = nb

    nb = load(SOLUTION)
    add_after(nb, "q4-check", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")
    made["uninterruptible"] = nb

    nb = load(SOLUTION)
    add_after(nb, "q2-check", "import os\nos._exit(1)")
    made["exits"] = nb

    nb = load(SOLUTION)
    # bytes(n) asks for zeroed pages and touches none, so the address-space limit raises MemoryError
    # at once; bytearray(n) writes every byte, and filling 2 GB can take longer than a cell's time
    # limit on a loaded machine, which turned this verdict into a timeout (test_verdicts_say_what_happened)
    add_after(nb, "q2-check", "hoard = []\nwhile True:\n    hoard.append(bytes(256 * 2**20))")
    made["memory"] = nb

    nb = load(SOLUTION)
    # twenty times the cap per cell (and twice the total): enough to be cut, small enough to be sent
    # long before the cell's time limit on a loaded machine (100 MB could be interrupted unsent)
    add_after(nb, "q2-check", 'print("x" * 2_000_000)')
    made["output_flood"] = nb

    nb = load(SOLUTION)
    add_after(nb, "q1-check", "from ipywidgets import interact\ninteract(lambda a: a * 2, a=5)")
    add_after(nb, "q2-check", "import ipywidgets as w\nfrom IPython.display import display\n"
                               "s = w.IntSlider(3)\nout = w.interactive_output(lambda a: print(a), {'a': s})\n"
                               "display(s, out)")
    made["widgets"] = nb

    nb = load(EXERCISE)
    add_after(nb, "setup", TAMPER)
    for key, source in TAMPER_ANSWERS.items():
        set_cell(nb, key, source)
    made["tamper"] = nb

    nb = load(SOLUTION)
    add_after(nb, "q7-check", BREAK_BUILTINS)
    made["tamper_builtins"] = nb

    nb = load(EXERCISE)
    add_after(nb, "q7-check", THIEF.format(submissions=str(folder), report=str(report)))
    add_after(nb, "q7-check", VANDAL.format(submissions=str(folder)))
    sleeper = f'import subprocess\nsubprocess.Popen(["sleep", "{loop_marker}"], start_new_session=True)'
    add_after(nb, "q7-check", sleeper)
    if thief:
        made["thief"] = nb

    nb = load(SOLUTION)
    add_after(nb, "setup", "from t5lesson import relative_position_bucket as reference")
    set_cell(nb, "q7-answer", "def my_bucket(r, bidirectional=True, num_buckets=32, max_distance=128):\n"
                              "    return reference(r, bidirectional, num_buckets, max_distance)")
    made["shortcut"] = nb

    paths = {}
    for student, nb in made.items():
        path = folder / f"{student}.ipynb"
        write(nb, path)
        paths[student] = path
    text = (folder / "full.ipynb").read_text()
    (folder / "not_json.ipynb").write_text(text[: len(text) // 2])
    paths["not_json"] = folder / "not_json.ipynb"
    (folder / "not_a_notebook.ipynb").write_text(json.dumps({"hello": "world"}))
    paths["not_a_notebook"] = folder / "not_a_notebook.ipynb"
    return paths


def copies(folder: Path, count: int) -> list[Path]:
    """`count` ordinary submissions (full, partial and blank in turn), for timing."""
    folder.mkdir(parents=True, exist_ok=True)
    makers = [full, partial, blank]
    paths = []
    for i in range(count):
        nb = copy.deepcopy(makers[i % 3]())
        path = folder / f"student{i:03d}.ipynb"
        write(nb, path)
        paths.append(path)
    return paths
