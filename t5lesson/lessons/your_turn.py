"""Your-turn cells: the learner writes the step that carries a lesson, and the cell checks it at once.

A your-turn cell starts with a comment that names it, holds a stub that raises
`NotImplementedError`, and ends with one checking call:

    # Your turn (bucket_of): the bucket of one offset, from the log formula.
    def bucket_of(offset, bidirectional=True, num_buckets=32, max_distance=128):
        raise NotImplementedError("Your turn: write bucket_of")

    bucket_of = your_turn("bucket_of", bucket_of)

Everything else lives in the package, beside the lesson's own code: a `Turn` names the course's
version, the cases (or a check function) and the hints, and `TURNS` below says which module holds
each one. The cell shows neither the course's version nor the hints, so nothing in it gives the
answer away. `your_turn` runs both functions on every case and prints one line:

- not written yet: the cells below use the course's version (and the line says so);
- raised: which exception, at which line of the cell, on which case; the course's version is used;
- differs: on which case, what came out and what was expected; the course's version is used;
- calls the course's version: the learner's function only hands the work to the course's; not
  accepted, since the step is the learner's to write;
- matches: the cells below use the learner's function from here on.

It returns the function the cells below should use, so a lesson reads `bucket_of = your_turn(...)`
and then runs on what the learner wrote. `hint("bucket_of")` prints the hints one level at a time:
the first asks a question, code comes only at the last. The answers live in
`solutions/your_turn/`, one file per lesson, where a learner looks only after trying.

This module imports NumPy only (torch values are compared through `.detach()`, a lesson's `Turn` is
imported when its cell runs), so the lessons that run live in the browser can use it.
"""
from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["your_turn", "hint", "compare_values", "Turn", "case", "turn", "NOT_WRITTEN", "MATCHES",
           "CALLS_COURSE"]

NOT_WRITTEN = "not written yet"
MATCHES = "matches the course's version"
CALLS_COURSE = "calls the course's version"
WIDTH = 88  # printed lines fit a 1400 px JupyterLab window without wrapping mid-word

# Which module defines each your-turn cell's Turn (in a dict named TURNS). Imported only when the
# cell runs, so a browser lesson never imports another lesson's torch code.
TURNS = {
    "weight_of_b": "t5lesson.lessons.start_here",
    "row_jacobians": "t5lesson.lessons.dot_products",
    "train_step": "t5lesson.lessons.folding",
    "bucket_of": "t5lesson.lessons.bucket_steps",
    "bias_from_table": "t5lesson.lessons.toy_heads",
    "pairs_behind": "t5lesson.lengthgen.counts",
    "training_step": "t5lesson.lengthgen.step_check",
    "compute_bias": "t5lesson.lessons.layer_build",
    "attend": "t5lesson.lessons.layer_build",
    "block_forward": "t5lesson.lessons.tiny_t5_checks",
    "greedy": "t5lesson.lessons.tiny_t5_checks",
    "flex_attend": "t5lesson.lessons.flex_turns",
}


@dataclass(frozen=True)
class Turn:
    """What one your-turn cell is checked with.

    reference: the course's version; the cells below use it until the learner's matches.
    cases: a function returning the argument tuples (or keyword dicts) both versions are called
        with, compared by `compare_values` within `tol` (a function, so a case that needs a trained
        module is built only when the cell runs).
    check: instead of cases, `check(learner, reference)` returning None when they agree, or a
        sentence saying where they differ (for a step that needs a setting, such as a training
        step run for a few updates); it names what it is running with `case(...)`.
    hints: level 1 a question or a concept with no code; code only at the last level.
    course_versions: other course functions that do the whole step; a learner's function that
        calls one of them (or the reference) is told so instead of "matches".
    """

    reference: Callable
    cases: Callable[[], Sequence] | None = None
    check: Callable | None = None
    hints: tuple[str, ...] = ()
    tol: float = 1e-6
    course_versions: tuple[Callable, ...] = ()


def turn(name: str) -> Turn:
    """The Turn of the your-turn cell `name` (KeyError with the known names for an unknown one)."""
    if name not in TURNS:
        raise KeyError(f"{name!r} is not a your-turn cell; the cells are {', '.join(sorted(TURNS))}")
    return importlib.import_module(TURNS[name]).TURNS[name]


_HINTS: dict[str, list[str]] = {}
_HINTS_SHOWN: dict[str, int] = {}
_RAISED_ON: list[str] = []  # the innermost case an error left, for "your code raised ... on <case>"


@contextlib.contextmanager
def case(label: str):
    """Name what a check function runs the learner's code on, so an error in it can say which case."""
    try:
        yield
    except Exception:
        if not _RAISED_ON:
            _RAISED_ON.append(label)
        raise


def hint(name: str) -> None:
    """Print the next hint for the your-turn cell `name` (one more level each time it is run)."""
    hints = _HINTS.get(name)
    if hints is None and name in TURNS:
        hints = list(turn(name).hints)
        _HINTS[name] = hints
    if not hints:
        cells = ", ".join(sorted(name for name in _HINTS if _HINTS[name])) or "none yet"
        _say(f"No hints for {name!r}: hint() takes the name in a your-turn cell's first line, such as "
             f"hint(\"bucket_of\") (the cells run so far with hints: {cells}).")
        return
    level = min(_HINTS_SHOWN.get(name, 0), len(hints) - 1)
    _HINTS_SHOWN[name] = level + 1
    _say(f"{name}, hint {level + 1} of {len(hints)}: {hints[level]}")


def _as_array(value):
    """A NumPy view of a number, array or torch tensor (anything with `.detach()`), or None."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, (bool, int, float, np.number, np.ndarray, np.bool_)):
        return np.asarray(value)
    return None


def _kind(value) -> str:
    """What a value is, in the words a lesson uses: a tensor, an array, a number, a tuple, ..."""
    if hasattr(value, "detach"):
        return "a tensor"
    if isinstance(value, np.ndarray):
        return "an array"
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    if isinstance(value, (int, float, np.number)):
        return "a number"
    return f"a {type(value).__name__}"


def _is_module(value) -> bool:
    """A torch `nn.Module`, known by its class's ancestry (this file imports no torch)."""
    return any(c.__name__ == "Module" and c.__module__.startswith("torch.nn") for c in type(value).__mro__)


def _short(value) -> str:
    array = _as_array(value)
    if array is None:
        plain = type(value).__repr__ is object.__repr__ or _is_module(value) or len(repr(value)) > 60
        return _kind(value) if plain else repr(value)
    if array.ndim == 0 and np.issubdtype(array.dtype, np.floating):
        return f"{float(array):.6g}"  # 1.0 as 1, not "1." (which reads as the end of a sentence)
    return np.array2string(array, precision=4, threshold=12, edgeitems=3, max_line_width=10**6)


def compare_values(ours, theirs, tol: float = 1e-6, where: str = "") -> str | None:
    """None when `ours` equals `theirs` (numbers and arrays within `tol`), else one sentence on where not."""
    if isinstance(theirs, (tuple, list)):
        if not isinstance(ours, (tuple, list)) or len(ours) != len(theirs):
            return f"{where or 'the result'} should be a sequence of {len(theirs)} values, got {_short(ours)}"
        for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            problem = compare_values(a, b, tol, f"{where}[{k}]" if where else f"item {k}")
            if problem:
                return problem
        return None
    a, b = _as_array(ours), _as_array(theirs)
    if b is None:
        return None if ours == theirs else f"{where or 'the result'} is {_short(ours)}, expected {_short(theirs)}"
    label = where or "the result"
    if a is None:
        return f"{label} should be {_kind(theirs)}, got {_kind(ours)}"
    if a.shape != b.shape:
        return f"{label} has shape {a.shape}, expected {b.shape}"
    if b.dtype == bool or np.issubdtype(b.dtype, np.integer):
        wrong = a != b
    else:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        wrong = ~(np.abs(a64 - b64) <= tol) & ~(np.isinf(a64) & (a64 == b64))
    if not wrong.any():
        return None
    if a.ndim == 0:
        return f"{label} is {_short(a)}, expected {_short(b)}"
    index = tuple(int(i) for i in np.argwhere(wrong)[0])
    return f"{label} differs at index {list(index)}: {_short(a[index])}, expected {_short(b[index])}"


def _argument(value) -> str:
    """A case's argument in a few characters: an array or tensor of more than a few entries by its shape."""
    array = _as_array(value)
    if array is not None and array.size > 6:
        return f"{_kind(value)} of shape {list(array.shape)}"
    return _short(value)


def _describe(case) -> str:
    if isinstance(case, dict):
        return ", ".join(f"{k}={_argument(v)}" for k, v in case.items())
    return ", ".join(_argument(v) for v in case)


def _say(*sentences: str) -> None:
    """Print the check's verdict, wrapped to WIDTH between words, later lines indented."""
    print(textwrap.fill(" ".join(sentences), WIDTH, subsequent_indent="  ", break_on_hyphens=False,
                        break_long_words=False))
    sys.stdout.flush()


def _call(function, case):
    return function(**case) if isinstance(case, dict) else function(*case)


def _learner_line(exc: BaseException, learner: Callable) -> str:
    """'line N of your cell' for the deepest frame of the learner's cell, or '' when none is in it."""
    filename = getattr(getattr(learner, "__code__", None), "co_filename", None)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == filename]
    return f" (line {lines[-1]} of your cell)" if lines else ""


def _code_of(function):
    function = inspect.unwrap(getattr(function, "__func__", function))
    return getattr(function, "__code__", None)


class _CourseCalls:
    """Watches for a call of one of the course's versions made from the learner's cell.

    A profile hook sees every Python call while the check runs; a call of a course version counts
    only when a frame of the learner's cell is on the stack between it and the check (the check
    itself calls the reference for the expected results, from the cell's own last line). Catches
    the course's function under any name it was imported as, since it compares code objects.
    """

    def __init__(self, learner: Callable, course: Sequence[Callable]):
        self.learner_file = getattr(_code_of(learner), "co_filename", None)
        self.codes = {code: getattr(f, "__qualname__", "the course's function")
                      for f in course if (code := _code_of(f)) is not None}
        self.called: str | None = None

    def _hook(self, frame, event, arg):
        if event != "call" or self.called or frame.f_code not in self.codes:
            return
        outer = frame.f_back
        while outer is not None and outer.f_code is not _first_problem.__code__:
            if outer.f_code.co_filename == self.learner_file:
                self.called = self.codes[frame.f_code]
                return
            outer = outer.f_back

    @contextlib.contextmanager
    def watching(self):
        if self.learner_file is None or not self.codes:
            yield self
            return
        previous = sys.getprofile()
        sys.setprofile(self._hook)
        try:
            yield self
        finally:
            sys.setprofile(previous)


def _first_problem(learner: Callable, spec: Turn) -> tuple[str | None, int | None]:
    """Run the check: (None, number of cases) when the learner's version agrees, else (where not, None)."""
    if spec.check is not None:
        return spec.check(learner, spec.reference), None
    cases = spec.cases() if spec.cases is not None else ()
    for k, one in enumerate(cases, 1):
        # The course's version runs on a copy, first: a learner's function that changes its
        # arguments in place can then neither hand the course's version its slip nor see its result.
        want = _call(spec.reference, copy.deepcopy(one))
        with case(f"case {k} of {len(cases)} ({_describe(one)})"):
            problem = compare_values(_call(learner, one), want, spec.tol)
        if problem:
            return f"case {k} of {len(cases)} ({_describe(one)}): {problem}", None
    return None, len(cases)


def your_turn(name: str, learner: Callable, reference: Callable | None = None, cases: Sequence = (), *,
              check: Callable | None = None, tol: float = 1e-6, hints: Sequence[str] = ()) -> Callable:
    """Check the learner's `learner` against the course's version; return the one the cells below use.

    With only a name, the check is the Turn registered for it (`TURNS`); a test or a new lesson
    may give `reference` with `cases` or `check` (and `hints`) instead.
    """
    if reference is None:
        spec = turn(name)
    else:
        spec = Turn(reference, (lambda: list(cases)), check, tuple(hints), tol)
    _HINTS[name] = list(spec.hints)
    _HINTS_SHOWN[name] = 0
    hint_note = f' Run hint("{name}") for a hint.' if spec.hints else ""
    course = "The cells below use the course's version"
    watch = _CourseCalls(learner, (spec.reference, *spec.course_versions))
    del _RAISED_ON[:]
    try:
        with watch.watching():
            problem, count = _first_problem(learner, spec)
    except NotImplementedError:
        _say(f"{name}: {NOT_WRITTEN}.", f"{course};", "write yours above and run this cell again to use it.")
        return spec.reference
    except Exception as exc:  # the learner's bug: one clear line, never a traceback wall
        message = str(exc).splitlines()[0][:160] if str(exc) else ""
        where = f" on {_RAISED_ON[0]}" if _RAISED_ON else ""
        _say(f"{name}: your code raised {type(exc).__name__}{_learner_line(exc, learner)}{where}: {message}.",
             f"{course} until yours runs.{hint_note}")
        return spec.reference
    if watch.called:
        _say(f"{name}: {CALLS_COURSE} ({watch.called}) instead of doing the step itself.",
             f"{course}; write the step in your own code to use yours.{hint_note}")
        return spec.reference
    if problem:
        _say(f"{name}: differs from the course's version on {problem}.", f"{course} until yours matches.{hint_note}")
        return spec.reference
    on = f" on {count} cases" if count else ""
    _say(f"{name}: {MATCHES}{on}.", "The cells below use yours.")
    return learner
