"""The instructor's command, `t5grade`: one argparse tree over the engine's stages.

Grade a class, export its grades to an LMS, print the objective map, hash an answer key, generate
exercises/ (`t5grade --help` lists them). The engine knows no course: `main` is handed the catalogue
of exercises (and the objective map) by the composition root, `t5lesson.grade`. See docs/grading.md.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import cast

from . import skip_uri_grammar
from .errors import GradingError, SettingsError
from .exercise import Catalogue
from .protocol import Limits

PROG = "t5grade"
BUG_LOG = "t5grade-error.log"  # where `main` writes the traceback of a bug in the grader
ISOLATION = ("auto", "full", "none")
Command = Callable[[argparse.Namespace, Catalogue], int]


def add_limits(parser: argparse.ArgumentParser) -> None:
    """One --flag per field of `Limits`, its default and help from the field."""
    for f in fields(Limits):
        default = cast("int | float", f.default)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(default), default=default,
                            help=f"{f.metadata['help']} (default: {default})")


def _seed_of(args: argparse.Namespace) -> str | None:
    """The hidden cases' seed: --seed, else the first line of --seed-file, else None (a new one is drawn)."""
    seed: str | None = args.seed
    if seed is not None and args.seed_file is not None:
        raise SettingsError("give --seed or --seed-file, not both")
    if args.seed_file is not None:
        seed = args.seed_file.read_text(encoding="utf-8").strip().partition("\n")[0]
    if seed is not None and not seed.strip():
        raise SettingsError("the seed is empty: give the secret the hidden cases are drawn from")
    return None if seed is None else seed.strip()


def _grade(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from .batch import grade_folder
    from .reports.progress import Progress

    if not args.submissions.is_dir():
        raise SettingsError(f"{args.submissions} is not a folder")
    start = time.monotonic()
    limits = Limits(**{f.name: getattr(args, f.name) for f in fields(Limits)})
    progress = None if args.quiet else Progress()
    try:
        graded = grade_folder(args.submissions, args.out, catalogue=catalogue, exercise_id=args.exercise,
                              template=args.template, course=args.course, limits=limits, jobs=args.jobs,
                              isolation=args.isolation, hide=tuple(args.hide), progress=progress, seed=_seed_of(args))
    except Exception:  # the error's line (from `main`) goes below the bar, not after it
        if progress is not None:
            progress.finish()
        raise
    if not args.quiet:
        seconds = time.monotonic() - start
        rate = f" ({len(graded) * 60 / seconds:.1f} per minute)" if graded and seconds > 0 else ""
        print(f"graded {len(graded)} submissions in {seconds:.1f} s{rate}; reports in {args.out}", file=sys.stderr)
    return 0


def _lms(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from .integrations.lms import export

    done = export(args.report, args.ids, args.out, catalogue=catalogue, assignment=args.assignment,
                  canvas_id_column=args.canvas_id_column, moodle_id_column=args.moodle_id_column,
                  allow_unmarked=args.allow_unmarked)
    print(f"exported {done['exported']} students (free text: {done['free_text']}) to {args.out}", file=sys.stderr)
    for what, names in (("submissions without an LMS id", done["no_id"]),
                        ("LMS ids without a submission", done["no_submission"])):
        if names:
            print(f"warning: {len(names)} {what} (see unmatched.csv): {', '.join(names[:10])}", file=sys.stderr)
    return 0


def _hash(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from .questions.kinds import MultipleChoice, Numeric, answer_hash

    questions = [q.id for q in catalogue.get(args.exercise).questions]
    if args.question not in questions:
        raise SettingsError(f"exercise {args.exercise} has no question {args.question!r} (its questions: "
                            f"{', '.join(questions)})")
    answer: str = args.answer
    if args.tolerance is not None:
        print(Numeric.float_key(args.question, float(answer), args.tolerance, args.exercise))
    else:
        canonical = answer if answer.lstrip("-").isdigit() else MultipleChoice.canonical(answer.upper())
        print(answer_hash(args.question, canonical, args.exercise))
    return 0


def _generate(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from .authoring.generate import generate

    return generate(catalogue, course=args.course, check=args.check)


def _grade_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submissions", type=Path, help="folder of submitted notebooks (never modified)")
    p.add_argument("--out", type=Path, required=True, help="folder for the reports")
    p.add_argument("--exercise", help="exercise id (default: read from the notebooks' metadata)")
    p.add_argument("--template", type=Path, help="the exercise notebook handed out (default: exercises/ID.ipynb)")
    p.add_argument("--course", type=Path, help="the folder with exercises/ and solutions/ (default: this checkout)")
    p.add_argument("--jobs", type=int, help="submissions run at once (default: one per core)")
    p.add_argument("--hide", action="append", default=[], help="another folder the kernels must not see")
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines")
    p.add_argument("--isolation", choices=ISOLATION, default="auto",
                   help="auto/full: each kernel in its own namespaces, or a refusal saying why; none: no isolation")
    p.add_argument("--seed", help="the secret the hidden cases are drawn from (default: a new one, recorded in "
                                  "summary.md and grades.json; give it again to regrade with the same cases)")
    p.add_argument("--seed-file", type=Path, help="a file whose first line is the seed (keep it from students)")
    add_limits(p)


def _lms_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", type=Path, help="a report folder written by the grader")
    p.add_argument("--ids", type=Path, required=True, help="CSV with columns submission,lms_id[,name,section]")
    p.add_argument("--out", type=Path, required=True, help="folder for canvas.csv, moodle.csv, feedback/")
    p.add_argument("--assignment", help="the assignment's name in the LMS (default: the exercise's title)")
    p.add_argument("--canvas-id-column", default="SIS User ID", help="the Canvas column that receives lms_id")
    p.add_argument("--moodle-id-column", default="ID number", help="the header of moodle.csv's id column")
    p.add_argument("--allow-unmarked", action="store_true", help="export although free_text.csv has blanks (0)")


def parser(catalogue: Catalogue, objectives: Callable[[bool], str] | None = None) -> argparse.ArgumentParser:
    """`t5grade`'s argparse tree: one subcommand each, in the order `--help` lists them."""
    top = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ids = catalogue.exercise_ids()

    def command(name: str, help: str, run: Command) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        p.set_defaults(run=run)
        return p

    _grade_arguments(command("grade", "grade a folder of submissions", _grade))
    _lms_arguments(command("lms", "a report folder's grades and feedback for Canvas and Moodle", _lms))
    if objectives is not None:
        show = objectives
        p = command("objectives", "which graded questions assess each learning objective (CSV)",
                    lambda args, _: print(show(args.markdown), end="") or 0)
        p.add_argument("--markdown", action="store_true", help="README's syllabus table instead of the CSV")
    p = command("hash", "the salted key of an exact answer (letters like AC, or an integer)", _hash)
    p.add_argument("question")
    p.add_argument("answer")
    p.add_argument("--tolerance", type=float, help="the key of a float answer within this tolerance")
    p.add_argument("--exercise", required=True, choices=ids, metavar="ID", help=f"its exercise ({', '.join(ids)})")
    p = command("generate", "make exercises/ from solutions/", _generate)
    p.add_argument("--course", type=Path, help="the folder with exercises/ and solutions/ (default: this checkout)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if exercises/ is stale")
    return top


def main(argv: list[str] | None = None, *, catalogue: Catalogue,
         objectives: Callable[[bool], str] | None = None) -> int:
    """Run one `t5grade` command. An expected failure (`GradingError`, the machine refusing a file or
    isolation) is one line: exit 1 when some reports could not be written, else 2. Anything else is
    a bug: one line names the log with its traceback (`BUG_LOG`), exit 3."""
    skip_uri_grammar()  # before nbformat loads (lazily, in the commands)
    args = parser(catalogue, objectives).parse_args(sys.argv[1:] if argv is None else list(argv))
    run: Command = args.run
    try:
        return run(args, catalogue)
    except Exception as exc:  # the one error boundary of the command
        from .reports.store import ReportError
        from .sandbox.walls import IsolationUnavailable

        if isinstance(exc, (GradingError, IsolationUnavailable, OSError)):
            print(f"error: {exc}", file=sys.stderr)
            return 1 if isinstance(exc, ReportError) else 2
        detail = " ".join(str(exc).split())[:300]  # one line, whatever the message holds
        print(f"error: a bug in t5grade ({type(exc).__name__}: {detail}); the traceback is in {_bug_log(args)}. "
              "Please report it with that file.", file=sys.stderr)
        return 3


def _bug_log(args: argparse.Namespace) -> Path:
    """Write the current exception's traceback to `BUG_LOG` in the command's output folder when it has
    one, else to a new temporary file; return where."""
    text = f"t5grade {args.command}\n{traceback.format_exc()}"
    out = getattr(args, "out", None)
    if isinstance(out, Path) and out.is_dir():
        try:
            (out / BUG_LOG).write_text(text, encoding="utf-8")
            return (out / BUG_LOG).resolve()
        except OSError:
            pass
    with tempfile.NamedTemporaryFile("w", prefix="t5grade-error-", suffix=".log", delete=False) as f:
        f.write(text)
    return Path(f.name)
