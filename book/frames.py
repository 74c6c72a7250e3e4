"""Draw the frames of every explorer on the website's lesson pages (run with the course's Python).

    .venv/bin/python book/frames.py OUT notebooks/00_start_here.ipynb ...

book/build.py runs this (its own venv has no NumPy, matplotlib or torch). For each lesson it
runs the lesson's own code cells in order, in a fresh IPython shell, up to its last explorer (as
a kernel would: the explorers of lessons 4 and 7 show a model the lesson trains a few cells
earlier). At each explorer cell it takes the explorer that cell shows and draws its frames over
the controls PAGE_CONTROLS names (`t5lesson.explorers.frames`: the explorer's own figure at each
setting), before later cells can move it. Writes OUT/<lesson>/<n>/<index>.png and a manifest
OUT/<lesson>.json (controls, and per frame its file, alt text and readout), reused while the
lesson, the package and this file are unchanged (a key in the manifest).

The controls: per explorer, the one or two the lesson's text asks the learner to move, over the
values it names (and the explorer's start value, where the page opens). The rest stay in the
notebook; the page says which.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
POWERS_OF_TWO = [2 ** k for k in range(1, 11)]  # d from 2 to 1024, the slider's stops in lessons 1 and 2
# Lesson file -> per explorer on its page, in page order: {parameter: the values the page offers}.
PAGE_CONTROLS = {
    "00_start_here.ipynb": [{"gap": [g / 2 for g in range(21)]}],  # "Drag the slider", 0 to 10; the gap of 6
    "01_unscaled_scores.ipynb": [
        {"d": POWERS_OF_TWO},  # "Move d from 2 to 1024"
        {"d": POWERS_OF_TWO, "query": [0, 1, 2, 3, 4]},  # "Try d = 4, then 64, then 1024 ... Then try other queries"
    ],
    "02_where_sqrt_d_went.ipynb": [{"d": POWERS_OF_TWO, "u": [-6, -3, 0, 3, 6]}],  # "Move d and u"
    # "num_buckets 33", "max_distance 1024", "num_buckets 48 with max_distance 20"
    "03_relative_position_buckets.ipynb": [{"num_buckets": [8, 16, 32, 33, 48],
                                            "max_distance": [20, 32, 64, 128, 256, 1024]}],
    "04_bias_heatmaps.ipynb": [
        {"head": [0, 1, 2, 3], "content": [0, 1, 2, 3, 4]},  # "head 1 ... raise the std of q·k to 3 or 4"
        {"head": [0, 1, 2, 3], "content": [0, 1, 2, 4]},  # "Look at these heads in the explorer"
    ],
    # "max_distance 16 or 64; 128, 256, 512; switch the left panel"
    "05b_when_buckets_do_not_help.ipynb": [{"max_distance": [16, 32, 64, 128, 256, 512],
                                             "show": ["accuracy", "weight on right key"]}],
    "07_tiny_t5.ipynb": [{"layer": [0, 1], "head": [0, 1, 2, 3]}],  # "Move the sliders": every layer and head
}


def explorer_cells(nb: dict) -> list[int]:
    """Indices of the cells that show an explorer: a stored widget view with its picture (what
    book/build.py replaces by the frames), not a progress bar."""
    return [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            and any(WIDGET_MIME in o.get("data", {}) and "image/png" in o.get("data", {})
                    for o in cell.get("outputs", []))]


def cache_key(notebook: Path) -> str:
    """What the frames depend on: the lesson, the package's code and data, this file."""
    digest = hashlib.sha256(notebook.read_bytes())
    for path in sorted((ROOT / "t5lesson").rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".npz", ".pt"):
            digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def _shell():
    """A fresh IPython shell that runs cells as a kernel does, but shows nothing: the explorer a cell
    shows is its result, not a widget (an explorer's repr would build its ipywidgets view)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.display_formatter.format = lambda obj, include=None, exclude=None: ({}, {})
    return shell


def run_lesson(notebook: Path) -> list:
    """Run the lesson's code cells up to its last explorer; the frames of each explorer, in page order."""
    from t5lesson.explorers import Explorer
    from t5lesson.explorers.frames import frames

    nb = json.loads(notebook.read_text())
    wanted = explorer_cells(nb)
    controls = PAGE_CONTROLS.get(notebook.name, [])
    if len(controls) != len(wanted):
        sys.exit(f"{notebook.name}: {len(wanted)} explorers on the page, PAGE_CONTROLS names {len(controls)}")
    shell, drawn = _shell(), []
    for index, cell in enumerate(nb["cells"][:max(wanted, default=-1) + 1]):
        if cell["cell_type"] != "code" or "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            result = shell.run_cell("".join(cell["source"]), store_history=False)
        if not result.success:
            sys.exit(f"{notebook.name}, cell {index}: {result.error_before_exec or result.error_in_exec!r}")
        if index in wanted:
            if not isinstance(result.result, Explorer):
                sys.exit(f"{notebook.name}, cell {index} shows {type(result.result).__name__}, not an explorer")
            drawn.append((result.result, frames(result.result, controls[len(drawn)])))
    return drawn


def manifest_entry(explorer, made: list, folder: Path, prefix: str) -> dict:
    """Write one explorer's frames as PNG files; what the page needs to show them."""
    from t5lesson.explorers.frames import control_values, display_size, label, value_label

    folder.mkdir(parents=True, exist_ok=True)
    names = list(made[0].values)
    offered = control_values(explorer, {n: [f.values[n] for f in made] for n in names})
    params = {p.name: p for p in explorer.params}
    entries = []
    for index, frame in enumerate(made):
        (folder / f"{index:03d}.png").write_bytes(frame.png)
        entries.append({"file": f"{prefix}/{index:03d}.png", "alt": frame.alt, "readout": frame.readout})
    width, height = display_size(made[0].png)
    return {
        "explorer": type(explorer).__name__, "width": width, "height": height,
        "controls": [{"name": n, "label": label(explorer, n), "values": [value_label(v) for v in offered[n]],
                      "start": offered[n].index(explorer.values[n]), "choice": params[n].options is not None}
                     for n in names],
        "others": [p.label or p.name for p in explorer.params if p.shown and p.name not in names],
        "frames": entries,
    }


def export(notebook: Path, out: Path) -> None:
    """Draw one lesson's frames into out/<lesson>/ and write out/<lesson>.json (skipped if up to date)."""
    manifest_path, key = out / f"{notebook.stem}.json", cache_key(notebook)
    if manifest_path.exists() and json.loads(manifest_path.read_text()).get("key") == key:
        return
    explorers = []
    for number, (explorer, made) in enumerate(run_lesson(notebook), start=1):
        prefix = f"{notebook.stem}/{number}"
        explorers.append(manifest_entry(explorer, made, out / prefix, prefix))
    manifest_path.write_text(json.dumps({"key": key, "explorers": explorers}, indent=1, ensure_ascii=False) + "\n")


def export_all(python: str, out: Path, notebooks: list[Path], workers: int = 2) -> None:
    """Run `export` for each lesson in a process of its own (a fresh interpreter per lesson, as a
    kernel), with `python` (the course's venv), at most `workers` at once. Raises on a failure."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    out, script = out.resolve(), str(Path(__file__).resolve())

    def one(notebook):
        return subprocess.run([python, script, str(out), str(notebook.resolve())], cwd=notebook.parent, env=env,
                              capture_output=True, text=True)

    with ThreadPoolExecutor(workers) as pool:
        for notebook, result in zip(notebooks, pool.map(one, notebooks), strict=True):
            if result.returncode != 0:
                raise RuntimeError(f"frames of {notebook.name} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name in argv[1:]:
        export(Path(name).resolve(), out)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's t5lesson, whatever the venv has installed
    sys.exit(main(sys.argv[1:]))
