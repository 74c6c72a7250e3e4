"""A code question whose answer is a structure: nested lists or arrays of ints, floats, bools, None.

The built-in `Code` kind compares one int per case. Exercises 03 and 04 ask for a boundary
table (a list of (lo, hi) pairs, None for an unused bucket or an open end), a bias tensor
(floats) and a causal mask (bools). `PlainCode` keeps `Code`'s harvesting, blocking, timeouts
and per-case partial credit, and compares the harvested plain value with the reference's
result, structure for structure:

- lists, tuples and arrays are all sequences; a NumPy array compares like the nested lists of
  its `tolist()`;
- None must be None;
- numbers compare within `tolerance` (absolute or relative), so -91.0 is as good as -91;
  bools count as 0 and 1, so a mask may be given as True/False or 1/0;
- with `masked_below` set, an entry where the reference is at or below it (a masked score) is
  right when the learner's entry is at or below it too: -1e9, the most negative float and -inf
  all mean "masked", and no two of them are within any tolerance of each other.

`differences` is the one comparison; exercise 02's `FloatCode` words its findings for arrays.

Only plain data ever reaches `score` (see `t5lesson.grading.harvest`): a learner's object with a
clever `__eq__` arrives as "a FakeInt object" and is wrong.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..bounds import MAX_ITEMS, shape_ok
from ..protocol import resolve
from ..questions import CORRECT, ERROR, INCORRECT, PARTIAL, Case, Code, _describe, _missing

__all__ = ["PlainCode", "differences", "from_plain", "to_python"]

_BAD = object()  # a harvested value that is not plain data


def to_python(value):
    """A reference result as nested lists of int/float/None (arrays and tuples become lists)."""
    if isinstance(value, np.ndarray):
        return to_python(value.tolist())
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None:
        return None
    raise TypeError(f"a reference result must be plain data, got {type(value).__name__}")


def from_plain(value, bools=True):
    """A harvested plain value ({"t": ..., "v": ...}) as nested lists, or _BAD for anything else.

    Bools become 0 and 1, or _BAD with `bools=False` (where only numbers are answers).
    """
    if not isinstance(value, dict):
        return _BAD
    kind, v = value.get("t"), value.get("v")
    if kind == "none":
        return None
    if kind == "bool" and isinstance(v, bool):
        return int(v) if bools else _BAD
    if kind == "int" and type(v) is int:
        return v
    if kind == "float":  # non-finite floats arrive as their repr: "inf", "-inf", "nan"
        if isinstance(v, str):
            return float(v) if v in ("inf", "-inf", "nan") else _BAD
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _BAD
    if kind in ("list", "array") and isinstance(v, list) and len(v) <= MAX_ITEMS:
        shape = value.get("shape")
        if kind == "array" and not shape_ok(shape, len(v)):  # checked before anything is built
            return _BAD
        items = [from_plain(item, bools) for item in v]
        if any(item is _BAD for item in items):
            return _BAD
        if kind == "array":
            if any(isinstance(item, list) for item in items):  # an array's items are numbers
                return _BAD
            flat = np.empty(len(items), dtype=object)
            flat[:] = items
            return flat.reshape(shape).tolist() if shape else items[0]
        return items
    return _BAD


def _shape(x) -> str:
    if isinstance(x, list):
        return f"a list of {len(x)}"
    return "None" if x is None else "a number"


def differences(want, got, close, masked_below=None, where=""):
    """Every place where `got` differs from `want` (nested lists), in order: (where, kind, detail).

    `where` is the indices ("[2][0]", "" for the top). `kind` is "structure" (`detail` says
    what was expected; the parts below are not compared), "masked" (the reference is at or
    below `masked_below`, `got` is not) or "value" (`close(want, got)` is false).
    """
    if want is None and got is None:
        return
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            yield where, "structure", f"expected {len(want)} entries, got {len(got)}"
            return
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            yield from differences(w, g, close, masked_below, f"{where}[{i}]")
    elif want is None or got is None or isinstance(want, list) or isinstance(got, list):
        yield where, "structure", f"expected {_shape(want)}, got {_shape(got)}"
    elif masked_below is not None and want <= masked_below:
        if not got <= masked_below:
            yield where, "masked", ""
    elif not close(want, got):
        yield where, "value", ""


@dataclass(frozen=True)
class PlainCode(Code):
    """A function returning nested lists/arrays of numbers, bools or None, compared structurally."""

    tolerance: float = 1e-6
    masked_below: float | None = None

    def reference_results(self) -> list:
        """The reference's result for every case, as it returns them, computed in this process."""
        function = resolve(self.reference)
        return [function(*c.args, **dict(c.kwargs)) for c in self.cases]

    @cached_property
    def expected(self) -> tuple:
        return tuple(to_python(result) for result in self.reference_results())

    def close(self, want, got) -> bool:
        """Two numbers agree within `tolerance`, absolute or relative to the larger (math.isclose)."""
        return math.isclose(want, got, rel_tol=self.tolerance, abs_tol=self.tolerance)

    def _problem(self, want, got) -> str | None:
        """None if the case is right, else where the first difference is and what it is."""
        value = got.get("ok") if isinstance(got, dict) else None
        plain = from_plain(value)
        if plain is _BAD:
            return f"returned {_describe(value)}, which cannot be compared; return lists, tuples or an array"
        for where, kind, detail in differences(want, plain, self.close, self.masked_below):
            place = where or "the top"
            if kind == "structure":
                return f"at {place}: {detail}"
            if kind == "masked":
                return f"the value at {place} should be masked (at most {self.masked_below:g})"
            return f"the value at {place} is not right"
        return None

    def score(self, record):
        if _missing(record):
            return self.not_attempted()
        if record.get("status") == "not_callable":
            return self.outcome(INCORRECT, 0, f"{self.name} should be a function, but it is "
                                              f"{_describe(record.get('value'))}.")
        results = record.get("cases")
        if record.get("status") != "ran" or not isinstance(results, list) or len(results) != len(self.cases):
            return self.outcome(ERROR, 0, f"the results of {self.name} could not be read back.")
        if all(isinstance(r, dict) and r.get("not_implemented") for r in results):
            return self.not_attempted()
        right, first_miss, first_error = 0, None, None
        for case, want, got in zip(self.cases, self.expected, results, strict=True):
            if isinstance(got, dict) and "ok" in got and self._problem(want, got) is None:
                right += 1
                continue
            if first_error is None and isinstance(got, dict) and ("error" in got or "timeout" in got):
                first_error = (case, want, got)
            if first_miss is None:
                first_miss = (case, want, got)
        total = len(self.cases)
        if right == total:
            return self.outcome(CORRECT, 1, f"all {total} cases right.")
        if right == 0 and first_error is not None and first_error == first_miss:
            return self.outcome(ERROR, 0, self._explain_case(*first_error))
        message = f"{right} of {total} cases right. {self._explain_case(*first_miss)}"
        if first_error is not None and first_error != first_miss:
            message += f" Also: {self._explain_case(*first_error)}"
        return self.outcome(PARTIAL if right else INCORRECT, Fraction(right, total), message)

    def _case_name(self, case: Case) -> str:
        """By its call if the arguments are short, else by number; and its topic."""
        call = case.call_text(self.name)
        name = call if len(call) <= 80 else f"case {self.cases.index(case) + 1}"
        return f"{name} ({case.topic})" if case.topic else name

    def _explain_case(self, case: Case, want, got) -> str:
        """One sentence about a failed case."""
        where = self._case_name(case)
        failure = self._run_failure(where, got)
        if failure is not None:
            return failure
        return f"{where}: {self._problem(want, got)}. Hint: {self.first_hint()}"
