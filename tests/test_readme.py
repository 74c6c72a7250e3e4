"""The README's two commands are the ones CI runs and the ones that work."""
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED_IN_GRADING_MD = ("t5lesson/grading", "t5lesson/exercises")  # their module table is docs/grading.md's


def readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_exactly_two_commands_and_ci_runs_the_second():
    commands = readme_commands()
    assert len(commands) == 2, commands
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    assert commands[1] in ci_lines


def test_requirements_pin_torch_cpu_build():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in lines


def test_first_command_opens_the_start_notebook_with_the_repository_as_root():
    # A file path as jupyter lab's argument would make its folder (notebooks/) the root, hiding
    # exercises/ from the file browser; default_url opens the notebook and keeps the root here.
    first = readme_commands()[0]
    assert first.endswith("jupyter lab --allow-root --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb")
    assert (ROOT / "notebooks" / "00_start_here.ipynb").exists()


def test_module_table_matches_the_folders():
    """Every module of the package is in the README's "Where things live" table, in its folder's row;
    the engine's and the exercises' modules are listed once, in docs/grading.md, which the table links to."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Where things live", 1)[1].split("\n## ", 1)[0]
    assert "(docs/grading.md#modules)" in section
    listed = defaultdict(set)
    for folder, modules in re.findall(r"^\| `(t5lesson/[\w/]*)` \| ([^|]+) \|", section, re.MULTILINE):
        listed[folder.rstrip("/")] |= set(re.findall(r"`(\w+)\.py`", modules))
    actual = defaultdict(set)
    for path in (ROOT / "t5lesson").rglob("*.py"):
        folder = path.parent.relative_to(ROOT).as_posix()
        if path.name != "__init__.py" and not folder.startswith(DOCUMENTED_IN_GRADING_MD):
            actual[folder].add(path.stem)
    assert dict(listed) == dict(actual)


def test_suggested_times_are_the_stated_estimate():
    """The lesson table's times are what tools/sitting_times.py computes from the notebooks as they are."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sitting_times", ROOT / "tools" / "sitting_times.py")
    sitting_times = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sitting_times)
    quoted = sitting_times.readme_times((ROOT / "README.md").read_text())
    assert quoted == sitting_times.estimates(), "run python tools/sitting_times.py and copy its column into README.md"
