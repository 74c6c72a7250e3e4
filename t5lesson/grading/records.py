"""Bounds on everything the grader reads from outside its own process, checked before use.

A submitted notebook and every record a student's kernel prints are data an attacker wrote.
Before the grader builds anything from them (nbformat cells, nested lists, NumPy arrays) or
does arithmetic on them, they pass through here:

- `loads`: JSON text of a bounded size, nested at most `max_depth` deep, with at most
  `max_nodes` values in all, and (unless `constants=True`) without JSON's non-standard
  `NaN`/`Infinity` literals. Anything else raises `BoundsError` (a ValueError), never
  RecursionError or MemoryError;
- `plain_int`, `plain_float`: an int within +-10**18 and a float that is finite;
- `shape_ok`: an array shape that is small, non-negative and matches the items sent, and whose
  nested-list form (what `tolist()` would build) has a bounded number of lists.

The limits are generous for every honest answer (the largest reference result has a few
hundred numbers, the deepest notebook metadata a dozen levels).
"""
from __future__ import annotations

import json
import math

__all__ = ["BoundsError", "MAX_INT", "MAX_ITEMS", "MAX_DIMS", "MAX_LISTS", "MAX_TEXT", "MAX_PLAIN_DEPTH",
           "MAX_VALUES", "MAX_CASES", "loads", "depth_and_size",
           "plain_int", "plain_float", "shape_ok"]

MAX_INT = 10 ** 18  # the harvest reports ints beyond this as "huge int"
MAX_ITEMS = 1000  # items of one harvested list or array (harvest.MAX_ITEMS)
MAX_DIMS = 8  # dimensions of a harvested array
MAX_LISTS = 10_000  # lists built when an array is laid out as nested lists
MAX_TEXT = 5000  # characters of one harvested string (harvest.MAX_TEXT)
MAX_PLAIN_DEPTH = 6  # nesting of one harvested plain value (the harvest's own nest 5 levels at most)
MAX_VALUES = 200_000  # plain values in one harvested record, all its cases together
MAX_CASES = 10_000  # cases of one code question's record


class BoundsError(ValueError):
    """Data from outside the grader is too deep, too large, or not plain finite JSON."""


def _no_constants(name: str):
    raise BoundsError(f"JSON constant {name} is not allowed here")


def depth_and_size(value, max_depth: int, max_nodes: int) -> None:
    """Raise BoundsError unless `value` (parsed JSON) is at most `max_depth` deep with `max_nodes` values.

    Iterative, so a hostile structure cannot exhaust the stack of the thread checking it.
    """
    stack = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise BoundsError(f"more than {max_nodes} values")
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise BoundsError(f"nested more than {max_depth} levels deep")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def loads(text, *, max_depth: int, max_nodes: int = 1_000_000, max_chars: int | None = None,
          constants: bool = False):
    """Parse JSON text within bounds (see module doc); raise BoundsError for anything outside them."""
    if max_chars is not None and len(text) > max_chars:
        raise BoundsError(f"longer than {max_chars} characters")
    try:
        value = json.loads(text, parse_constant=None if constants else _no_constants)
    except RecursionError:
        raise BoundsError("nested too deeply to read") from None
    except MemoryError:
        raise BoundsError("too large to read") from None
    depth_and_size(value, max_depth, max_nodes)
    return value


def plain_int(v) -> bool:
    """A genuine int (not a bool or subclass) within +-MAX_INT."""
    return type(v) is int and -MAX_INT < v < MAX_INT


def plain_float(v) -> bool:
    """A genuine finite float."""
    return type(v) is float and math.isfinite(v)


def shape_ok(shape, items: int) -> bool:
    """True for a list of at most MAX_DIMS ints in [0, MAX_ITEMS] holding exactly `items` entries,
    whose nested-list layout needs at most MAX_LISTS lists ([] is a scalar: one item)."""
    if not isinstance(shape, list) or len(shape) > MAX_DIMS:
        return False
    if not all(type(n) is int and 0 <= n <= MAX_ITEMS for n in shape):
        return False
    lists, prefix = 0, 1
    for n in shape[:-1]:
        prefix *= n
        lists += prefix
        if lists > MAX_LISTS:
            return False
    return math.prod(shape) == items
