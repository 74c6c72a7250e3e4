"""Fill every your-turn cell of the lessons with its answer from solutions/your_turn/, and run.

Used by test_your_turn.py, and by hand: `python tests/lessons/your_turn_fill.py [NN ...]` fills the
lessons whose number prefixes are given (all by default) in a scratch copy of notebooks/, runs them
in order in one folder (so a file that lesson 6 writes is there for lesson 7), and prints, per
lesson, which cells printed something other than what is stored.

A your-turn cell is a code cell tagged `your-turn` whose first line is `# Your turn (NAME): ...`.
Its answer is the block `# %% your_turn: NAME` of solutions/your_turn/<notebook stem>.py: the whole
cell as a learner who got it right would leave it.
"""
from __future__ import annotations

import configparser
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "notebooks"
ANSWERS = ROOT / "solutions" / "your_turn"
TAG = "your-turn"
NAME = re.compile(r"^# Your turn \(([\w.-]+)\)")
BLOCK = re.compile(r"^# %% your_turn: ([\w.-]+)[ \t]*$", re.MULTILINE)


def source(cell) -> str:
    return "".join(cell["source"])


def your_turn_cells(nb) -> dict[str, dict]:
    """NAME -> cell, for every cell tagged your-turn (a tagged cell without its name line is an error)."""
    found = {}
    for cell in nb["cells"]:
        if TAG in cell.get("metadata", {}).get("tags", []):
            match = NAME.match(source(cell))
            if not match:
                raise ValueError(f"a your-turn cell must start with '# Your turn (NAME): ...': {source(cell)[:60]!r}")
            if match.group(1) in found:
                raise ValueError(f"two your-turn cells are named {match.group(1)!r}")
            found[match.group(1)] = cell
    return found


def answers_for(stem: str) -> dict[str, str]:
    """NAME -> the answer cell's source, from solutions/your_turn/<stem>.py ({} when there is none)."""
    path = ANSWERS / f"{stem}.py"
    if not path.exists():
        return {}
    text = path.read_text()
    marks = list(BLOCK.finditer(text))
    return {m.group(1): text[m.end():(marks[k + 1].start() if k + 1 < len(marks) else len(text))].strip("\n") + "\n"
            for k, m in enumerate(marks)}


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines[-1].strip() if lines else ""


def fill(nb) -> list[str]:
    """Replace every your-turn cell of `nb` (a dict, changed in place) by its answer; return the names."""
    stem = nb["metadata"]["t5lesson_stem"]
    cells, answers = your_turn_cells(nb), answers_for(stem)
    missing, extra = sorted(set(cells) - set(answers)), sorted(set(answers) - set(cells))
    if missing or extra:
        raise ValueError(f"{stem}: your-turn cells without an answer {missing}, answers without a cell {extra}")
    for name, cell in cells.items():
        cell["source"] = answers[name]
    return sorted(cells)


def _sanitizers():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "tests" / "nbval_sanitize.cfg")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def printed(cell, sanitizers) -> str:
    """The text nbval compares: streams and text/plain results, sanitized."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append("".join(output["text"]))
        elif output["output_type"] in ("execute_result", "display_data"):
            parts.append("".join(output.get("data", {}).get("text/plain", "")))
        elif output["output_type"] == "error":
            parts.append(f"ERROR {output['ename']}: {output['evalue']}")
    text = "".join(parts)
    for regex, replace in sanitizers:
        text = regex.sub(replace, text)
    return text


def compared(cell) -> bool:
    tags = cell.get("metadata", {}).get("tags", [])
    return cell["cell_type"] == "code" and not {"nbval-ignore-output", "nbval-skip", TAG} & set(tags)


def run_filled(prefixes: list[str] | None = None, timeout: int = 300) -> dict[str, dict]:
    """Fill and run the lessons (in order, in one scratch folder); per lesson, what came out.

    Per lesson: "your_turn" (name -> what its check printed), "differ" (the compared cells whose
    output is not the stored one) and "printed" (every code cell's text, in order).
    """
    sys.path.insert(0, str(ROOT / "tools"))
    from run_notebook import execute  # the one runner of stored notebooks

    sanitizers = _sanitizers()
    results = {}
    with tempfile.TemporaryDirectory(prefix="your-turn-") as scratch:
        folder = Path(scratch) / "notebooks"
        shutil.copytree(LESSONS, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.py"))
        for path in sorted(folder.glob("[0-9]*.ipynb")):
            if prefixes and path.name[:2] not in prefixes and path.stem.split("_")[0] not in prefixes:
                continue
            stored = json.loads((LESSONS / path.name).read_text())
            nb = json.loads(path.read_text())
            nb["metadata"]["t5lesson_stem"] = path.stem
            names = fill(nb)
            if not names:
                continue
            del nb["metadata"]["t5lesson_stem"]
            path.write_text(json.dumps(nb))
            execute(path, timeout, cwd=folder)
            ran = json.loads(path.read_text())
            turns = {n: printed(c, sanitizers) for n, c in your_turn_cells(ran).items()}
            differ = [(k, printed(a, sanitizers), printed(b, sanitizers))
                      for k, (a, b) in enumerate(zip(stored["cells"], ran["cells"], strict=True))
                      if compared(a) and printed(a, sanitizers) != printed(b, sanitizers)]
            shown = [printed(c, []) for c in ran["cells"] if c["cell_type"] == "code"]  # as printed, unsanitized
            results[path.name] = {"your_turn": turns, "differ": differ, "printed": shown}
    return results


if __name__ == "__main__":
    for lesson, result in run_filled(sys.argv[1:] or None).items():
        print(f"== {lesson}")
        for name, text in result["your_turn"].items():
            print(f"  your turn {name}: {text.strip()}")
        for k, stored, ran in result["differ"]:
            print(f"  cell {k} differs:\n    stored: {stored[:300]!r}\n    filled: {ran[:300]!r}")
