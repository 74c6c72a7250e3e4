"""The README's suggested times, from a stated estimate rather than a guess.

Run: python tools/sitting_times.py [--check]

A learner working alone is assumed to
- read 150 words of markdown a minute (a technical text read closely; `<details>` blocks
  included, since a careful learner opens most of them);
- spend 1 minute on each code cell: read it, run it, look at what it prints;
- spend 10 minutes on each your-turn cell (write, check, perhaps a hint);
- in an exercise, spend 3 minutes on each multiple-choice or numeric question, 10 on each
  free-text answer and 15 on each code question, beyond reading its text.
Each total is rounded up to 5 minutes. The README's table quotes the two numbers of each
lesson, lesson + exercise; --check fails when they differ from what this computes.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 150
CODE_CELL_MIN = 1
YOUR_TURN_MIN = 10
QUESTION_MIN = {"choice or number": 3, "free text": 10, "code": 15}
ROW = re.compile(r"^\| \[(?P<id>\d\d\w?) [^|]*\|[^|]*\| (?P<time>[^|]*) \|", re.MULTILINE)


def _round_up(minutes: float) -> int:
    return 5 * math.ceil(minutes / 5)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _reading_minutes(cells) -> float:
    words = sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    return words / WORDS_PER_MINUTE


def lesson_minutes(path: Path) -> int:
    cells = _cells(path)
    code = [c for c in cells if c["cell_type"] == "code"]
    turns = [c for c in code if "your-turn" in c.get("metadata", {}).get("tags", [])]
    return _round_up(_reading_minutes(cells) + CODE_CELL_MIN * len(code) + YOUR_TURN_MIN * len(turns))


def question_kind(question) -> str:
    from t5lesson.grading.questions.kinds import Code, FreeText

    return "code" if isinstance(question, Code) else "free text" if isinstance(question, FreeText) \
        else "choice or number"


def exercise_minutes(exercise_id: str) -> int:
    from t5lesson.exercises import get

    work = sum(QUESTION_MIN[question_kind(q)] for q in get(exercise_id).questions)
    return _round_up(_reading_minutes(_cells(ROOT / "exercises" / f"{exercise_id}.ipynb")) + work)


def estimates() -> dict[str, str]:
    """{lesson number: the README's time cell}, e.g. {"07": "70 + 50 min"}."""
    from t5lesson.exercises import exercise_ids

    by_number = {e[:2]: e for e in exercise_ids() if (ROOT / "exercises" / f"{e}.ipynb").exists()}
    out = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        number = path.name.split("_")[0]
        lesson = lesson_minutes(path)
        out[number] = f"{lesson} + {exercise_minutes(by_number[number])} min" if number in by_number \
            else f"{lesson} min"
    return out


def readme_times(text: str) -> dict[str, str]:
    return {m["id"]: m["time"].strip() for m in ROW.finditer(text)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when the README quotes other times")
    args = parser.parse_args()
    computed, quoted = estimates(), readme_times((ROOT / "README.md").read_text())
    for number, time in computed.items():
        mark = "" if quoted.get(number) == time else f"   README says {quoted.get(number)!r}"
        print(f"{number:<4} {time}{mark}")
    if args.check and computed != quoted:
        print("README.md's suggested times differ from the estimate: copy the column above into its table")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
