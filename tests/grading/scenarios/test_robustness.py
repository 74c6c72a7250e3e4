"""One bad submission never costs the class its gradebook (the grader's side, without kernels).

Most tests here replace the run step (`grade_folder(..., run=...)`) with a forger that returns whatever a
hostile kernel could have printed, so they run in seconds and can try many variants: every
value read from a kernel must be bounded and finite before it is scored, every file of the
folder gets a row or a line in the summary, and whatever goes wrong for one submission ends as
a "grader error" row while the batch goes on and writes its gradebook.
"""
from __future__ import annotations

import csv
import io
import json
import os
import random
import re
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from t5lesson import exercises as bank
from t5lesson.grade import grade_folder
from t5lesson.grading import batch as grade
from t5lesson.grading.protocol import Limits, RunResult
from t5lesson.grading.questions.kinds import Numeric
from t5lesson.grading.records import BoundsError, clean_plain, clean_record, loads, shape_ok
from t5lesson.grading.reports.files import csv_cell, safe_name
from t5lesson.grading.run import intake
from t5lesson.grading.run.compose import parse

from synthetic_class import blank, full, write

NONCE = re.compile(r"namespace\[\"emit\"\]\('([0-9a-f]+)'")


def _nest(depth: int, leaf="1") -> str:
    return "[" * depth + leaf + "]" * depth


# --------------------------------------------------------------------------- bounds


def test_loads_refuses_deep_huge_and_non_finite_json():
    with pytest.raises(BoundsError):
        loads(_nest(100_000), max_depth=50)
    with pytest.raises(BoundsError):
        loads(_nest(60), max_depth=50)
    with pytest.raises(BoundsError):
        loads(json.dumps(list(range(1000))), max_depth=5, max_nodes=100)
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(BoundsError):
            loads(f'{{"v": {constant}}}', max_depth=5)
    assert loads(_nest(10), max_depth=50) == json.loads(_nest(10))


@pytest.mark.parametrize("shape, items, ok", [
    ([2, 3], 6, True), ([], 1, True), ([0], 0, True), ([5, 0], 0, True),
    ([2 ** 31, 0], 0, False), ([1000, 1000, 0], 0, False), ([-1], 1, False), ([-2, -3], 6, False),
    ([2, 3], 5, False), ([True, 1], 1, False), ([1.0], 1, False), ("2,3", 6, False), ([1] * 20, 1, False),
])
def test_array_shapes_are_checked_before_anything_is_built(shape, items, ok):
    assert shape_ok(shape, items) is ok


@pytest.mark.parametrize("value", [
    {"t": "int", "v": 10 ** 400}, {"t": "int", "v": -(10 ** 19)}, {"t": "int", "v": 1.5}, {"t": "int", "v": True},
    {"t": "float", "v": 10 ** 400}, {"t": "float", "v": "1e999"}, {"t": "float", "v": [1]},
    {"t": "array", "shape": [2 ** 31, 0], "v": []}, {"t": "array", "shape": [-1], "v": [{"t": "int", "v": 1}]},
    {"t": "list", "v": [{"t": "int", "v": 1}] * 1001},
])
def test_clean_plain_refuses_what_is_out_of_bounds(value):
    assert clean_plain(value)["t"] == "other"


def test_clean_plain_keeps_non_finite_floats_only_as_their_tags():
    for raw, tag in ((float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"), ("nan", "nan")):
        assert clean_plain({"t": "float", "v": raw}) == {"t": "float", "v": tag}


def test_a_record_has_a_budget_of_values_in_all():
    wide = {"t": "list", "v": [{"t": "list", "v": [{"t": "int", "v": 1}] * 1000}] * 1000}
    cleaned = clean_record({"status": "value", "value": wide})
    flat = json.dumps(cleaned)
    assert flat.count('"unreadable"') > 0  # the values past the budget read as unreadable
    assert flat.count('"int"') <= 200_000


@pytest.mark.parametrize("number", [1e308, -1e308, 10 ** 400, 10 ** 17, 1.7976931348623157e308, 5e-324])
def test_numeric_scores_any_magnitude_without_raising(number):
    question = next(q for q in bank.get("01_unscaled_scores").questions
                    if isinstance(q, Numeric) and q.tolerance is not None)
    outcome = question.score({"status": "value", "value": {"t": "float", "v": number}})
    assert outcome.points == 0
    integer = next(q for q in bank.get("01_unscaled_scores").questions
                   if isinstance(q, Numeric) and q.tolerance is None)
    assert integer.score({"status": "value", "value": {"t": "float", "v": number}}).points == 0


def _random_plain(rng: random.Random, depth: int = 0):
    """A random, often hostile, plain value: huge numbers, NaN, odd shapes, deep nesting, wrong types."""
    kind = rng.choice(["int", "float", "str", "bool", "none", "list", "array", "other", "junk"])
    if kind == "int":
        return {"t": "int", "v": rng.choice([0, 1, -1, 7, 10 ** 18, 10 ** 400, -(10 ** 30), True, 2.5, "3"])}
    if kind == "float":
        return {"t": "float", "v": rng.choice([0.5, 1e308, -1e308, float("nan"), float("inf"), "inf", "nan",
                                              "1e999", 10 ** 400, None, 5e-324])}
    if kind == "str":
        return {"t": "str", "v": rng.choice(["A", "=cmd|' /C calc'!A0", "x" * 10_000, 12])}
    if kind == "bool":
        return {"t": "bool", "v": rng.choice([True, False, 1, "yes"])}
    if kind == "none":
        return {"t": "none"}
    if kind in ("list", "array") and depth < 8:
        items = [_random_plain(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 3, 6]))]
        if kind == "list":
            return {"t": "list", "v": items}
        shape = rng.choice([[len(items)], [2, 3], [], [2 ** 31, 0], [-1, -len(items)], [1000, 1000, 0], "x",
                            [len(items), 1], [0] * 9])
        return {"t": "array", "shape": shape, "v": items}
    if kind == "other":
        return {"t": "other", "type": rng.choice(["FakeInt", 5, None])}
    return rng.choice([None, 5, "text", [], {"t": None}, {"v": 1}])


def _random_record(rng: random.Random):
    status = rng.choice(["value", "ran", "not_callable", "missing", "odd"])
    if status == "ran":
        cases = [rng.choice([{"ok": _random_plain(rng)}, {"error": "E", "where": 5}, {"timeout": True},
                             {"skipped": True}, {"not_implemented": True}, 7, {"ok": None}])
                 for _ in range(rng.choice([0, 3, 91, 200]))]
        return {"status": "ran", "cases": cases}
    return {"status": status, "value": _random_plain(rng)}


def test_every_question_scores_any_forged_record_without_raising():
    """A variant of every crash we know: forged records of any shape, for every question of every exercise."""
    rng = random.Random(1234)
    for exercise_id in bank.exercise_ids():
        for question in bank.get(exercise_id).questions:
            if not question.auto_scored:
                continue
            for _ in range(60):
                record = clean_record(_random_record(rng))
                outcome = question.score(record)
                assert 0 <= outcome.points <= question.points, (exercise_id, question.id, record)
                outcome.line()


# --------------------------------------------------------------------------- files and ids


def test_deeply_nested_notebooks_get_a_verdict():
    for text in (_nest(200_000), '{"cells": [], "metadata": ' + _nest(5000, "{}") + "}",
                 '{"cells": [{"cell_type": "code", "source": "", "metadata": ' + _nest(3000, "{}") + "}]}"):
        cells, problem, _ = parse(text.encode())
        assert cells is None and problem
    inferred = grade._infer_exercise([_nest(200_000).encode()], bank.exercise_ids(), Limits())
    assert inferred in (None, *bank.exercise_ids())


def test_ids_are_printable_short_and_unique():
    latin1 = os.fsdecode(b"caf\xe9.ipynb")
    assert intake.student_id(latin1) == "caf\\xe9"
    assert intake.student_id("a\nb\x1b[31m.ipynb") == "a?b?[31m"
    long = intake.student_id("x" * 300 + ".ipynb")
    assert len(long) <= intake.MAX_ID and long != intake.student_id("x" * 299 + "y.ipynb")
    assert len(safe_name("é" * 400)) <= 100 and len(safe_name("a" * 400)) <= 100


@pytest.mark.parametrize("text, safe", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1+1", "'+1+1"), ("-2", "'-2"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("ada", "ada"), ("10", "10"),
])
def test_csv_cells_cannot_start_a_formula(text, safe):
    assert csv_cell(text) == safe


def test_survey_lists_every_entry(tmp_path):
    folder = tmp_path / "subs"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "group").mkdir()
    write(full(), folder / "group" / "ann.ipynb")
    write(full(), folder / "bob.ipynb")
    (folder / "notes.txt").write_text("hello")
    (folder / "link.ipynb").symlink_to(folder / "bob.ipynb")
    os.mkfifo(folder / "pipe.ipynb")
    entries, skipped = intake.survey(folder)
    assert [e.student for e in entries] == ["bob", "group/ann"]
    reasons = {s.relative: s.reason for s in skipped}
    assert set(reasons) == {".ipynb_checkpoints", "notes.txt", "link.ipynb", "pipe.ipynb"}
    assert "symbolic link" in reasons["link.ipynb"] and "FIFO" in reasons["pipe.ipynb"]


def test_read_never_blocks_on_a_fifo_nor_follows_a_link(tmp_path):
    os.mkfifo(tmp_path / "late.ipynb")
    (tmp_path / "link.ipynb").symlink_to("/etc/passwd")
    for name in ("late.ipynb", "link.ipynb"):
        got = intake.read(intake.Entry(tmp_path / name, name, name), 1000)
        assert isinstance(got, intake.Unreadable) and not got.too_large


# --------------------------------------------------------------------------- the batch, with a forging worker


def _forger(records_for):
    """A stand-in for the run step (grade_folder's run=): reports the records `records_for(student_marker)` gives."""

    def run(prep, limits, work, uid, walls):
        source = "\n".join(cell.source for cell in prep.notebook.cells)
        nonce = NONCE.search(source).group(1)
        marker = re.search(r"# student: (\S+)", source)
        records = records_for(marker.group(1) if marker else "")
        if records is None:
            return None, 0.1
        harvest = {}
        for qid, record in records.items():
            if callable(record):  # it writes the text itself, given the run's nonce
                record = record(nonce, qid)
            text = record if isinstance(record, str) else json.dumps({"nonce": nonce, "id": qid, "record": record})
            harvest[qid] = text
        return RunResult(harvest=harvest), 0.1
    return run


def _class_with_markers(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        nb = blank()
        nb.cells.insert(0, new_code_cell(f"# student: {name}"))
        write(nb, folder / f"{name}.ipynb")


def test_hostile_records_and_a_crashing_scorer_cost_only_their_own_rows(tmp_path, monkeypatch):
    names = ["huge_float", "huge_int", "deep", "shape", "nan", "crash", "honest"]
    deep_text = '{"nonce": "x", "id": "q4", "record": ' + _nest(50_000, "{}") + "}"
    forged = {
        "huge_float": {"q4": {"status": "value", "value": {"t": "float", "v": 1e308}}},
        "huge_int": {"q4": {"status": "value", "value": {"t": "int", "v": 10 ** 400}}},
        "deep": {"q4": deep_text, "q5": '{"status": "value", "value": ' + _nest(3000, "{}") + "}",
                 "q6": {"status": "value", "value": json.loads(_nest(500, '{"t": "int", "v": 1}'))}},
        "shape": {"q7": {"status": "ran", "cases": [{"ok": {"t": "array", "shape": [2 ** 31, 0], "v": []}}] * 91}},
        "nan": {"q4": '{"nonce": "n", "id": "q4", "record": {"status": "value", "value": {"t": "float", "v": NaN}}}'},
        "crash": {},
        "honest": {"q5": {"status": "value", "value": {"t": "int", "v": 0}}},
    }
    real_score = grade.score

    def score(exercise, prep, result, limits, records):
        if any("# student: crash" in c.source for c in prep.notebook.cells):
            raise OverflowError("a bug in the grader, for this notebook only")
        return real_score(exercise, prep, result, limits, records)

    monkeypatch.setattr(grade, "score", score)
    folder, out = tmp_path / "subs", tmp_path / "report"
    _class_with_markers(folder, names)
    graded = grade_folder(folder, out, exercise_id="01_unscaled_scores", isolation="none", jobs=2,
                          run=_forger(lambda name: forged.get(name, {})))
    statuses = {g.student: str(g.status) for g in graded}
    assert statuses == {**{n: "graded" for n in names}, "crash": "grader error"}
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
    assert [r["student"] for r in rows] == sorted(names)
    summary = (out / "summary.md").read_text()
    assert "## Grader errors" in summary and "OverflowError: a bug in the grader" in summary
    assert summary.splitlines()[0].startswith("**Graded WITHOUT isolation**")
    assert len(list((out / "feedback").iterdir())) == len(names)


def test_odd_files_and_names_all_end_in_the_report(tmp_path, monkeypatch):
    folder, out = tmp_path / "subs", tmp_path / "report"
    folder.mkdir()
    write(full(), Path(os.fsdecode(os.fsencode(folder) + b"/caf\xe9.ipynb")))
    write(full(), folder / ("=x" + "y" * 240 + ".ipynb"))
    write(full(), folder / "+cmd.ipynb")
    os.mkfifo(folder / "fifo.ipynb")
    (folder / "link.ipynb").symlink_to(folder / "+cmd.ipynb")
    (folder / "deep.ipynb").write_text(_nest(100_000))
    (folder / "sub").mkdir()
    (folder / "sub" / "x.ipynb").write_text("{}")
    graded = grade_folder(folder, out, exercise_id="01_unscaled_scores", isolation="none", jobs=2,
                          run=_forger(lambda name: {}))
    assert {str(g.status) for g in graded} <= {"graded", "unreadable"}
    text = (out / "gradebook.csv").read_text(encoding="utf-8")
    students = [row["student"] for row in csv.DictReader(io.StringIO(text))]
    assert len(students) == 5 and "caf\\xe9" in students and "'+cmd" in students
    assert all(not s.startswith(("=", "+", "-", "@")) for s in students)
    summary = (out / "summary.md").read_text()
    assert "`fifo.ipynb`" in summary and "`link.ipynb`" in summary
    assert len(list((out / "feedback").iterdir())) == 5
    assert all(len(p.name) <= 110 for p in (out / "feedback").iterdir())


def test_a_folder_the_grader_cannot_read_is_listed(tmp_path, monkeypatch):
    folder, out = tmp_path / "subs", tmp_path / "report"
    (folder / "locked").mkdir(parents=True)
    write(full(), folder / "ok.ipynb")
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(intake.os, "scandir", scandir)
    real_open = os.open

    def open_(path, flags, *args, **kwargs):  # read opens each name relative to its folder (dir_fd)
        if str(path).endswith("ok.ipynb"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(intake.os, "open", open_)
    graded = grade_folder(folder, out, exercise_id="01_unscaled_scores", isolation="none", jobs=1,
                          run=_forger(lambda name: {}))
    assert [(g.student, str(g.status)) for g in graded] == [("ok", "unreadable")]
    assert any("Permission denied" in note for note in graded[0].notes)
    assert "`locked`" in (out / "summary.md").read_text()


def test_a_record_within_the_runs_own_harvest_limit_is_read(tmp_path):
    """`--harvest-limit` above the default: a record longer than the default (as a code question with
    many array cases can make) is read back, as the worker kept it, not refused as unreadable."""
    limits = Limits(harvest_limit=3_000_000)
    record = {"status": "value", "value": {"t": "int", "v": 0}}

    def padded(nonce: str, qid: str) -> str:  # JSON's whitespace: the same record, 2.1 million characters long
        return json.dumps({"nonce": nonce, "id": qid, "record": record}) + " " * 2_100_000

    folder, out = tmp_path / "subs", tmp_path / "report"
    _class_with_markers(folder, ["long", "short"])
    forged = {"long": {"q5": padded}, "short": {"q5": record}}
    [long, short] = sorted(grade_folder(folder, out, exercise_id="01_unscaled_scores", isolation="none", jobs=1,
                                        limits=limits, run=_forger(lambda name: forged[name])),
                           key=lambda g: g.student)
    q5 = [q.id for q in bank.get("01_unscaled_scores").questions].index("q5")
    assert long.outcomes[q5] == short.outcomes[q5]
    assert "could not be read back" not in long.outcomes[q5].message
