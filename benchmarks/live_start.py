"""Where the live site's kernel start goes, phase by phase, with and without the precompiled bytecode.

Run: python benchmarks/live_start.py [SITE] [--rounds 3] [--only WAY ...]   (SITE: default build/book/html)

The live site's own Pyodide, in Node (no browser, no JupyterLab), does what the kernel's worker does
on a visit to lesson 3's live notebook, and this times each phase:
- Pyodide's start-up (loadPyodide: the interpreter and its standard library);
- the kernel's packages and the course's, installed in one batch (book/live.py START_PACKAGES);
- the kernel's import (pyodide_kernel: IPython and the rest);
- the notebook's imports cell, then its first explorer: made, its widget built, shown (its mime bundle).
Three ways side by side, taking turns round by round so that all see the same load:
- "source only": the official standard library and no bytecode wheel (every module compiled on import);
- "packages' bytecode": the official standard library and the PYCACHE wheel;
- "as served": what the site serves (the PYCACHE wheel and book/live.py's STDLIB zip).
It prints the median of each phase, and of the whole, for each. Node times the work of one core;
in the browser, JupyterLab, the page and the downloads come on top (tests/live_site.py times a visit).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
from live import PYCACHE  # noqa: E402  (the bytecode wheel's name, as the site's build writes it)

NOTEBOOK = ROOT / "book" / "live" / "notebooks" / "03_relative_position_buckets.ipynb"
PHASES = ["Pyodide's start-up", "packages installed", "kernel imported", "imports cell", "first explorer shown"]
RUNNER = r"""
const path = require("path"), fs = require("fs");
const [dir, stdlib, cellsFile, ...packages] = process.argv.slice(2);
const { loadPyodide } = require(path.resolve(dir, "pyodide.js"));
(async () => {
  const times = [], mark = () => times.push(performance.now() / 1000);
  mark();
  const py = await loadPyodide({ indexURL: path.resolve(dir) + "/", stdLibURL: path.resolve(dir, stdlib) });
  mark();
  await py.loadPackage(packages, { messageCallback: () => {} });
  mark();
  py.runPython("import pyodide_kernel");
  mark();
  py.globals.set("cells", JSON.parse(fs.readFileSync(cellsFile, "utf8")));
  py.runPython(`
import ast, comm
from comm.base_comm import BaseComm
class Unsent(BaseComm):  # no front end to send the widget to
    def publish_msg(self, *args, **kwargs):
        pass
comm.create_comm = Unsent
namespace = {"__name__": "__main__"}
exec(cells[0], namespace)`);
  mark();
  py.runPython(`
value = eval(compile(ast.Expression(ast.parse(cells[1]).body[-1].value), "<cell>", "eval"), namespace)
value._repr_mimebundle_()`);
  mark();
  console.log(JSON.stringify(times.slice(1).map((t, i) => t - times[i])));
})().catch((error) => { console.error(error.message || error); process.exit(1); });
"""


def ways(config: dict) -> dict[str, tuple[str, list[str]]]:
    """name -> (standard library file, packages) for each way to start."""
    packages = config["loadPyodideOptions"]["packages"]
    stdlib = Path(config["loadPyodideOptions"].get("stdLibURL", "python_stdlib.zip")).name
    source_only = [p for p in packages if p != PYCACHE]
    return {"source only": ("python_stdlib.zip", source_only),
            "packages' bytecode": ("python_stdlib.zip", packages),
            "as served": (stdlib, packages)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / "build" / "book" / "html")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", action="append", help="one of the ways (below) only; may be repeated")
    args = parser.parse_args(argv)
    static = args.site / "live" / "static" / "pyodide"
    node = shutil.which("node")
    if not node or not (static / "pyodide.js").exists():
        print(f"needs `node` and a built site with {static}/pyodide.js (python book/build.py)", file=sys.stderr)
        return 2
    config = json.loads((args.site / "live" / "jupyter-lite.json").read_text())["jupyter-config-data"][
        "litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    cells = [c["source"] for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    explorer = next(c for c in cells if c.strip().endswith(")") and "\n" not in c.strip())  # "BucketBoundaryExplorer()"
    options = ways(config)
    unknown = set(args.only or []) - set(options)
    if unknown:
        parser.error(f"no way named {', '.join(sorted(unknown))}; the ways are {', '.join(options)}")
    options = {name: way for name, way in options.items() if not args.only or name in args.only}
    results = {name: [] for name in options}
    with tempfile.TemporaryDirectory() as tmp:
        runner, cells_file = Path(tmp) / "runner.js", Path(tmp) / "cells.json"
        runner.write_text(RUNNER)
        cells_file.write_text(json.dumps([cells[0], explorer]))
        for round_ in range(args.rounds):
            for name, (stdlib, packages) in options.items():
                run = subprocess.run([node, str(runner), str(static), stdlib, str(cells_file), *packages],
                                     capture_output=True, text=True)
                if run.returncode:
                    print(f"{name}: Node failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                    return 1
                results[name].append(json.loads(run.stdout.strip().splitlines()[-1]))
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"median seconds over {args.rounds} rounds (Node {version}; load average after: {load})")
    print(f"{'phase':<24}" + "".join(f"{name:>20}" for name in options))
    for i, phase in enumerate(PHASES + ["whole"]):
        row = [statistics.median(r[i] if i < len(PHASES) else sum(r) for r in results[name]) for name in options]
        print(f"{phase:<24}" + "".join(f"{value:>20.2f}" for value in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
