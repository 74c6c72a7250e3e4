"""A notebook with more cells than `Limits.max_cells` is refused before a single cell is built.

Composing a notebook costs the grader's own process time and memory in proportion to its cells
(outside every limit of the kernel), so the count is checked right after the JSON is read.
"""
from __future__ import annotations

import json

import pytest

from t5lesson.grading.protocol import Limits
from t5lesson.grading.run import compose

from synthetic_class import full


def _with_extra_cells(extra: int) -> bytes:
    nb = json.loads(json.dumps(full()))  # the solved synthetic notebook, as plain JSON
    nb["cells"] += [{"cell_type": "code", "metadata": {}, "source": "1/0"} for _ in range(extra)]
    return json.dumps(nb, separators=(",", ":")).encode()


def test_too_many_cells_is_refused_before_any_cell_is_built(monkeypatch):
    limits = Limits(max_cells=300)
    data = _with_extra_cells(400)

    def no_cells(*args, **kwargs):
        raise AssertionError("a cell was built")

    monkeypatch.setattr(compose.nbformat, "from_dict", no_cells)
    cells, problem, claimed = compose.parse(data, limits)
    assert cells is None and claimed is None
    count = len(json.loads(data)["cells"])
    assert problem == f"the notebook has {count:,} cells, more than the 300 a submission may have, so it was not run"


def test_the_default_bound_is_far_above_an_exercise():
    nb = full()
    assert Limits().max_cells >= 20 * len(nb.cells)
    cells, problem, _ = compose.parse(_with_extra_cells(Limits().max_cells - len(nb.cells)))
    assert problem is None and len(cells) == Limits().max_cells


@pytest.mark.parametrize("count", [0, 1])
def test_at_the_bound_a_notebook_is_read(count):
    nb = full()
    limits = Limits(max_cells=len(nb.cells) + 1)
    cells, problem, _ = compose.parse(_with_extra_cells(count), limits)
    assert problem is None and len(cells) == len(nb.cells) + count


def test_the_bound_has_its_flag():
    import argparse

    from t5lesson.grading import cli

    parser = argparse.ArgumentParser()
    cli.add_limits(parser)
    assert parser.parse_args(["--max-cells", "50"]).max_cells == 50


def test_a_class_gives_it_the_status_too_large(tmp_path):
    from t5lesson import exercises as bank
    from t5lesson.grading.batch import grade_folder

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "many.ipynb").write_bytes(_with_extra_cells(400))
    ran = []
    graded = grade_folder(folder, tmp_path / "report", catalogue=bank, limits=Limits(max_cells=300), seed="s",
                          run=lambda *args: ran.append(args) or (None, 0.0))
    [row] = graded
    assert str(row.status) == "too large" and not ran
    assert "more than the 300 a submission may have" in row.notes[0]
