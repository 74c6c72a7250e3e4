"""A code question whose feedback shows what came out and what was expected at the first entry that differs.

`PlainCode` says where a result first differs ("the value at [2][0] is not right"). The lessons'
your-turn cells say more: "-500: 16, expected 15". `ShownCode` gives exercise 3's and 4's code
questions the same: the place, the learner's value and the expected one, as numbers (never an
object's repr). Structure problems (a list of the wrong length, a number where a list belongs) keep
PlainCode's words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..grading.questions.structured import _BAD, PlainCode, differences, from_plain

__all__ = ["ShownCode", "shown"]


def shown(value) -> str:
    """A number as a learner reads it: 3, -0.25, 1.2346 (no trailing zeros, no type names)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"


def _at(value, where: str):
    for index in re.findall(r"\[(\d+)\]", where):
        value = value[int(index)]
    return value


@dataclass(frozen=True)
class ShownCode(PlainCode):
    """PlainCode whose wrong value is shown beside the expected one (see the module's docstring)."""

    def problem(self, want, got) -> str | None:
        plain = from_plain(got.get("ok") if isinstance(got, dict) else None)
        if plain is _BAD:
            return super().problem(want, got)
        for where, kind, _ in differences(want, plain, self.close, self.masked_below):
            if kind != "value":
                return super().problem(want, got)
            if not where:
                return f"returned {shown(plain)}, expected {shown(want)}"
            return f"the entry at {where} is {shown(_at(plain, where))}, expected {shown(_at(want, where))}"
        return None
