"""Lesson 8's stored GPU runs: they name their machine, versions, TF32 and command, and their tables fit 90 columns."""
import json

import pytest

from t5lesson import ArgumentError
from t5lesson.lessons.flex_runs import GPU_RUNS_PATH, TABLES, gpu_runs_table, load_gpu_runs


def test_the_stored_runs_name_their_machine_and_versions():
    runs = load_gpu_runs()
    assert runs["machine"] == "NVIDIA H200" and runs["torch"] == "2.11" and runs["transformers"] == "5.17"
    assert runs["tf32"] is False and runs["command"] == "python benchmarks/flex_attention.py --gpu"
    assert "not re-measured on CPU" in runs["source"]
    for which in TABLES:
        assert runs[which]["rows"] and all("L" in row and "dtype" in row for row in runs[which]["rows"])
    runs["machine"] = "changed"
    assert load_gpu_runs()["machine"] == "NVIDIA H200"  # a fresh copy each time


def test_the_issue_figures_as_stored():
    runs = load_gpu_runs()
    last = runs["attention"]["rows"][2]
    assert (last["L"], last["dtype"], last["eager_ms"], last["eager_peak_gib"], last["flex_ms"],
            last["flex_peak_gib"], last["largest_difference"]) == (16384, "bf16", 29.8, 24.1, 3.4, 0.13, 9.8e-4)
    layer = runs["layer"]["rows"][1]
    best_ms = min(layer[f"{k}_ms"] for k in ("transformers_eager", "transformers_sdpa", "transformers_flex_attention"))
    assert round(best_ms / layer["score_mod_ms"]) == 54  # "54x" in time against transformers' best backend


@pytest.mark.parametrize("which", TABLES)
def test_tables_fit_90_columns_and_say_where_they_come_from(which):
    text = gpu_runs_table(which)
    assert max(len(line) for line in text.splitlines()) <= 90
    assert text.startswith("NVIDIA H200, PyTorch 2.11, transformers 5.17, TF32 off")
    assert "python benchmarks/flex_attention.py --gpu" in text and "not re-measured here" in text


def test_attention_table_ratios_come_from_the_stored_figures():
    lines = gpu_runs_table("attention").splitlines()
    assert "8.8x" in lines[5] and "185x" in lines[5]  # 29.8 / 3.4 and 24.1 / 0.13 at L = 16,384, bf16


def test_a_new_run_of_the_same_shape_loads(tmp_path):
    runs = load_gpu_runs()
    runs["machine"] = "another GPU"
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    assert load_gpu_runs(path)["machine"] == "another GPU"
    del runs["command"]
    path2 = tmp_path / "bad.json"
    path2.write_text(json.dumps(runs))
    with pytest.raises(ArgumentError, match="lacks \\['command'\\]"):
        load_gpu_runs(path2)
    with pytest.raises(ArgumentError, match="which must be one of"):
        gpu_runs_table("speed")
    assert GPU_RUNS_PATH.name == "flex_gpu_runs.json"


def test_a_backend_that_did_not_run_is_said_so():
    runs = load_gpu_runs()
    runs["layer"]["rows"][0]["transformers_flex_attention_ms"] = None
    lines = gpu_runs_table("layer", runs).splitlines()
    assert any("transformers flex_attention" in line and "did not run" in line for line in lines)
