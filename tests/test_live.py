"""The live part of the course website (JupyterLite + Pyodide): its pins, its notebooks, and a browser run.

The first tests need only the course venv. The kernel check also runs on Pyodide's own numpy and
matplotlib where a venv with them exists (.venv-pyodide-pins: README, "The live site"). The
browser test builds the site (book/build.py), serves it on 127.0.0.1 and drives every live
notebook in headless Chromium with every other address blocked (tests/live_site.py); like the
book test, it skips with the reason when the book tooling, Chromium or playwright is missing,
unless T5LESSON_REQUIRE_BOOK=1 (CI), where that is a failure.
"""
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS_PYTHON = Path(os.environ.get("T5LESSON_PYODIDE_PINS_PYTHON", ROOT / ".venv-pyodide-pins" / "bin" / "python"))


def _module(name):
    spec = importlib.util.spec_from_file_location(f"book_{name}", ROOT / "book" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


live = _module("live")
live_notebooks = _module("live_notebooks")


# Without the browser ------------------------------------------------------------------------
def test_live_notebooks_are_generated_and_fresh():
    assert live_notebooks.stale() == [], "run: python book/live_notebooks.py"
    names = sorted(p.name.split("_")[0] for p in live_notebooks.OUT.glob("*.ipynb"))
    assert names == list(live_notebooks.LIVE_LESSONS)


def test_each_live_notebook_has_every_explorer_of_its_lesson_and_links_back():
    for path in live_notebooks.lessons():
        lesson = json.loads(path.read_text())
        live_nb = json.loads((live_notebooks.OUT / path.name).read_text())
        names = live_notebooks.explorer_imports(lesson)
        # every cell of the lesson that shows an explorer (a stored widget with its picture)
        stored = sum(1 for c in lesson["cells"] if c["cell_type"] == "code"
                     and live_notebooks.explorer_calls("".join(c["source"]), names)
                     and any(live_notebooks.WIDGET_MIME in o.get("data", {}) and "image/png" in o["data"]
                             for o in c.get("outputs", [])))
        shown = [c for c in live_nb["cells"]
                 if c["cell_type"] == "code" and live_notebooks.explorer_calls(c["source"], names)]
        skipped = [c for c in live_nb["cells"] if re.fullmatch(r"live-\d+-skipped", c["id"])]  # explorers only
        assert len(shown) + len(skipped) == stored, path.name
        your_turns = [c for c in live_nb["cells"] if c["id"].endswith("-your-turn")]
        assert shown or (stored == 0 and your_turns), f"{path.name}: no explorer, nor a your-turn cell instead"
        page = f"{live_notebooks.site_url()}notebooks/{path.stem}.html"
        assert f"]({page})" in live_nb["cells"][0]["source"], "the first cell links back to the lesson page"
        for c in live_nb["cells"]:
            assert not c.get("outputs"), "live notebooks are stored without outputs"


def test_stale_check_is_not_vacuous(tmp_path, monkeypatch):
    monkeypatch.setattr(live_notebooks, "OUT", tmp_path)
    assert len(live_notebooks.stale()) == len(live_notebooks.LIVE_LESSONS)
    for p, text in live_notebooks.rendered().items():
        p.write_text(text)
    assert live_notebooks.stale() == []
    first = sorted(tmp_path.glob("*.ipynb"))[0]
    first.write_text(first.read_text().replace("Live:", "Live (edited):"))
    assert len(live_notebooks.stale()) == 1


def test_a_carried_cell_that_cannot_run_live_stops_the_generator(tmp_path):
    """A cell tagged `live` is carried with the imports it reads, or the generator says why not."""
    lesson = json.loads(next((ROOT / "notebooks").glob("05_*.ipynb")).read_text())
    carried = next(c for c in lesson["cells"] if live_notebooks.CARRIED_TAG in c["metadata"].get("tags", []))
    built = live_notebook_of(tmp_path, lesson)
    assert any(c["id"] == f"live-{carried['id']}-carried" for c in built["cells"])
    assert "from t5lesson.lengthgen import SCHEMES" in built["cells"][1]["source"], "its imports came along"
    for source, said in [("print(never_defined)", "never_defined"),
                         ("print(F.relu)", "needs torch")]:  # F: lesson 5's torch.nn.functional
        carried["source"] = source
        with pytest.raises(SystemExit, match=said):
            live_notebook_of(tmp_path, lesson)


def live_notebook_of(tmp_path, lesson: dict) -> dict:
    path = tmp_path / "05_length_generalisation.ipynb"  # the name finds the lesson's answers
    path.write_text(json.dumps(lesson))
    return live_notebooks.live_notebook(path)


def test_torch_is_an_extra_and_the_course_still_installs_it():
    pyproject = (ROOT / "pyproject.toml").read_text()
    deps = ast.literal_eval(pyproject.split("\ndependencies = ", 1)[1].split("\n", 1)[0])
    assert not any(d.startswith("torch") for d in deps), deps
    assert 'torch = ["torch>=2.1"]' in pyproject.split("[project.optional-dependencies]", 1)[1]
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in requirements and "-e .[torch]" in requirements


def test_import_t5lesson_and_the_explorers_import_no_torch():
    code = ("import sys, t5lesson, t5lesson.check\n"
            + "".join(f"import {m}\n" for m in sorted(_live_explorer_modules()))
            + "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))\n"
            "assert not bad, bad\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def _live_explorer_modules():
    mods = set()
    for path in live_notebooks.OUT.glob("*.ipynb"):
        for c in json.loads(path.read_text())["cells"]:
            if c["cell_type"] == "code":
                for node in ast.walk(ast.parse(c["source"])):
                    if isinstance(node, ast.ImportFrom) and node.module.startswith("t5lesson"):
                        mods.add(node.module)
    return mods


def _kernel_check(python):
    result = subprocess.run([str(python), str(ROOT / "tests" / "live_kernel_check.py")], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="agg"),
                            capture_output=True, text=True, timeout=600)
    assert result.stdout.strip(), result.stderr[-3000:]
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts["problems"] == [] and not facts["torch_imported"], facts
    assert len(facts["explorers"]) >= len(live_notebooks.LIVE_LESSONS)
    assert len(facts["verdicts"]) >= 10 and list(facts["verdicts"].values()).count("Correct") >= 10
    assert {q.split(":")[0] for q in facts["verdicts"]} == {n.removesuffix(".ipynb") for n in live.EXERCISES}
    turns = {f"{p.name}:{c['id'].removeprefix('live-').removesuffix('-your-turn')}:{kind}"
             for p in live_notebooks.OUT.glob("*.ipynb") for c in json.loads(p.read_text())["cells"]
             if c["id"].endswith("-your-turn") for kind in ("right", "wrong")}
    assert set(facts["your_turn"]) == turns and turns, "every your-turn cell was answered right and wrong"
    return facts


def test_live_code_runs_without_torch_on_the_course_pins():
    _kernel_check(sys.executable)


def test_live_code_runs_without_torch_on_pyodides_numpy_and_matplotlib():
    pins = {line.split("==")[0].lower(): line.split("==")[1] for line in live.cpython_pins()}
    if not PINS_PYTHON.exists():
        reason = (f"no {PINS_PYTHON} (python3 -m venv .venv-pyodide-pins && .venv-pyodide-pins/bin/pip install "
                  "$(.venv-book/bin/python book/live.py pins))")
        if os.environ.get("T5LESSON_REQUIRE_BOOK") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    facts = _kernel_check(PINS_PYTHON)
    assert (facts["numpy"], facts["matplotlib"]) == (pins["numpy"], pins["matplotlib"])


def test_every_live_lesson_but_5b_has_a_your_turn_cell_or_says_why_not():
    for path in live_notebooks.OUT.glob("0[0-5]_*.ipynb"):  # 5b has none; 2's is a step in PyTorch
        ids = [c["id"] for c in json.loads(path.read_text())["cells"]]
        assert any(i.endswith("-your-turn") for i in ids) or any(
            i.endswith("-skipped") and not i.split("-")[1].isdigit() for i in ids), path.name


def test_exercise_5_reference_is_the_lessons_clipped_scheme():
    """Its NumPy-only reference (so that check() runs live) maps offsets to parameters as the lesson does."""
    pytest.importorskip("torch")
    import numpy as np

    from t5lesson.exercises.ex05_length_generalisation import _cases, reference_clipped_bias
    from t5lesson.lengthgen.schemes import Scheme

    for case in _cases() + _cases(np.random.default_rng(1)):
        table, length, clip = case.args
        index = Scheme("x", "", "per-offset", clip=clip).parameter_of_offset(length, train_len=len(table))
        d = np.arange(length)[:, None] - np.arange(length)[None, :]
        expected = np.where(d >= 0, np.asarray(table)[index[np.maximum(d, 0)]], 0.0)
        np.testing.assert_array_equal(reference_clipped_bias(table, length, clip), expected)


def test_manifest_pins_every_file_and_the_lock_is_closed():
    m = live.manifest()
    assert [s["kind"] for s in m["sources"]] == ["release", "pypi"], "the official release first, the carrier second"
    assert len(m["sources"][1]["sha256"]) == 64
    files = live.expected_files(m)
    assert set(live.CORE) <= set(files) and all(len(h) == 64 for h in files.values())
    names = set(m["packages"]) | {live.norm(n) for n in live.EXTRA} | {"t5live-mplcache"} | set(live.KERNEL_OWN)
    for name, entry in m["packages"].items():
        assert {live.norm(d) for d in entry["depends"]} <= names, name
    for name in live.ROOTS:
        assert live.norm(name) in m["packages"]
    wheels = [line for line in live.KERNEL_WHEELS.read_text().splitlines() if line and not line.startswith("#")]
    assert wheels and all(" --hash=sha256:" in line and "==" in line for line in wheels)


def test_a_file_that_differs_from_the_official_lock_stops_the_fetch(tmp_path, monkeypatch):
    m = live.manifest()
    carrier = tmp_path / "carrier.whl"
    prefix = m["sources"][1]["prefix"]
    with zipfile.ZipFile(carrier, "w") as z:
        for name in live.expected_files(m):
            z.writestr(prefix + name, b"not the official bytes" if name == "pyodide.asm.wasm" else b"")
    monkeypatch.setattr(live, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(live, "_pip_download", lambda lines, dest: [carrier])
    monkeypatch.setattr(live, "_from_release", lambda *a: (_ for _ in ()).throw(OSError("unreachable")))
    with pytest.raises(SystemExit, match=r"do not match the official pyodide-lock.json.*pyodide.asm.wasm"):
        live.fetch()
    assert not live.verified_dir(m).exists(), "nothing unchecked is left in the cache"


def test_course_wheel_is_reproducible_and_needs_no_torch(tmp_path):
    """Built as the site's build builds it: `pip wheel` in the book's venv, whose setuptools is pinned."""
    from book_site import BOOK_PYTHON

    if not BOOK_PYTHON.exists():
        if os.environ.get("T5LESSON_REQUIRE_BOOK") == "1":
            pytest.fail(f"no {BOOK_PYTHON}")
        pytest.skip(f"no {BOOK_PYTHON} (pip install -r book/requirements.txt)")
    code = ("import sys, pathlib; sys.path.insert(0, 'book'); import live\n"
            "print(live.t5lesson_wheel(pathlib.Path(sys.argv[1])))")
    wheels = []
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        result = subprocess.run([str(BOOK_PYTHON), "-c", code, str(folder)], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
        wheels.append(Path(result.stdout.split()[-1]))
    wa, wb = wheels
    assert wa.read_bytes() == wb.read_bytes()
    with zipfile.ZipFile(wa) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        assert "t5lesson/explorers/warmup.py" in z.namelist()
        assert not any(n.startswith(("solutions/", "tests/")) for n in z.namelist())
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires and all('extra == "torch"' in r for r in requires if "torch" in r), requires  # an extra only


def test_the_stdlib_zip_is_the_official_one_plus_bytecode_beside_its_sources(tmp_path):
    official, ours = tmp_path / "python_stdlib.zip", tmp_path / live.STDLIB
    with zipfile.ZipFile(official, "w") as z:
        z.writestr("json/__init__.py", "x = 1\n", zipfile.ZIP_DEFLATED)
        z.writestr("this.py", "y = 2\n", zipfile.ZIP_STORED)
    live._stdlib_zip(official, ours, [("json/__init__.pyc", b"bytecode")])
    with zipfile.ZipFile(official) as a, zipfile.ZipFile(ours) as b:
        for info in a.infolist():  # every official file, byte for byte and as it was stored
            assert b.read(info.filename) == a.read(info.filename)
            assert b.getinfo(info.filename).compress_type == info.compress_type
        assert set(b.namelist()) - set(a.namelist()) == {"json/__init__.pyc"}
    assert live.stdlib_differences(official, ours) == []
    with zipfile.ZipFile(ours, "a") as z:  # what the build's last check catches
        z.writestr("json/extra.py", "z = 3\n")
        z.writestr("this.pyc", b"bytecode")
    assert live.stdlib_differences(official, ours) == ["json/extra.py added"]
    with pytest.raises(SystemExit, match="not in python_stdlib.zip.*nothere.pyc"):
        live._stdlib_zip(official, ours, [("nothere.pyc", b"bytecode")])


def _served(site: Path) -> tuple[dict, dict]:
    lite = site / "live"
    options = json.loads((lite / "jupyter-lite.json").read_text())["jupyter-config-data"]["litePluginSettings"][
        "@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]
    return options, json.loads((lite / "static" / "pyodide" / "pyodide-lock.json").read_text())["packages"]


# The browser test ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browsed(site):  # the site tests/conftest.py builds once for every site test
    import live_site

    html, result = site[:2]
    if result.returncode != 0:
        pytest.fail(f"the site did not build:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    facts = live_site.run(html)
    text = live_site.report(facts, html)
    node = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "live_start.py"), str(html), "--rounds",
                           "1", "--only", "as served"], capture_output=True, text=True)  # the worker's phases
    text += ("\nThe same start in Node, the kernel's work alone (benchmarks/live_start.py):\n"
             + (node.stdout if node.returncode == 0 else f"not measured: {node.stderr.strip()[-300:]}\n"))
    live_site.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (live_site.ARTIFACTS / "report.txt").write_text(text)
    print(text)
    return facts, html


def test_the_kernel_starts_on_our_bytecode_and_without_what_is_left_out(browsed):
    options, lock = _served(browsed[1])
    static = browsed[1] / "live" / "static" / "pyodide"
    assert options["stdLibURL"] == f"./static/pyodide/{live.STDLIB}" and (static / live.STDLIB).is_file()
    assert set(live.START_PACKAGES) | {live.PYCACHE} == set(options["packages"])
    with zipfile.ZipFile(static / live.STDLIB) as z:
        pycs = [n for n in z.namelist() if n.endswith(".pyc")]
    assert len(pycs) > 150 and "inspect.pyc" in pycs, len(pycs)  # what a visit imports, e.g. inspect
    with zipfile.ZipFile(static / lock[live.PYCACHE]["file_name"]) as z:
        names = z.namelist()
    assert any(n.startswith("matplotlib/__pycache__/") for n in names)
    assert any(n.startswith("ipywidgets/widgets/__pycache__/") for n in names), "the widgets' modules too"
    for name in live.LEFT_OUT:
        assert lock[name]["file_name"].startswith(f"t5live_no_{name}-"), lock[name]
        assert lock[name]["imports"] == [] and lock[name]["depends"] == []


def test_nothing_leaves_the_machine(browsed):
    assert browsed[0]["external"] == []


@pytest.mark.parametrize("name", [p.name for p in sorted(live_notebooks.OUT.glob("*.ipynb"))])
def test_every_explorer_redraws_on_a_key_press_and_a_click(browsed, name):
    f = browsed[0][name]
    assert f["errors"] == [] and f["page_errors"] == [], (f["errors"], f["page_errors"])
    nb = json.loads((live_notebooks.OUT / name).read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and c["id"].endswith("-explorer")]
    turns = [c["id"].removeprefix("live-").removesuffix("-your-turn") for c in nb["cells"]
             if c["id"].endswith("-your-turn")]
    assert f["explorers"] == len(cells) and (cells or turns), "an explorer, or (lesson 5) a your-turn cell instead"
    moved = {s["explorer"] for s in f["sliders"]}
    assert moved == set(range(f["explorers"])), "every explorer has a slider that was moved"
    for s in f["sliders"]:  # _timed waited for each new image; the readouts moved too
        before, after_key, after_click = s["values"]
        assert after_key != before and after_click != after_key, s
    page = f"{live_notebooks.site_url()}notebooks/{Path(name).stem}.html"
    assert page in f["links"], "the live notebook links back to its lesson page"
    assert all(p.exists() and p.stat().st_size > 10_000 for p in f["shots"])
    assert sorted(f["your_turn"]) == sorted(turns)
    carried = [c["id"] for c in nb["cells"] if c["id"].endswith("-carried")]
    assert sorted(f["carried"]) == sorted(carried)
    for cell_id, printed in f["carried"].items():  # run again on the right answers: no error, and output
        assert printed and "Error" not in printed, (cell_id, printed)
    for turn, (wrong, right) in f["your_turn"].items():  # typed in wrong, then right, each run in the browser
        assert wrong.startswith(f"{turn}: differs from the course's version"), wrong
        assert right.startswith(f"{turn}: matches the course's version"), right


@pytest.mark.parametrize("visit", ["cold", "warm"])
def test_run_all_clicked_as_soon_as_the_notebook_shows_still_gives_a_working_slider(browsed, visit):
    f = browsed[0][f"timed {visit}"]
    phases = f["phases"]  # timed_visit waited for each, in this order
    assert f["errors"] == [] and f["page_errors"] == [], (f["errors"], f["page_errors"])
    assert max(phases, key=phases.get).startswith("first slider works"), phases
    assert phases["Run All clicked (Run menu)"] < phases["kernel ready"], "clicked before the kernel was ready"
    kernels = [url for url in f["workers"] if "pyodide-kernel-extension" in url]
    assert len(kernels) == 1, f"one kernel, started early (book/live/run-before-kernel.js): {f['workers']}"
    if visit == "warm":  # the browser's cache serves part of the second visit (README: not all of it)
        assert f["downloaded_mb"] < browsed[0]["timed cold"]["downloaded_mb"], f["downloaded_mb"]


@pytest.mark.parametrize("name", list(live.EXERCISES))
def test_exercise_checks_answers_in_the_browser(browsed, name):
    f = browsed[0][f"exercises/{name}"]
    assert f["page_errors"] == [], f["page_errors"]
    right, wrong = f["verdicts"][f["right"]], f["verdicts"][f["wrong"]]
    assert right.startswith(f"{f['right']}: Correct"), right
    assert right.split("\n")[0].startswith(f"{f['right']}: Correct") and "Incorrect" not in right
    assert wrong.startswith(f"{f['wrong']}: Incorrect"), wrong
    assert f"{f['wrong']} hint 1/" in wrong, "hint() prints the first hint"
    assert all(p.exists() for p in f["shots"])


def test_lesson_pages_link_to_their_live_notebooks(browsed):
    site = browsed[1]
    for path in live_notebooks.OUT.glob("*.ipynb"):
        html = (site / "notebooks" / f"{path.stem}.html").read_text()
        assert f'href="../live/lab/index.html?path={path.name}"' in html, path.name
        assert "move the sliders live in your browser" in html and live_notebooks.FIRST_VISIT in html
    for name in live.EXERCISES:
        html = (site / "exercises" / name.replace(".ipynb", ".html")).read_text()
        assert f'href="../live/lab/index.html?path=exercises/{name}"' in html, name
    assert (site / "live" / "lab" / "index.html").exists()
