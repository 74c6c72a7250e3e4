"""Your-turn cells: the learner writes the step that carries a lesson, and the cell checks it at once.

A your-turn cell starts with a comment that names it, holds a stub that raises
`NotImplementedError`, and ends by handing the learner's function to `your_turn`:

    # Your turn (bucket_of): the bucket of one offset, from the log formula.
    def bucket_of(offset):
        raise NotImplementedError("Your turn: write bucket_of")

    bucket_of = your_turn("bucket_of", bucket_of, reference=t5.relative_position_bucket,
                          cases=[(-20,), (-8,), (3,)], hints=["...", "..."])

`your_turn` runs both functions on every case and prints one line:

- not written yet: the cells below use the course's version (and the line says so);
- raised: which exception, at which line of the cell; the course's version is used;
- differs: on which case, what came out and what was expected; the course's version is used;
- matches: the cells below use the learner's function from here on.

It returns the function the cells below should use, so a lesson reads `bucket_of = your_turn(...)`
and then runs on what the learner wrote. `hint("bucket_of")` prints the hints one level at a
time. The answers live in `solutions/your_turn/`, one file per lesson, where a learner looks only
after trying; a test fills every your-turn cell with them and runs each lesson to the end.

This module imports NumPy only (torch values are compared through `.detach()`), so the lessons
that run live in the browser can use it.
"""
from __future__ import annotations

import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["your_turn", "hint", "compare_values", "NOT_WRITTEN", "MATCHES"]

NOT_WRITTEN = "not written yet"
MATCHES = "matches the course's version"
WIDTH = 88  # printed lines fit a 1400 px JupyterLab window without wrapping mid-word
_HINTS: dict[str, list[str]] = {}
_HINTS_SHOWN: dict[str, int] = {}


def hint(name: str) -> None:
    """Print the next hint for the your-turn cell `name` (one more level each time it is run)."""
    hints = _HINTS.get(name)
    if not hints:
        known = ", ".join(sorted(_HINTS)) or "none yet: run the your-turn cell first"
        _say(f"No hints for {name!r}. Your-turn cells with hints: {known}.")
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


def _short(value) -> str:
    array = _as_array(value)
    if array is None:
        return repr(value)[:80]
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
        return f"{label} should be a number or an array, got {type(ours).__name__}"
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
    """A case's argument in a few characters: an array of more than a few entries by its shape."""
    array = _as_array(value)
    if array is not None and array.size > 6:
        return f"a {list(array.shape)} array"
    return _short(value)


def _describe(case) -> str:
    if isinstance(case, dict):
        return ", ".join(f"{k}={_argument(v)}" for k, v in case.items())
    return ", ".join(_argument(v) for v in case)


def _say(*sentences: str) -> None:
    """Print the check's verdict, wrapped to WIDTH, later lines indented."""
    print(textwrap.fill(" ".join(sentences), WIDTH, subsequent_indent="  ", break_on_hyphens=False))
    sys.stdout.flush()


def _call(function, case):
    return function(**case) if isinstance(case, dict) else function(*case)


def _learner_line(exc: BaseException, learner: Callable) -> str:
    """'line N of your cell' for the deepest frame of the learner's cell, or '' when none is in it."""
    filename = getattr(getattr(learner, "__code__", None), "co_filename", None)
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == filename]
    return f" (line {lines[-1]} of your cell)" if lines else ""


def your_turn(name: str, learner: Callable, reference: Callable, cases: Sequence = (), *,
              check: Callable | None = None, tol: float = 1e-6, hints: Sequence[str] = ()) -> Callable:
    """Check the learner's `learner` against the course's `reference`; return the one the cells below use.

    cases: argument tuples (or keyword dicts) that both functions are called with; the results are
        compared with `compare_values` within `tol`.
    check: instead of cases, a function `check(learner, reference)` that returns None when the two
        agree, or a sentence saying where they differ (for a step that needs a setting, such as a
        training step run for a few updates).
    hints: shown one level at a time by `hint(name)`.
    """
    _HINTS[name] = list(hints)
    _HINTS_SHOWN[name] = 0
    hint_note = f' Run hint("{name}") for a hint.' if hints else ""
    course = "The cells below use the course's version"
    try:
        if check is not None:
            problem, count = check(learner, reference), None
        else:
            problem, count = None, len(cases)
            for k, case in enumerate(cases, 1):
                problem = compare_values(_call(learner, case), _call(reference, case), tol)
                if problem:
                    problem = f"case {k} of {len(cases)} ({_describe(case)}): {problem}"
                    break
    except NotImplementedError:
        _say(f"{name}: {NOT_WRITTEN}.", f"{course};", "write yours above and run this cell again to use it.")
        return reference
    except Exception as exc:  # the learner's bug: one clear line, never a traceback wall
        message = str(exc).splitlines()[0][:160] if str(exc) else ""
        _say(f"{name}: your code raised {type(exc).__name__}{_learner_line(exc, learner)}: {message}.",
             f"{course} until yours runs.{hint_note}")
        return reference
    if problem:
        _say(f"{name}: differs from the course's version on {problem}.", f"{course} until yours matches.{hint_note}")
        return reference
    on = f" on {count} cases" if count else ""
    _say(f"{name}: {MATCHES}{on}.", "The cells below use yours.")
    return learner
