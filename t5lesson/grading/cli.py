"""The instructor's command, `t5grade`: one argparse tree over the engine's stages.

grade a class, merge shards, export to an LMS, build a Gradescope autograder, print the
objective map, hash an answer key, generate exercises/ (`t5grade --help` lists them). The engine
knows no course: `main` is handed the catalogue of exercises (and the objective map) by the
composition root, `t5lesson.grade`. See docs/grading.md, "The three commands".
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from . import skip_uri_grammar
from .errors import GradingError, SettingsError
from .exercise import Catalogue
from .protocol import Limits

__all__ = ["main", "parser", "add_limits", "limits_of"]

PROG = "t5grade"
BUG_LOG = "t5grade-error.log"  # where `main` writes the traceback of a bug in the grader
ISOLATION_HELP = ("auto/full: each kernel in its own namespaces (as root or with unprivileged user namespaces), "
                  "refused with the reason where that is impossible; none: no isolation")


def add_limits(parser: argparse.ArgumentParser, names=None) -> None:
    """One --flag per field of `Limits` (or of those named), its default and help from the field."""
    for f in fields(Limits):
        if names is None or f.name in names:
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default,
                                help=f"{f.metadata.get('help', f.name.replace('_', ' '))} (default: {f.default})")


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(**{f.name: getattr(args, f.name) for f in fields(Limits) if hasattr(args, f.name)})


def _grade(args, catalogue: Catalogue) -> int:
    from .batch import grade_folder
    from .reports.progress import Progress

    if not args.submissions.is_dir():
        print(f"error: {args.submissions} is not a folder", file=sys.stderr)
        return 2
    seed = _seed_of(args)
    start = time.monotonic()
    progress = None if args.quiet else Progress()
    try:
        graded = grade_folder(args.submissions, args.out, catalogue=catalogue, exercise_id=args.exercise,
                              template=args.template, course=args.course, limits=limits_of(args), jobs=args.jobs,
                              isolation=args.isolation, hide=tuple(args.hide), progress=progress, shard=args.shard,
                              seed=seed)
    except Exception:  # the error's line (from `main`) goes below the bar, not after it
        if progress is not None:
            progress.finish()
        raise
    if not args.quiet:
        seconds = time.monotonic() - start
        rate = f" ({len(graded) * 60 / seconds:.1f} per minute)" if graded and seconds > 0 else ""
        print(f"graded {len(graded)} submissions in {seconds:.1f} s{rate}; reports in {args.out} "
              f"(report.html: the class at a glance)", file=sys.stderr)
    return 0


def _seed_of(args) -> str | None:
    """The hidden cases' seed: --seed, else the first line of --seed-file, else None (a new one is drawn)."""
    if args.seed is not None and args.seed_file is not None:
        raise SettingsError("give --seed or --seed-file, not both")
    if args.seed_file is not None:
        seed = args.seed_file.read_text(encoding="utf-8").strip().splitlines()[:1]
        if not seed or not seed[0].strip():
            raise SettingsError(f"{args.seed_file} is empty: write the seed of the hidden cases on its first line")
        return seed[0].strip()
    if args.seed is not None and not args.seed.strip():
        raise SettingsError("--seed must not be empty")
    return None if args.seed is None else args.seed.strip()


def _merge(args, catalogue: Catalogue) -> int:
    from .integrations.shards import merge

    graded = merge(args.reports, args.out, catalogue=catalogue, allow_missing=args.allow_missing)
    print(f"merged {len(graded)} submissions from {len(args.reports)} report folders into {args.out}",
          file=sys.stderr)
    return 0


def _lms(args, catalogue: Catalogue) -> int:
    from .integrations.lms import export
    from .verdict import format_points

    done = export(args.report, args.ids, args.out, catalogue=catalogue, assignment=args.assignment,
                  per_question=args.per_question, canvas_id_column=args.canvas_id_column,
                  moodle_id_column=args.moodle_id_column, allow_unmarked=args.allow_unmarked)
    print(f"exported {done['exported']} students (out of {format_points(done['points_possible'])} points; free "
          f"text: {done['free_text']}) to {args.out}", file=sys.stderr)
    for what, names in (("submissions without an LMS id", done["no_id"]),
                        ("LMS ids without a submission", done["no_submission"])):
        if names:
            print(f"warning: {len(names)} {what} (see unmatched.csv): {', '.join(names[:10])}", file=sys.stderr)
    return 0


def _autograder(args, catalogue: Catalogue) -> int:
    from .integrations.gradescope import build

    limits = limits_of(args)
    names = build(args.exercise, args.out, catalogue=catalogue, limits=limits, visibility=args.visibility,
                  template=args.template, isolation=args.isolation, seed=_seed_of(args))
    print(f"wrote {args.out} ({len(names)} files); upload it as the assignment's autograder (Ubuntu 24.04 base "
          f"image, at least 2 GB of memory; a run takes at most {limits.hard_limit():.0f} s)", file=sys.stderr)
    return 0


def _autograder_run(args, catalogue: Catalogue) -> int:
    from .integrations.gradescope import run

    run(args.root, catalogue)
    return 0


def _hash(args, catalogue: Catalogue) -> int:
    from .questions.kinds import MultipleChoice, Numeric, answer_hash

    questions = [q.id for q in catalogue.get(args.exercise).questions]
    if args.question not in questions:
        raise SettingsError(f"exercise {args.exercise} has no question {args.question!r} (its questions: "
                            f"{', '.join(questions)})")
    if args.tolerance is not None:
        print(Numeric.float_key(args.question, float(args.answer), args.tolerance, args.exercise))
    else:
        answer = args.answer
        canonical = answer if answer.lstrip("-").isdigit() else MultipleChoice.canonical(answer.upper())
        print(answer_hash(args.question, canonical, args.exercise))
    return 0


def _generate(args, catalogue: Catalogue) -> int:
    from .authoring.generate import generate

    return generate(catalogue, course=args.course, solutions=args.solutions, exercises=args.exercises,
                    check=args.check, execute_first=args.execute)


def _add_seed(p: argparse.ArgumentParser, where: str) -> None:
    p.add_argument("--seed", help=f"the secret the hidden cases are drawn from (default: a new one, {where})")
    p.add_argument("--seed-file", type=Path, help="a file whose first line is the seed (keep it from students)")


def _grade_command(sub) -> None:
    from .integrations.shards import parse_shard

    p = sub.add_parser("grade", help="grade a folder of submissions", description="Grade a class of notebooks.")
    p.add_argument("submissions", type=Path, help="folder of submitted notebooks (never modified)")
    p.add_argument("--out", type=Path, required=True, help="folder for the reports")
    p.add_argument("--exercise", help="exercise id (default: read from the notebooks' metadata)")
    p.add_argument("--template", type=Path, help="the exercise notebook handed out (default: exercises/ID.ipynb)")
    p.add_argument("--course", type=Path, help="the course folder with exercises/ and solutions/ (default: the "
                   "repository this package runs from; required after a non-editable install)")
    p.add_argument("--jobs", type=int, default=None, help="submissions run at once (default: one per core)")
    p.add_argument("--isolation", choices=("auto", "full", "none"), default="auto", help=ISOLATION_HELP)
    p.add_argument("--hide", action="append", default=[], help="another folder the kernels must not see")
    _add_seed(p, "recorded in summary.md and grades.json; give it again to regrade with the same cases")
    p.add_argument("--shard", type=parse_shard, metavar="K/N", help="grade only slice K of N of the folder "
                   "(see `merge`)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress (by default: a bar on a terminal, one line per submission otherwise)")
    add_limits(p)
    p.set_defaults(run=_grade)


def _merge_command(sub) -> None:
    p = sub.add_parser("merge", help="merge the report folders of shards",
                       description="Merge the report folders of shards (or of separately graded groups) of one "
                                   "exercise into one report folder.")
    p.add_argument("reports", type=Path, nargs="+", help="report folders written by the grader")
    p.add_argument("--out", type=Path, required=True, help="the merged report folder")
    p.add_argument("--allow-missing", action="store_true",
                   help="merge even if some shards are missing (the report then lacks their students)")
    p.set_defaults(run=_merge)


def _lms_command(sub) -> None:
    from .integrations.lms import CANVAS_IDENTITY

    p = sub.add_parser("lms", help="grades for Canvas and Moodle",
                       description="Export a report folder's grades for Canvas and Moodle, with feedback as "
                                   "Markdown and HTML (see docs/grading.md).")
    p.add_argument("report", type=Path, help="a report folder written by the grader (or by merge)")
    p.add_argument("--ids", type=Path, required=True, help="CSV with columns submission,lms_id[,name,section]")
    p.add_argument("--out", type=Path, required=True, help="folder for canvas.csv, moodle.csv, feedback/")
    p.add_argument("--assignment", help="the assignment's name in the LMS (default: the exercise's title)")
    p.add_argument("--per-question", action="store_true", help="also one column per question")
    p.add_argument("--canvas-id-column", default="SIS User ID", choices=CANVAS_IDENTITY[1:4],
                   help="the Canvas column that receives lms_id (default: SIS User ID)")
    p.add_argument("--moodle-id-column", default="ID number",
                   help="the header of the id column in moodle.csv (default: ID number)")
    p.add_argument("--allow-unmarked", action="store_true",
                   help="export although free_text.csv is marked only in part (blanks count as 0)")
    p.set_defaults(run=_lms)


def _autograder_commands(sub, catalogue: Catalogue) -> None:
    from .integrations.gradescope import DEFAULT_ROOT, ROOT_VARIABLE, VISIBILITY

    p = sub.add_parser("autograder", help="a Gradescope autograder (zip)",
                       description="Build a Gradescope autograder (zip) for one exercise.")
    p.add_argument("exercise", help=f"exercise id ({', '.join(catalogue.exercise_ids())})")
    p.add_argument("--out", type=Path, required=True, help="the zip to write, e.g. autograder.zip")
    p.add_argument("--visibility", choices=VISIBILITY, default="visible",
                   help="when students see each question's result (default: visible)")
    p.add_argument("--template", type=Path, help="the exercise notebook handed out (default: exercises/ID.ipynb)")
    p.add_argument("--isolation", choices=("auto", "full", "none"), default="auto",
                   help="auto: isolate each kernel where the container allows it, else grade with the limits "
                        "only (results.json says which); full: refuse without isolation; none: never isolate")
    _add_seed(p, "kept in the zip's autograder.json")
    add_limits(p, {"cell_timeout", "notebook_timeout", "memory_mb"})
    p.set_defaults(run=_autograder)

    p = sub.add_parser("autograder-run", help="inside Gradescope: what the zip's run_autograder starts")
    p.add_argument("--root", type=Path, default=Path(os.environ.get(ROOT_VARIABLE, DEFAULT_ROOT)))
    p.set_defaults(run=_autograder_run)


def _objectives_command(sub, objectives: Callable[[bool], str]) -> None:
    p = sub.add_parser("objectives", help="which graded questions assess each learning objective",
                       description="The objective map: CSV (objective, exercise, question, points, kind).")
    p.add_argument("--markdown", action="store_true", help="README's syllabus table instead of the CSV")
    p.set_defaults(run=lambda args, _: sys.stdout.write(objectives(args.markdown)) and 0)


def _hash_command(sub, catalogue: Catalogue) -> None:
    p = sub.add_parser("hash", help="the key to store for an answer",
                       description="The salted key of an exact answer (a letter set like AC, or an integer), or "
                                   "with --tolerance of a float answer.")
    p.add_argument("question")
    p.add_argument("answer")
    p.add_argument("--tolerance", type=float, help="a float answer within this tolerance")
    p.add_argument("--exercise", required=True, choices=catalogue.exercise_ids(), metavar="ID",
                   help=f"the exercise whose keys are salted with its id ({', '.join(catalogue.exercise_ids())})")
    p.set_defaults(run=_hash)


def _generate_command(sub) -> None:
    p = sub.add_parser("generate", help="exercises/ from solutions/",
                       description="Make exercises/ from solutions/ (every file there is a function of one "
                                   "solution notebook).")
    p.add_argument("--course", type=Path, help="the course folder (default: the repository this package runs from)")
    p.add_argument("--solutions", type=Path, help="default: COURSE/solutions")
    p.add_argument("--exercises", type=Path, help="default: COURSE/exercises")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if exercises/ is stale")
    p.add_argument("--execute", action="store_true", help="re-run the solution notebooks in place first")
    p.set_defaults(run=_generate)


def parser(catalogue: Catalogue, objectives: Callable[[bool], str] | None = None) -> argparse.ArgumentParser:
    """`t5grade`'s argparse tree: one subcommand each, in the order `--help` lists them."""
    top = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _grade_command(sub)
    _merge_command(sub)
    _lms_command(sub)
    _autograder_commands(sub, catalogue)
    if objectives is not None:
        _objectives_command(sub, objectives)
    _hash_command(sub, catalogue)
    _generate_command(sub)
    return top


def main(argv: list[str] | None = None, *, catalogue: Catalogue,
         objectives: Callable[[bool], str] | None = None) -> int:
    """Run one `t5grade` command. What the grader expects to go wrong (`GradingError`: a setting, a
    folder, a file; or the machine refusing a file or isolation) prints one line: exit 1 when some
    reports could not be written (`ReportError`), 2 otherwise. Anything else is a bug in the grader:
    one line names the log file that holds its traceback (`BUG_LOG`), exit 3."""
    skip_uri_grammar()  # before nbformat loads (lazily, in the commands)
    args = parser(catalogue, objectives).parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return args.run(args, catalogue)
    except _expected() as exc:  # the one error boundary of the command
        from .reports.store import ReportError

        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, ReportError) else 2
    except Exception as exc:
        log = _write_bug_log(args)
        where = f"the traceback is in {log}" if log else "the traceback follows"
        detail = " ".join(str(exc).split())[:300]  # one line, whatever the message holds
        print(f"error: a bug in t5grade ({type(exc).__name__}: {detail}); {where}. Please report it with that file.",
              file=sys.stderr)
        if log is None:
            traceback.print_exc()
        return 3


def _expected() -> tuple[type[BaseException], ...]:
    """The failures that `main` reports in one line: the engine's own and the machine's (a file, a disk)."""
    from .sandbox.walls import IsolationUnavailable

    return (GradingError, IsolationUnavailable, OSError)


def _write_bug_log(args: argparse.Namespace) -> Path | None:
    """Write the current exception's traceback to `BUG_LOG` in the command's output folder when it
    has one, else to a new temporary file; return where (None when nothing could be written)."""
    text = f"t5grade {getattr(args, 'command', '')}\n{traceback.format_exc()}"
    out = getattr(args, "out", None)
    if isinstance(out, Path) and out.is_dir():
        try:
            (out / BUG_LOG).write_text(text, encoding="utf-8")
            return (out / BUG_LOG).resolve()
        except OSError:
            pass
    try:
        fd, name = tempfile.mkstemp(prefix="t5grade-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(name)
    except OSError:
        return None
