"""Code questions whose answers are structures or floats: `PlainCode` and `FloatCode`.

Both keep `Code`'s harvesting, blocking, timeouts, scoring loop and per-case partial credit, and
override only the per-case check (`expect`, `problem`, `_wrong_case`). `PlainCode` compares the
harvested value with the reference's structure for structure (`differences`, the one comparison);
`FloatCode` words its findings for arrays. The rules (sequences, None, tolerances, bools, masked
entries): docs/grading.md, "Comparing structured answers".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..records import MAX_ITEMS, describe, shape_ok
from .kinds import Case, Code

__all__ = ["PlainCode", "FloatCode", "differences", "from_plain", "plain_numbers", "to_python"]

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


def _from_none(value, v, bools):
    return None


def _from_bool(value, v, bools):
    return (int(v) if bools else _BAD) if isinstance(v, bool) else _BAD


def _from_int(value, v, bools):
    return v if type(v) is int else _BAD


def _from_float(value, v, bools):
    if isinstance(v, str):  # non-finite floats arrive as their repr: "inf", "-inf", "nan"
        return float(v) if v in ("inf", "-inf", "nan") else _BAD
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _BAD


def _items(v, bools):
    """The items of a harvested list, or _BAD if it is too long or any item is not plain data."""
    if not isinstance(v, list) or len(v) > MAX_ITEMS:
        return _BAD
    items = [from_plain(item, bools) for item in v]
    return _BAD if any(item is _BAD for item in items) else items


def _from_list(value, v, bools):
    return _items(v, bools)


def _from_array(value, v, bools):
    """An array's numbers, flat on the wire, in their shape (checked before anything is built)."""
    shape = value.get("shape")
    if not isinstance(v, list) or len(v) > MAX_ITEMS or not shape_ok(shape, len(v)):
        return _BAD
    items = _items(v, bools)
    if not isinstance(items, list) or any(isinstance(item, list) for item in items):  # _BAD, or not numbers
        return _BAD
    flat = np.empty(len(items), dtype=object)
    flat[:] = items
    return flat.reshape(shape).tolist() if shape else items[0]


_FROM_KIND = {"none": _from_none, "bool": _from_bool, "int": _from_int, "float": _from_float,
              "list": _from_list, "array": _from_array}


def from_plain(value, bools=True):
    """A harvested plain value ({"t": ..., "v": ...}) as nested lists, or _BAD for anything else.

    Bools become 0 and 1, or _BAD with `bools=False` (where only numbers are answers).
    """
    if not isinstance(value, dict):
        return _BAD
    kind = value.get("t")
    read = _FROM_KIND.get(kind) if isinstance(kind, str) else None
    return _BAD if read is None else read(value, value.get("v"), bools)


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

    def expect(self, result):
        return to_python(result)

    def close(self, want, got) -> bool:
        """Two numbers agree within `tolerance`, absolute or relative to the larger (math.isclose)."""
        return math.isclose(want, got, rel_tol=self.tolerance, abs_tol=self.tolerance)

    def problem(self, want, got) -> str | None:
        """None if the case is right, else where the first difference is and what it is."""
        value = got.get("ok") if isinstance(got, dict) else None
        plain = from_plain(value)
        if plain is _BAD:
            return f"returned {describe(value)}, which cannot be compared; return lists, tuples or an array"
        for where, kind, detail in differences(want, plain, self.close, self.masked_below):
            place = where or "the top"
            if kind == "structure":
                return f"at {place}: {detail}"
            if kind == "masked":
                return f"the value at {place} should be masked (at most {self.masked_below:g})"
            return f"the value at {place} is not right"
        return None

    def _case_name(self, case: Case) -> str:
        """By its call if the arguments are short, else by number; and its topic."""
        call = case.call_text(self.name)
        name = call if len(call) <= 80 else f"case {self.cases.index(case) + 1}"
        return f"{name} ({case.topic})" if case.topic else name

    def _wrong_case(self, where: str, want, got: dict) -> str:
        return f"{where}: {self.problem(want, got)}."


def _only_numbers(plain) -> bool:
    return all(map(_only_numbers, plain)) if isinstance(plain, list) else isinstance(plain, (int, float))


def plain_numbers(value):
    """A harvested plain value as a float array, or None unless it is numbers (not bools) in a regular shape."""
    plain = from_plain(value, bools=False)
    if not _only_numbers(plain):
        return None
    try:
        return np.array(plain, dtype=float)
    except ValueError:  # ragged lists
        return None


@dataclass(frozen=True)
class FloatCode(PlainCode):
    """A function returning a number or an array of numbers, compared within `tolerance`.

    `PlainCode` with answers that must be numbers in the reference's shape, and messages about
    arrays (shape, nan, how many values are wrong, and the first wrong one with what was expected). With
    `masked_below` (see `PlainCode`), T5's most negative float, Mesh TF's -1e9 and -inf all count.
    """

    def expect(self, result) -> np.ndarray:
        return np.asarray(result, dtype=float)

    def close(self, want, got) -> bool:
        """numpy.isclose(got, want)'s rule: within `tolerance`, absolute or relative to the reference.

        These questions have always been graded by it; `PlainCode`'s symmetric rule differs only
        within twice the tolerance, but a refactor should not change anyone's grade.
        """
        return (abs(got - want) <= self.tolerance + self.tolerance * abs(want) and math.isfinite(want)) or got == want

    def problem(self, want: np.ndarray, got) -> str | None:
        """None if the case is right, else a short description of what is wrong."""
        value = got.get("ok") if isinstance(got, dict) else None
        array = plain_numbers(value)
        if array is None:
            return f"returned {describe(value)}; it should return {'a number' if want.ndim == 0 else 'numbers'}"
        if array.shape != want.shape:
            return f"returned shape {tuple(array.shape)}, the right answer has shape {tuple(want.shape)}"
        found = list(differences(want.tolist(), array.tolist(), self.close, self.masked_below))
        kinds = [kind for _, kind, _ in found]
        if "masked" in kinds:
            return "a position that may not be attended to is not pushed far enough down"
        if np.isnan(array).any():
            return "the result contains nan (is something like 0 * log 0 or inf - inf computed?)"
        if not kinds:
            return None
        where = found[0][0]
        index = tuple(int(i) for i in where.strip("[]").split("][")) if where else ()
        got_text, want_text = (f"{float(a[index]):.6g}" for a in (array, want))
        if not where:
            return f"returned {got_text}, expected {want_text}"
        compared = want.size if self.masked_below is None else int((want > self.masked_below).sum())
        return (f"{len(kinds)} of {compared} values are not right; the first, at {where}, is {got_text}, "
                f"expected {want_text}")

    def _case_name(self, case: Case) -> str:
        """By number and topic: the inputs are long lists."""
        number = self.cases.index(case) + 1
        return f"case {number} ({case.topic})" if case.topic else f"case {number}"
