"""Kernels forked from the batch's zygote: each starts from the zygote's state, never from another kernel's.

A class of three is graded in turn by one grading thread (jobs=1), so every kernel forks from
the same zygote after the one before it ran. The first ends its kernel (os._exit): it gets the
verdict of a kernel that died, and its worker is replaced. The second leaves state everywhere
a fork could carry it (an attribute on an imported module, an environment variable, a file in
its home and in /tmp); the third asserts that it sees none of it, and that it really is a
fork of the zygote (so this test cannot pass by starting kernels afresh).
"""
from __future__ import annotations

import functools
from pathlib import Path

import nbformat
from isolation_helpers import ISOLATION
from nbformat.v4 import new_code_cell

from t5lesson.grade import grade_folder
from t5lesson.grading.protocol import Limits
from t5lesson.grading.run.execute import run_worker
from t5lesson.grading.sandbox.zygote import modules_imported

ROOT = Path(__file__).resolve().parents[3]
LIMITS = Limits(cell_timeout=10, notebook_timeout=60, startup_timeout=30)

LEAVE = """
import os, numpy
numpy.left_by_the_first = True
os.environ["LEFT_BY_THE_FIRST"] = "1"
open(os.path.expanduser("~/left_by_the_first"), "w").close()
if ISOLATED:  # each kernel has a /tmp of its own
    open("/tmp/left_by_the_first", "w").close()
"""

LOOK = """
import os, sys, numpy
seen = [hasattr(numpy, "left_by_the_first"), "LEFT_BY_THE_FIRST" in os.environ,
        os.path.exists(os.path.expanduser("~/left_by_the_first")), os.path.exists("/tmp/left_by_the_first")]
if not ISOLATED:
    seen.pop()
assert not any(seen), f"state of the kernel before: {seen}"
assert "t5lesson.grading.sandbox.zygote" in open("/proc/self/cmdline").read(), "not forked from the zygote"
"""

EXIT = "import os\nos._exit(9)"


def _notebook(extra: str):
    nb = nbformat.read(ROOT / "solutions" / "01_unscaled_scores.ipynb", as_version=4)
    nb.cells.insert(2, new_code_cell(f"ISOLATED = {ISOLATION == 'auto'}\n{extra}"))
    return nb


def test_a_kernel_sees_nothing_of_the_kernel_before_it(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "report"
    folder.mkdir()
    for name, extra in (("a_exits", EXIT), ("b_leaves", LEAVE), ("c_looks", LOOK)):
        nbformat.write(_notebook(extra), folder / f"{name}.ipynb")
    graded = {g.student: g for g in grade_folder(folder, out, exercise_id="01_unscaled_scores", limits=LIMITS,
                                                 jobs=1, isolation=ISOLATION)}
    looked = graded["c_looks"]
    assert not [n for n in looked.notes if "Error" in n], looked.notes
    assert (str(graded["a_exits"].status), graded["b_leaves"].total, looked.total) == ("kernel died", 14, 14)


def test_the_zygote_preloads_what_the_notebook_imports():
    sources = ["import numpy as np\nfrom t5lesson.check import checker", "import torch, math\nfrom . import x",
               "import matplotlib.pyplot as plt", "def broken(:"]
    assert modules_imported(sources) == ["numpy", "t5lesson.check", "torch", "math"]


FRESH = """
assert "t5lesson.grading.sandbox.kernel" in open("/proc/self/cmdline").read(), "not a kernel started afresh"
"""


def test_without_its_zygote_a_kernel_starts_afresh(tmp_path):
    """A zygote that is gone (here: never there) costs nothing: each kernel's launcher starts as a new process."""
    folder, out = tmp_path / "class", tmp_path / "report"
    folder.mkdir()
    nbformat.write(_notebook(FRESH), folder / "fresh.ipynb")
    run = functools.partial(run_worker, zygote=str(tmp_path / "no-zygote.sock"))
    [graded] = grade_folder(folder, out, exercise_id="01_unscaled_scores", limits=LIMITS, isolation=ISOLATION, run=run)
    assert not [n for n in graded.notes if "Error" in n], graded.notes
    assert graded.total == 14
