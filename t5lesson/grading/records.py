"""Bounds on everything the grader reads from outside its own process, checked before use.

A submitted notebook and every record a student's kernel prints are data an attacker wrote.
Before the grader builds anything from them, they pass through here: `loads` (JSON of a bounded
size, depth and count, without NaN/Infinity unless asked), `plain_int`, `plain_float`, `shape_ok`,
and `clean_record`/`clean_plain`, which turn a harvested record into one that can only ever read as
an answer (right or wrong), never as anything the scorer could trip on. `missing`, `value_of` and
`describe` read a cleaned record. See docs/grading.md, "What the grader guarantees".
"""
from __future__ import annotations

import json
import math
import re

from .errors import GradingError
from .harvest import MAX_ITEMS, MAX_TEXT

__all__ = ["BoundsError", "MAX_INT", "MAX_ITEMS", "MAX_DIMS", "MAX_LISTS", "MAX_TEXT", "MAX_PLAIN_DEPTH",
           "MAX_VALUES", "MAX_CASES", "BLOCKED_TARGET", "loads", "depth_and_size",
           "plain_int", "plain_float", "shape_ok", "clean_plain", "clean_blocked", "clean_record", "missing",
           "value_of", "describe"]

MAX_INT = 10 ** 18  # the harvest reports ints beyond this as "huge int"
MAX_DIMS = 8  # dimensions of a harvested array
MAX_LISTS = 10_000  # lists built when an array is laid out as nested lists
MAX_PLAIN_DEPTH = 6  # nesting of one harvested plain value (the harvest's own nest 5 levels at most)
MAX_VALUES = 200_000  # plain values in one harvested record, all its cases together
MAX_CASES = 10_000  # cases of one code question's record


class BoundsError(GradingError, ValueError):
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


def missing(record) -> bool:
    """A record that holds no answer: not one at all, or the learner left the name unset."""
    return not isinstance(record, dict) or record.get("status") in (None, "missing")


def value_of(record) -> dict:
    """The plain value inside a record; anything malformed reads as an unreadable object."""
    value = record.get("value") if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {"t": "other", "type": "unreadable"}


def describe(value) -> str:
    """A short, friendly name for a plain value's kind ('a list', 'None', 'a MyClass object')."""
    kind = value.get("t") if isinstance(value, dict) else None
    names = {"none": "None", "bool": "a bool", "int": "an int", "float": "a float", "str": "a string",
             "list": "a list", "array": "an array"}
    if kind in names:
        return names[kind]
    name = str(value.get("type", "unreadable")) if isinstance(value, dict) else "unreadable"
    if name == "unreadable":
        return "something unreadable"
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name} object"


_NON_FINITE = ("inf", "-inf", "nan")  # how the harvest writes non-finite floats


def _clean_number(kind: str, v):
    """An int within bounds, a finite float, or a non-finite float as its repr; None if neither."""
    if kind == "int":
        return v if plain_int(v) else None
    if plain_float(v) or plain_int(v):
        return v
    if type(v) is float:  # NaN or an infinity parsed from a forged record: the harvest's own spelling
        return repr(v)
    return v if isinstance(v, str) and v in _NON_FINITE else None


def clean_plain(value, depth: int = 0, budget: list | None = None) -> dict:
    """A tagged plain value exactly as `t5lesson.grading.harvest.to_plain` makes it, or "unreadable".

    The grader calls this on everything that came out of a student's kernel before scoring it,
    so a forged or damaged record can only ever read as a wrong answer. Bounded (`records`): at most
    MAX_PLAIN_DEPTH levels deep, MAX_ITEMS items per list, MAX_VALUES values in all; ints within
    +-10**18, floats finite (non-finite ones are kept as "inf", "-inf" or "nan"), arrays of a
    small shape that matches their items (`records.shape_ok`).
    """
    unreadable = {"t": "other", "type": "unreadable"}
    budget = [MAX_VALUES] if budget is None else budget
    budget[0] -= 1
    if not isinstance(value, dict) or depth > MAX_PLAIN_DEPTH or budget[0] < 0:
        return unreadable
    kind = value.get("t")
    if kind == "none":
        return {"t": "none"}
    v = value.get("v")
    if kind in ("int", "float"):
        number = _clean_number(kind, v)
        return unreadable if number is None else {"t": kind, "v": number}
    if kind == "bool":
        return {"t": "bool", "v": v} if type(v) is bool else unreadable
    if kind == "str":
        return {"t": "str", "v": v[:MAX_TEXT]} if isinstance(v, str) else unreadable
    if kind in ("list", "array") and isinstance(v, list) and len(v) <= MAX_ITEMS:
        if kind == "array" and not shape_ok(value.get("shape"), len(v)):
            return {"t": "other", "type": "array of an impossible shape"}
        out = {"t": kind, "v": [clean_plain(item, depth + 1, budget) for item in v]}
        if kind == "array":
            out["shape"] = list(value["shape"])
        return out
    if kind == "other":
        return {"t": "other", "type": str(value.get("type", "unknown"))[:60]}
    return unreadable


BLOCKED_TARGET = re.compile(r"[A-Za-z0-9_.:*]{1,200}")  # "module:Class.function", as the harvest names one


def clean_blocked(case: dict) -> dict:
    """A case during which a blocked reference was called: {"blocked": target, "where": ...}.

    The target must read as one ("module:path" in letters, digits, `_ . : *`), else it is
    dropped ({"blocked": ""}: the case still earns nothing, and no report names a target for it).
    """
    target = case.get("blocked")
    target = target if isinstance(target, str) and BLOCKED_TARGET.fullmatch(target) else ""
    return {"blocked": target, "where": str(case.get("where", ""))[:100]}


def clean_record(record) -> dict:
    """A harvested record with every field checked (see `clean_plain`); malformed -> missing."""
    if not isinstance(record, dict):
        return {"status": "missing"}
    status = record.get("status")
    budget = [MAX_VALUES]  # values in the whole record (see clean_plain)
    if status == "value":
        return {"status": "value", "value": clean_plain(record.get("value"))}
    if status == "not_callable":
        return {"status": "not_callable", "value": clean_plain(record.get("value"))}
    if status == "ran" and isinstance(record.get("cases"), list):
        cases = []
        for case in record["cases"][:MAX_CASES]:
            case = case if isinstance(case, dict) else {}
            if "ok" in case:
                cases.append({"ok": clean_plain(case["ok"], 0, budget)})
            elif "blocked" in case:  # a blocked reference was called: its target, as data, or nothing
                cases.append(clean_blocked(case))
            elif "error" in case:
                cases.append({"error": str(case["error"])[:300], "where": str(case.get("where", ""))[:100]})
            elif "setup_error" in case:  # the driver's explanation: the learner's class breaks its contract
                cases.append({"setup_error": str(case["setup_error"])[:300]})
            else:
                flags = ("timeout", "skipped", "not_implemented")
                cases.append({flag: True for flag in flags if case.get(flag) is True} or {"skipped": True})
        return {"status": "ran", "cases": cases}
    return {"status": "missing"}
