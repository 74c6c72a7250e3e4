"""Bounds on everything the grader reads from outside its own process, checked before use.

A submitted notebook and every record a student's kernel prints are data an attacker wrote. Before
the grader builds anything from them they pass through here: `loads` (JSON of a bounded size, depth
and count, without NaN/Infinity unless asked), `shape_ok`, and `clean_record`/`clean_plain`, which
turn a harvested record into one that can only ever read as an answer (right or wrong), never as
anything the scorer could trip on. See docs/grading.md, "What the grader guarantees".
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, cast

from .errors import GradingError
from .harvest import MAX_INT, MAX_ITEMS, to_plain

# A tagged plain value ({"t": "int", "v": 3}) and one question's record, as JSON gives them: their
# fields are checked where they are read, so their values are typed as JSON's (Any).
Plain = dict[str, Any]
Record = dict[str, Any]

MAX_DIMS = 8  # dimensions of a harvested array
MAX_LISTS = 10_000  # lists built when an array is laid out as nested lists
MAX_PLAIN_DEPTH = 6  # nesting of one harvested plain value (the harvest's own nest 5 levels at most)
MAX_VALUES = 200_000  # plain values in one harvested record, all its cases together
MAX_CASES = 10_000  # cases of one code question's record
BLOCKED_TARGET = re.compile(r"[A-Za-z0-9_.:*]{1,200}")  # "module:Class.function", as the harvest names one
UNREADABLE: Plain = {"t": "other", "type": "unreadable"}


class BoundsError(GradingError, ValueError):
    """Data from outside the grader is too deep, too large, or not plain finite JSON."""


def as_dict(value: object) -> dict[str, Any] | None:
    """`value` as a JSON object, or None when it is none."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _no_constants(name: str) -> object:
    raise BoundsError(f"JSON constant {name} is not allowed here")


def loads(text: str | bytes, *, max_depth: int, max_nodes: int = 1_000_000, max_chars: int | None = None,
          constants: bool = False) -> Any:
    """Parse JSON text within bounds (see module doc); raise BoundsError for anything outside them."""
    if max_chars is not None and len(text) > max_chars:
        raise BoundsError(f"longer than {max_chars} characters")
    try:
        value = json.loads(text, parse_constant=None if constants else _no_constants)
    except RecursionError:
        raise BoundsError("nested too deeply to read") from None
    except MemoryError:
        raise BoundsError("too large to read") from None
    # walked without recursion, so that a hostile value cannot exhaust the stack
    stack: list[tuple[object, int]] = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise BoundsError(f"more than {max_nodes} values")
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise BoundsError(f"nested more than {max_depth} levels deep")
            node = cast("dict[str, object] | list[object]", item)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return value


def shape_ok(shape: object, items: int) -> bool:
    """True for a list of at most MAX_DIMS ints in [0, MAX_ITEMS] holding exactly `items` entries,
    whose nested-list layout needs at most MAX_LISTS lists ([] is a scalar: one item)."""
    sizes = cast("list[object]", shape) if isinstance(shape, list) else None
    if sizes is None or len(sizes) > MAX_DIMS or not all(type(n) is int and 0 <= n <= MAX_ITEMS for n in sizes):
        return False
    dims = cast("list[int]", sizes)
    return sum(math.prod(dims[:i]) for i in range(1, len(dims))) <= MAX_LISTS and math.prod(dims) == items


def missing(record: object) -> bool:
    """A record that holds no answer: not one at all, or the learner left the name unset."""
    found = as_dict(record)
    return found is None or found.get("status") in (None, "missing")


def value_of(record: object) -> Plain:
    """The plain value inside a record; anything malformed reads as an unreadable object."""
    value = as_dict((as_dict(record) or {}).get("value"))
    return value if value is not None else dict(UNREADABLE)


def describe(value: object) -> str:
    """A short, friendly name for a plain value's kind ('a list', 'None', 'a MyClass object')."""
    plain = as_dict(value) or UNREADABLE
    names = {"none": "None", "bool": "a bool", "int": "an int", "float": "a float", "str": "a string",
             "list": "a list", "array": "an array"}
    kind = plain.get("t")
    if isinstance(kind, str) and kind in names:
        return names[kind]
    name = str(plain.get("type", "unreadable"))
    if name == "unreadable":
        return "something unreadable"
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} object"


def clean_plain(value: object, depth: int = 0, budget: list[int] | None = None) -> Plain:
    """A tagged plain value exactly as `harvest.to_plain` makes it, or "unreadable", so that a forged or
    damaged record can only read as a wrong answer: at most MAX_PLAIN_DEPTH levels, MAX_ITEMS items
    per list, MAX_VALUES values in all; ints within +-10**18; floats finite or "inf", "-inf", "nan";
    arrays of a small shape that matches their items."""
    budget = [MAX_VALUES] if budget is None else budget
    budget[0] -= 1
    plain = as_dict(value)
    if plain is None or depth > MAX_PLAIN_DEPTH or budget[0] < 0:
        return dict(UNREADABLE)
    kind, v = plain.get("t"), plain.get("v")
    if kind == "none":
        return {"t": "none"}
    if (kind, type(v)) in (("bool", bool), ("str", str), ("float", float)):  # exactly as the harvest makes them
        return to_plain(v)
    if kind in ("int", "float") and type(v) is int and -MAX_INT < v < MAX_INT:
        return {"t": kind, "v": v}
    if kind == "float" and v in ("inf", "-inf", "nan"):  # a non-finite float, as the harvest spells it
        return {"t": "float", "v": v}
    if kind in ("list", "array") and isinstance(v, list) and len(items := cast("list[object]", v)) <= MAX_ITEMS:
        if kind == "array" and not shape_ok(plain.get("shape"), len(items)):
            return {"t": "other", "type": "array of an impossible shape"}
        shape = {"shape": list(plain["shape"])} if kind == "array" else {}
        return {"t": kind, "v": [clean_plain(item, depth + 1, budget) for item in items], **shape}
    if kind == "other":
        return {"t": "other", "type": str(plain.get("type", "unknown"))[:60]}
    return dict(UNREADABLE)


def _clean_case(case: Record, budget: list[int]) -> Record:
    """One case of a code question's record, each field checked (see `clean_record`)."""
    if "ok" in case:
        return {"ok": clean_plain(case["ok"], 0, budget)}
    where = str(case.get("where", ""))[:100]
    if "blocked" in case:  # a blocked reference was called: its target, as data, or "" (never named)
        target = case["blocked"]
        return {"blocked": target if isinstance(target, str) and BLOCKED_TARGET.fullmatch(target) else "",
                "where": where}
    if "error" in case:
        return {"error": str(case["error"])[:300], "where": where}
    if "setup_error" in case:  # the driver's explanation: the learner's class breaks its contract
        return {"setup_error": str(case["setup_error"])[:300]}
    flags = ("timeout", "skipped", "not_implemented")
    return {flag: True for flag in flags if case.get(flag) is True} or {"skipped": True}


def clean_record(record: object) -> Record:
    """A harvested record with every field checked (see `clean_plain`); malformed -> missing."""
    found = as_dict(record) or {}
    status, cases = found.get("status"), found.get("cases")
    if status in ("value", "not_callable"):
        return {"status": status, "value": clean_plain(found.get("value"))}
    if status == "ran" and isinstance(cases, list):
        budget = [MAX_VALUES]  # values in the whole record
        return {"status": "ran", "cases": [_clean_case(as_dict(case) or {}, budget)
                                           for case in cast("list[object]", cases)[:MAX_CASES]]}
    return {"status": "missing"}
