"""--shard K/N and merge: shards hold each submission once, and merging them equals one run."""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from isolation_helpers import ISOLATION_ARGS

from conftest import ROOT, SAMPLE_EXERCISE, SAMPLE_TOTALS, SEED, grade_cli
from t5lesson.grading.batch import shard_of as select
from t5lesson.grading.integrations.shards import parse_shard
from t5lesson.grading.verdict import format_points


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_shards_are_deterministic_disjoint_and_complete():
    files = [f"s{i:03d}" for i in range(23)]
    slices = [select(files, (k, 4)) for k in range(1, 5)]
    assert sorted(sum(slices, [])) == files
    assert [len(s) for s in slices] == [6, 6, 6, 5]
    assert slices[1][:2] == ["s001", "s005"]
    assert select(files, (1, 1)) == files


@pytest.mark.parametrize("text", ["0/4", "5/4", "3", "a/b", "2/0"])
def test_bad_shards_are_usage_errors(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_shard(text)


def test_merged_shards_are_identical_to_one_run(sample_runs):
    whole, merged = _files(sample_runs["whole"]), _files(sample_runs["merged"])
    assert sorted(whole) == sorted(merged)
    assert {"gradebook.csv", "free_text.csv", "summary.md", "report.html", "grades.json",
            "feedback/ada.md", "class_report/questions.csv"} <= set(whole)
    different = [name for name in whole if whole[name] != merged[name]]
    assert different == []
    assert b"notes.txt" in whole["summary.md"]  # the folder's entries without a row survive the merge


def test_each_shard_holds_its_slice(sample_runs):
    students = []
    for number, folder in enumerate(sample_runs["shards"], 1):
        doc = json.loads((folder / "grades.json").read_text())
        assert doc["shard"] == f"{number}/2"
        students.append([s["student"] for s in doc["submissions"]])
        assert f"- shard: {number}/2" in (folder / "summary.md").read_text()
    assert students == [["ada", "broken"], ["ben", "cy"]]  # sorted, then every second one


def test_gradebook_of_the_class(sample_runs):
    rows = {r["student"]: (r["total"], r["status"]) for r in csv.DictReader((sample_runs["merged"] / "gradebook.csv")
                                                                            .open())}
    expected = {student: (format_points(total), "graded") for student, total in SAMPLE_TOTALS.items()}
    assert rows == {**expected, "broken": ("0", "unreadable")}


def test_progress_bar_on_a_terminal_and_lines_in_a_log(sample_runs):
    terminal, log = sample_runs["terminal"], sample_runs["log"]
    assert "\r  0%|" in terminal and "100%|" in terminal and "| 2/2 [" in terminal  # tqdm's bar, redrawn in place
    assert "unreadable=1" in terminal  # the statuses other than graded, in the bar's postfix
    out_of = format_points(SAMPLE_EXERCISE.auto_points)
    assert f"broken: 0/{out_of} unreadable" in terminal  # a problem gets a line of its own above the bar
    lines = [line for line in log.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == ["[1/2", "[2/2"]
    assert all(" | " in line and "/min" in line and "all graded" in line for line in lines)
    assert "\r" not in log and "\x1b" not in log


def test_merge_refuses_what_does_not_belong_together(sample_runs, tmp_path):
    shard1, shard2 = sample_runs["shards"]
    missing = subprocess.run(grade_cli("merge", str(shard1), "--out", str(tmp_path / "a")), cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "missing shard(s) 2/2" in missing.stderr
    twice = tmp_path / "again"
    shutil.copytree(shard1, twice)
    both = subprocess.run(grade_cli("merge", str(shard1), str(twice), str(shard2), "--out", str(tmp_path / "b")),
                          cwd=ROOT, capture_output=True, text=True)
    assert both.returncode == 2 and "shard 1/2 appears twice" in both.stderr
    into = subprocess.run(grade_cli("merge", str(shard1), str(shard2), "--out", str(shard1)), cwd=ROOT,
                          capture_output=True, text=True)
    assert into.returncode == 2 and "new folder" in into.stderr


def test_an_empty_shard_is_a_valid_report_and_merges(tmp_path):
    """More shards than submissions: a shard with nothing to grade writes an empty report (no kernel runs)."""
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "only.ipynb").write_text("not json", encoding="utf-8")
    reports = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = subprocess.run(grade_cli("grade", str(submissions), "--out", str(out), "--shard", f"{k}/2", "--quiet",
                                        "--seed", SEED, "--exercise", "01_unscaled_scores", *ISOLATION_ARGS),
                              cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        reports.append(out)
    assert json.loads((reports[1] / "grades.json").read_text())["submissions"] == []
    merged = subprocess.run(grade_cli("merge", *map(str, reports), "--out", str(tmp_path / "merged")), cwd=ROOT,
                            capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr
    rows = list(csv.DictReader((tmp_path / "merged" / "gradebook.csv").open()))
    assert [(r["student"], r["status"]) for r in rows] == [("only", "unreadable")]
