"""Make exercises/ from solutions/: `t5grade generate [--check]`.

Every file in exercises/ is a function of one file in solutions/ (`authoring.notebook_format`);
`--check` writes nothing and fails on a stale or orphan file (CI runs it). See docs/grading.md,
"Adding an exercise notebook".
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..course import course_root
from ..exercise import Catalogue
from .notebook_format import SourceError, exercise_id_of, make_exercise, read, writes


def build(solution: Path, catalogue: Catalogue) -> str:
    """The text of the exercise notebook generated from one solution notebook."""
    nb = read(solution)
    exercise_id = exercise_id_of(nb)
    if exercise_id is None:
        raise SourceError(f"{solution}: metadata.t5lesson.exercise is missing")
    if solution.stem != exercise_id:
        raise SourceError(f"{solution}: the file of exercise {exercise_id!r} must be named {exercise_id}.ipynb")
    return writes(make_exercise(nb, catalogue.get(exercise_id), where=solution.name))


def generate(catalogue: Catalogue, *, course: Path | None = None, check: bool = False) -> int:
    """Write exercises/ from solutions/ (or, with check, only say what is stale); 0 when all agree."""
    root = course_root(course)  # a CourseError says what to pass
    solutions, exercises = root / "solutions", root / "exercises"
    sources = sorted(solutions.glob("[0-9]*.ipynb"))
    if not sources:
        print(f"no solution notebooks in {solutions}", file=sys.stderr)
        return 1
    problems: list[str] = []
    for solution in sources:
        target = exercises / solution.name
        try:
            text = build(solution, catalogue)
        except (SourceError, KeyError) as exc:
            problems.append(str(exc))
            continue
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        if check:
            problems.append(f"{target} is {'missing' if current is None else 'stale'}")
        else:
            exercises.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target}")
    names = {s.name for s in sources}
    problems += [f"{p} has no source in {solutions}" for p in sorted(exercises.glob("*.ipynb")) if p.name not in names]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems and check:
        print("run `t5grade generate` and commit exercises/", file=sys.stderr)
    return 1 if problems else 0
