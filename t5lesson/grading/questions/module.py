"""A code question whose answer is a class: the learner's nn.Module, graded case by case as `Code` grades
a function (`ModuleCode`). Only arrays come out of the kernel; they are compared here with what the real
thing gives (an `Expected`). See docs/grading.md, "The questions live in the package" (ModuleCode).
"""
from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..protocol import resolve
from ..records import Record, as_dict, describe
from ..verdict import ERROR, INCORRECT, NOT_ATTEMPTED, PARTIAL, Outcome
from .kinds import Case, Code, Failure
from .structured import plain_numbers

NONFINITE = "the result holds nan or inf where the reference is finite (no mistake we know gives that here)."
Array = np.ndarray[Any, np.dtype[Any]]
Candidates = list[tuple[Any, str]]  # the mistakes that reproduce a result: (key, sentence), best first
Sentence = str | Candidates  # what a failed case says: one sentence, or the candidates to pick from


@dataclass(frozen=True)
class Expected:
    """What a case should give: `values` (NaN where nothing is compared) and the tolerances."""

    values: Array
    rtol: float = 1e-4
    atol: float = 1e-4


def _out_of_tolerance(expected: Expected, got: Array) -> Array:
    """Where a compared entry of `got` (in the expected shape) is out of tolerance or not finite."""
    care = np.isfinite(expected.values)
    safe = np.where(care, expected.values, 0)
    return care & ~(np.abs(got - safe) <= expected.atol + expected.rtol * np.abs(safe))


def compare(expected: Expected, got: Array) -> str | None:
    """None when `got` matches within the tolerances, else what is wrong: "shape", "nonfinite" or "values"."""
    want = expected.values
    if np.squeeze(got).shape != np.squeeze(want).shape:
        return "shape"
    got = np.reshape(got, want.shape)
    if not np.isfinite(got[np.isfinite(want)]).all():
        return "nonfinite"
    return "values" if _out_of_tolerance(expected, got).any() else None


def closeness(expected: Expected, got: Array) -> str | None:
    """How close a wrong result is, in words, when it is close at all: "within about 1e-3"."""
    want = expected.values
    if got.size != want.size:
        return None
    got = np.reshape(got, want.shape)
    care = np.isfinite(want) & np.isfinite(got)
    if not care.any():
        return None
    worst = float(np.max(np.abs(got[care] - want[care]) / (1.0 + np.abs(want[care]))))
    return next((f"within about {bound:g} of it everywhere" for bound in (1e-3, 1e-2) if worst <= bound), None)


@dataclass(frozen=True)
class ModuleCode(Code):
    """A class the learner writes, built and run on hidden cases in their kernel; compared here.

    reference: "module:function" called with a case's kwargs, in the grader, -> `Expected`.
    driver: the module whose source runs in the kernel; its `adapt(cls)` returns the function
      called with each case's kwargs (see `t5lesson.exercises.t5_layer_driver`).
    diagnose: "module:function"(kwargs, got, expected) -> the mistakes that reproduce a wrong
      result, [(key, sentence), ...], best first; shows: "module:function"(kwargs, key, expected)
      -> whether mistake `key` changes that case's result (see `_pick`).
    """

    driver: str = ""
    case_weights: tuple[float, ...] = ()  # what each case is worth (empty: all alike)
    # cases (0-based) that earn their weight only beside another right case, so that a layer that computes
    # nothing useful earns 0 however well initialised
    supporting: tuple[int, ...] = ()
    diagnose: str = ""
    shows: str = ""
    what: str = "the reference"  # how messages name the real thing the answer is compared with
    kind: ClassVar[str] = "module"
    answer_kind: ClassVar[str] = "a class (an nn.Module subclass)"

    def not_attempted(self) -> Outcome:
        return self.outcome(NOT_ATTEMPTED, 0, f"write the class {self.name} in the answer cell.")

    @cached_property
    def _driver_source(self) -> str:
        spec = importlib.util.find_spec(self.driver)
        if spec is None or spec.origin is None:
            raise ImportError(f"the driver module {self.driver} is not found")
        return Path(spec.origin).read_text(encoding="utf-8")

    @property
    def known_words(self) -> frozenset[str]:
        """The names of the driver that runs the learner's class (its methods, their arguments)."""
        return frozenset(re.findall(r"\w+", self._driver_source)) | {self.name}

    def harvest_spec(self) -> dict[str, Any]:
        return {**super().harvest_spec(), "adapter": self._driver_source}

    def problem(self, want: Any, got: Record) -> str | None:
        """None if the case is right, else "numbers", "shape", "nonfinite" or "values"."""
        array = plain_numbers(got.get("ok"))
        return "numbers" if array is None else compare(want, array)

    def _weight(self, index: int) -> Fraction:
        return Fraction(self.case_weights[index]).limit_denominator(1000) if self.case_weights else Fraction(1)

    def _verdict(self, right: int, total: int, failed: list[Failure]) -> Outcome:
        """Every failed case's sentence (cases with the same one named together), then the cases that passed."""
        problems = {id(case): self._sentence(case, want, got) for case, want, got in failed}
        grouped: dict[str, list[str]] = {}
        passed: list[int] = []
        for number, case in enumerate(self.cases, 1):
            if (problem := problems.get(id(case))) is not None:
                sentence = problem if isinstance(problem, str) else self._pick(problem, problems)
                grouped.setdefault(sentence, []).append(f"{number} ({case.topic})" if case.topic else str(number))
            else:
                passed.append(number - 1)
        raised = sum(bool({"timeout", "error", "blocked"} & (as_dict(got) or {}).keys()) for _, _, got in failed)
        useful = [i for i in passed if i not in self.supporting]
        earned = sum((self._weight(i) for i in passed), Fraction(0)) if useful else Fraction(0)
        fraction = earned / sum((self._weight(i) for i in range(total)), Fraction(0))
        status = PARTIAL if useful else (ERROR if raised == total else INCORRECT)
        sentences = [f"{'Case' if len(names) == 1 else 'Cases'} {', '.join(names)}: {sentence}"
                     for sentence, names in grouped.items()]
        if passed:
            sentences.append(f"Right: case{'s' if len(passed) > 1 else ''} {', '.join(str(i + 1) for i in passed)}"
                             + ("" if useful else " (the initialisation alone earns nothing)") + ".")
        return self.outcome(status, fraction, f"{right} of {total} cases right. " + " ".join(sentences))

    def _pick(self, candidates: Candidates, problems: Mapping[int, Sentence]) -> str:
        """One sentence from a failed case's candidate mistakes, using what the other cases show.

        Several mistakes can give the very same result on one case. A candidate is dropped when it
        would have changed the result of a case the learner got right; among the rest, one that is
        the only explanation of another failed case wins.
        """
        shows = resolve(self.shows) if self.shows else None
        passed = [(c, w) for c, w in zip(self.cases, self.expected, strict=True) if id(c) not in problems]
        kept = [(key, text) for key, text in candidates
                if shows is None or not any(shows(dict(c.kwargs), key, w) for c, w in passed)] or candidates
        # nan or inf where the mistake cannot give it: the mistake is not the likely cause
        unexplained = [(c, w) for c, w in zip(self.cases, self.expected, strict=True)
                       if problems.get(id(c)) == NONFINITE]
        if shows is not None and unexplained:
            kept = [(key, text) for key, text in kept if all(shows(dict(c.kwargs), key, w) for c, w in unexplained)]
            if not kept:
                return NONFINITE
        if len(kept) > 1:
            sure = {p[0][0] for p in problems.values() if not isinstance(p, str) and len(p) == 1}
            kept = [(key, text) for key, text in kept if key in sure] or kept
        if len(kept) == 1:
            return kept[0][1]
        return "one of these mistakes gives this result: " + " Or: ".join(text for _, text in kept)

    def _sentence(self, case: Case, want: Expected, got: object) -> Sentence:
        """One sentence the learner can act on, or the candidate mistakes that `diagnose` found."""
        found = as_dict(got)
        # the driver's explanation when the class does not meet the contract: a wrong answer, not an Error
        if found is not None and "setup_error" in found:
            return str(found["setup_error"]).rstrip(".") + "."
        if found is not None and found.get("not_implemented"):
            return "raised NotImplementedError (is every method written?)."
        failure = self._run_failure("", found)  # `Code`'s run failures, worded without a case's name
        if failure is not None or found is None:
            return (failure or "").strip().removeprefix(": ")
        array = plain_numbers(found.get("ok"))
        if array is None:
            return f"the result is {describe(found.get('ok'))}, not an array of numbers."
        verdict = compare(want, array)
        if verdict == "shape":
            return f"the result has shape {tuple(array.shape)}; {self.what} gives {tuple(want.values.shape)}."
        array = np.reshape(array, want.values.shape)
        if self.diagnose:
            candidates = resolve(self.diagnose)(dict(case.kwargs), array, want)
            if candidates:
                return list(candidates)
        if verdict == "nonfinite":
            return NONFINITE
        index = tuple(int(i) for i in np.argwhere(_out_of_tolerance(want, array))[0])
        close = closeness(want, array)
        how = f"; it is {close}, so the steps are right and the precision is not (a float16 step?)" if close else ""
        return f"differs from {self.what} by more than {want.atol:g} at [{', '.join(map(str, index))}]{how}."
