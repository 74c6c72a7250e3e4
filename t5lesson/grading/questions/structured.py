"""Code questions whose answers are structures or floats: `PlainCode` and `FloatCode`.

Both keep `Code`'s harvesting, blocking, timeouts, scoring and partial credit, and give only the
per-case check (`expect`, `problem`). The rules: docs/grading.md, "Comparing structured answers".
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ..records import MAX_ITEMS, Record, as_dict, describe, shape_ok
from .kinds import Code

_BAD: Any = object()  # a harvested value that is not plain data
Nested = Any  # nested lists of int, float and None (a laid-out answer or reference result)


def to_python(value: object) -> Nested:
    """A reference result as nested lists of int/float/None (arrays and tuples become lists)."""
    if isinstance(value, np.ndarray):
        return to_python(value.tolist())
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in cast("list[object]", value)]
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(cast("int", value))
    if isinstance(value, (float, np.floating)):
        return float(cast("float", value))
    if value is None:
        return None
    raise TypeError(f"a reference result must be plain data, got {type(value).__name__}")


def from_plain(value: object, bools: bool = True) -> Nested:
    """A harvested plain value ({"t": ..., "v": ...}) as nested lists, or _BAD for anything else.

    Bools become 0 and 1, or _BAD with `bools=False` (where only numbers are answers).
    """
    plain = as_dict(value) or {}
    kind, v = plain.get("t"), plain.get("v")
    if kind == "none":
        return None
    if kind == "bool":
        return int(v) if bools and type(v) is bool else _BAD
    if kind == "int":
        return v if type(v) is int else _BAD
    if kind == "float":  # non-finite floats arrive as their repr: "inf", "-inf", "nan"
        ok = v in ("inf", "-inf", "nan") if isinstance(v, str) else type(v) in (int, float)
        return float(plain["v"]) if ok else _BAD
    if kind not in ("list", "array") or not isinstance(v, list) or len(items := cast("list[object]", v)) > MAX_ITEMS:
        return _BAD
    laid = [from_plain(item, bools) for item in items]
    if any(item is _BAD for item in laid):
        return _BAD
    return laid if kind == "list" else _in_shape(laid, plain.get("shape"))


def _in_shape(numbers: list[Nested], shape: object) -> Nested:
    """An array's numbers, flat on the wire, laid out in its shape (checked before anything is built)."""
    if not shape_ok(shape, len(numbers)) or any(isinstance(item, list) for item in numbers):  # not numbers
        return _BAD
    flat: Any = np.empty(len(numbers), dtype=object)  # numpy's stubs leave an object array's reshape unknown
    flat[:] = numbers
    return flat.reshape(shape).tolist() if shape else numbers[0]


def _shape(x: Nested) -> str:
    if isinstance(x, list):
        return f"a list of {len(cast('list[object]', x))}"
    return "None" if x is None else "a number"


def differences(want: Nested, got: Nested, close: Callable[[Any, Any], bool], masked_below: float | None = None,
                where: str = "") -> Iterator[tuple[str, str, str]]:
    """Every place where `got` differs from `want` (nested lists), in order: (where, kind, detail).

    `where` is the indices ("[2][0]", "" for the top). `kind` is "structure" (`detail` says what
    was expected; the parts below are not compared), "masked" (the reference is at or below
    `masked_below`, `got` is not) or "value" (`close(want, got)` is false).
    """
    if want is None and got is None:
        return
    if isinstance(want, list) and isinstance(got, list):
        wants, gots = cast("list[Nested]", want), cast("list[Nested]", got)
        if len(wants) != len(gots):
            yield where, "structure", f"expected {len(wants)} entries, got {len(gots)}"
            return
        for i, (w, g) in enumerate(zip(wants, gots, strict=True)):
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
    calls_named_up_to: ClassVar[int] = 80

    def expect(self, result: Any) -> Any:
        return to_python(result)

    def close(self, want: float, got: float) -> bool:
        """Two numbers agree within `tolerance`, absolute or relative to the larger (math.isclose)."""
        return math.isclose(want, got, rel_tol=self.tolerance, abs_tol=self.tolerance)

    def problem(self, want: Any, got: Record) -> str | None:
        """None if the case is right, else where the first difference is and what it is."""
        value = got.get("ok")
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


def _only_numbers(plain: Nested) -> bool:
    if isinstance(plain, list):
        return all(map(_only_numbers, cast("list[Nested]", plain)))
    return isinstance(plain, (int, float))


def plain_numbers(value: object) -> np.ndarray[Any, np.dtype[np.float64]] | None:
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
    """A function returning a number or an array of numbers, compared within `tolerance`: `PlainCode`
    with answers that must be numbers in the reference's shape, and messages about arrays. With
    `masked_below`, T5's most negative float, Mesh TF's -1e9 and -inf all count as masked."""

    calls_named_up_to: ClassVar[int] = 0  # by number: the inputs are long lists

    def expect(self, result: Any) -> Any:
        return np.asarray(result, dtype=float)

    def close(self, want: float, got: float) -> bool:
        """numpy.isclose(got, want)'s rule, which these questions have always been graded by
        (`PlainCode`'s symmetric rule differs only within twice the tolerance)."""
        return (abs(got - want) <= self.tolerance + self.tolerance * abs(want) and math.isfinite(want)) or got == want

    def problem(self, want: Any, got: Record) -> str | None:
        """None if the case is right, else a short description of what is wrong."""
        value = got.get("ok")
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
