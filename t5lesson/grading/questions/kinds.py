"""Question kinds, answer keys and scoring: the one definition that `check()` and the grader share.

A question is scored from a *plain record* (`harvest`), never from the learner's objects, so no
method of theirs is called here; `check()` in the notebook runs the very same code as the grader.
Keys are salted hashes: deterrence, not security. See docs/grading.md, "The questions live in the
package".
"""
from __future__ import annotations

import builtins
import hashlib
import inspect
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

from ..harvest import BLOCKED_MESSAGE
from ..protocol import resolve
from ..records import BLOCKED_TARGET, Plain, Record, as_dict, describe, missing, value_of
from ..verdict import CORRECT, ERROR, INCORRECT, NOT_ATTEMPTED, PARTIAL, SUBMITTED, Outcome, Verdict, format_points

SALT = "t5lesson/exercises/v1"


def answer_hash(question_id: str, canonical: str, exercise: str) -> str:
    """The stored form of an answer key: a salted hash of its canonical text. The salt holds the
    exercise id too (`Exercise` sets `Question.salt`), so one answer has a key per exercise."""
    return hashlib.sha256(f"{SALT}|{exercise}|{question_id}|{canonical}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Question:
    """What every graded question has: an id, points, and hints in levels.

    `name` is the variable (or function) the learner fills in; the grader reads it out of the
    kernel, `check("q1")` from the notebook's namespace. `objectives` are the course's learning
    objectives (1-7, `t5lesson.exercises.objectives`) it assesses.
    """

    id: str
    points: float
    name: str
    hints: tuple[str, ...] = ()
    objectives: tuple[int, ...] = ()
    salt: str = ""  # the exercise id its keys are salted with: `Exercise` sets it (see answer_hash)
    kind: ClassVar[str] = "question"
    auto_scored: ClassVar[bool] = True

    def outcome(self, status: Verdict, fraction: Fraction | float = 0, message: str = "") -> Outcome:
        points = round(float(self.points * Fraction(fraction)), 2)
        return Outcome(self.id, status, points, float(self.points), message)

    def harvest_spec(self) -> dict[str, Any]:
        """What the code injected into the kernel must collect for this question."""
        return {"id": self.id, "kind": "value", "name": self.name}

    def score(self, record: object) -> Outcome:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


@dataclass(frozen=True)
class MultipleChoice(Question):
    """Pick one option (multiple=False) or all the right ones (multiple=True); all or nothing.

    The learner answers with a letter ("B"), or for multiple=True with several (["A", "C"] or
    "A, C"). `key` is `answer_hash(id, "AC", exercise)`; `feedback` maps the hash of a tempting
    wrong answer to a sentence saying what is wrong with it, without naming the right one.
    """

    options: str = "ABCD"
    multiple: bool = False
    key: str = ""
    feedback: Mapping[str, str] = field(default_factory=dict[str, str])
    kind: ClassVar[str] = "multiple choice"

    @staticmethod
    def canonical(letters: str | Sequence[str]) -> str:
        """The form a key hashes: each chosen letter once, in order ("CA", ["A", "C", "A"] -> "AC")."""
        return "".join(sorted(set(letters)))

    def letters(self, value: Plain) -> list[str] | str:
        """The chosen letters, or a friendly message saying why the answer cannot be read."""
        kind, v = value.get("t"), value.get("v")  # JSON: each use checks it
        example = '"A, C"' if self.multiple else '"A"'
        if kind == "str":
            tokens = [t.strip("().:") for t in re.split(r"[\s,;/&+]+|\bAND\b", str(v).upper()[:200])]
            letters = [t for t in tokens if t]
            if any(len(t) != 1 or not t.isalpha() for t in letters):
                return f"{self.name} should be option letters such as {example}, not a longer text."
        elif kind == "list":
            items = [as_dict(i) for i in value["v"]]
            strings = [str(i["v"]) for i in items if i is not None and i.get("t") == "str"]
            if len(strings) != len(items):
                return f"{self.name} should hold letters as strings, e.g. [\"A\", \"C\"]."
            letters = [s.strip().upper() for s in strings]
            if any(len(x) != 1 for x in letters):
                return f"each entry of {self.name} should be one letter, e.g. [\"A\", \"C\"]."
        else:
            return f"{self.name} should be a letter like {example}, but it is {describe(value)}."
        unknown = sorted(set(letters) - set(self.options))
        if unknown:
            return f"{', '.join(unknown)} is not an option here; the options are {', '.join(self.options)}."
        if not letters:
            return f"{self.name} holds no option letter."
        return letters

    def score(self, record: object) -> Outcome:
        if missing(record) or value_of(record).get("t") == "none":
            what = ("a list of the letters of every right option" if self.multiple
                    else "the letter of your choice, as a string")
            return self.outcome(NOT_ATTEMPTED, 0, f"set {self.name} to {what}.")
        letters = self.letters(value_of(record))
        if isinstance(letters, str):
            return self.outcome(INCORRECT, 0, letters)
        chosen = self.canonical(letters)
        if not self.multiple and len(chosen) > 1:
            return self.outcome(INCORRECT, 0, "choose exactly one option.")
        digest = answer_hash(self.id, chosen, self.salt)
        if digest == self.key:
            return self.outcome(CORRECT, 1)
        return self.outcome(INCORRECT, 0, self.feedback.get(digest, ""))


@dataclass(frozen=True)
class Numeric(Question):
    """A number: an exact integer (tolerance None), or a float accepted within `tolerance`.

    An integer's key is `answer_hash(id, str(value), exercise)`. A float is stored on a grid of
    step tolerance/8: the key hashes round(value / step), and an answer is accepted when it lands
    within 8 grid steps of it, i.e. within the tolerance give or take one step.
    """

    key: str = ""
    tolerance: float | None = None
    feedback: Mapping[str, str] = field(default_factory=dict[str, str])
    kind: ClassVar[str] = "numeric"
    GRID: ClassVar[int] = 8

    @classmethod
    def float_key(cls, question_id: str, value: float, tolerance: float, exercise: str) -> str:
        return answer_hash(question_id, str(round(value / (tolerance / cls.GRID))), exercise)

    def number(self, value: Plain) -> int | float | str:
        """The number answered, or a message saying why the answer is none."""
        kind, v = value.get("t"), value.get("v")
        if kind in ("int", "float") and type(v) in (int, float):  # exactly those (a bool is no number)
            return value["v"]
        if kind == "array" and value.get("shape") in ([], [1]) and len(value.get("v") or ()) == 1:
            return self.number(as_dict(value["v"][0]) or {})
        if kind == "str":
            return f"{self.name} should be a number, not the string {str(v)[:20]!r}: drop the quotes."
        if kind == "float":
            return f"{self.name} is {v}, which is not a finite number."
        return f"{self.name} should be a number, but it is {describe(value)}."

    def score(self, record: object) -> Outcome:
        if missing(record) or value_of(record).get("t") == "none":
            what = "a whole number" if self.tolerance is None else "a number"
            return self.outcome(NOT_ATTEMPTED, 0, f"set {self.name} to {what}.")
        number = self.number(value_of(record))
        if isinstance(number, str):
            return self.outcome(INCORRECT, 0, number)
        if self.tolerance is None:
            if number != math.floor(number):
                return self.outcome(INCORRECT, 0, f"the answer is a whole number, and {number} is not one.")
            near = [answer_hash(self.id, str(int(number)), self.salt)]
        else:
            try:
                ratio = number / (self.tolerance / self.GRID)
            except OverflowError:  # an int too large for a float
                ratio = math.inf
            if not math.isfinite(ratio) or abs(ratio) > 2 ** 62:  # nowhere near any key: 1e308, 10**400
                return self.outcome(INCORRECT, 0, "")  # an unrecognised answer: hints are for hint()
            centre = round(ratio)
            near = [answer_hash(self.id, str(centre + d), self.salt) for d in range(-self.GRID, self.GRID + 1)]
        if self.key in near:
            return self.outcome(CORRECT, 1)
        return self.outcome(INCORRECT, 0, next((self.feedback[h] for h in near if h in self.feedback), ""))


@dataclass(frozen=True)
class Case:
    """One call of a code question: args and kwargs (plain ints/bools), and what it exercises."""

    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs, so a Case stays hashable and its order fixed
    topic: str = ""

    def call_text(self, function: str) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{function}({', '.join(parts)})"

    def plain(self) -> dict[str, Any]:
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}


# A function that fails any case is wrong: it earns the share of cases it gets right times a third, so
# no wrong answer earns a third of the points however many cases it gets right. Partial credit tells a
# learner how close they are; it never lets a wrong answer pass for most of a right one.
WRONG_AT_MOST = Fraction(1, 3)

# (case, expected result, its harvested result: JSON, like a record's every field) of a case that was not right
Failure = tuple[Case, Any, Any]


@dataclass(frozen=True)
class Code(Question):
    """A function the learner writes, called on every case and compared with a reference.

    The comparison is on plain values only: `reference` ("module:function") is called here, in the
    grader, and each kind judges a case with `expect` and `problem`. A function that raises
    NotImplementedError on every case (the stub) is Not attempted. `cases` ship with the package and
    are what `check()` runs; the grader runs `hidden`'s recipe's cases instead (`drawn`).
    """

    reference: str = ""
    cases: tuple[Case, ...] = ()
    case_timeout: float = 1.0
    blocked: tuple[str, ...] = ()  # "module:attribute" made to raise while the learner's code runs (harvest.blocking)
    hidden: str = ""  # "module:function"(rng) -> the grading cases: `cases`' recipe, its numbers drawn
    # of `blocked`, what stays usable until this answer is read, because other questions of the
    # exercise are answered with it (every other target is blocked from the run's first cell on)
    open_until_read: tuple[str, ...] = ()
    drawn_cases: bool = False  # set by `drawn`: the cases are hidden, so no message echoes the learner's text
    kind: ClassVar[str] = "code"
    answer_kind: ClassVar[str] = "a function"  # what the learner's name should hold, in messages
    calls_named_up_to: ClassVar[int] = 10 ** 6  # a case whose call is longer is named by its number

    def not_attempted(self) -> Outcome:
        return self.outcome(NOT_ATTEMPTED, 0, f"write the body of {self.name} in the answer cell.")

    def harvest_spec(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "code", "name": self.name, "timeout": self.case_timeout,
                "cases": [c.plain() for c in self.cases], "blocked": list(self.blocked)}

    def drawn(self, rng: object) -> Code:
        """This question with the grader's cases: `hidden`'s recipe run on `rng` (a NumPy Generator
        seeded from the instructor's secret, see `Exercise.drawn`)."""
        return replace(self, cases=tuple(resolve(self.hidden)(rng)), drawn_cases=True) if self.hidden else self

    @property
    def known_words(self) -> frozenset[str]:
        """Names this question uses (the learner's function, the reference's parameters): an error on
        a hidden case may show Python's words about a signature only when they name these."""
        try:
            parameters = set(inspect.signature(resolve(self.reference)).parameters)
        except (ValueError, TypeError, ImportError, AttributeError):
            parameters = set[str]()
        return frozenset(parameters | {self.name})

    def expect(self, result: Any) -> Any:
        """One reference result in the form `problem` compares with (here: as the reference returns it)."""
        return result

    @cached_property
    def expected(self) -> tuple[Any, ...]:
        """What every case should give: the reference's results, computed once in this process."""
        function = resolve(self.reference)
        return tuple(self.expect(function(*c.args, **dict(c.kwargs))) for c in self.cases)

    def problem(self, want: Any, got: Record) -> str | None:  # pragma: no cover - every kind overrides it
        """The per-case check: None if the case's result is right, else what is wrong with it."""
        raise NotImplementedError

    def score(self, record: object) -> Outcome:
        if missing(record):
            return self.not_attempted()
        found = as_dict(record) or {}
        if found.get("status") == "not_callable":
            what = describe(value_of(record))
            return self.outcome(INCORRECT, 0, f"{self.name} should be {self.answer_kind}, but it is {what}.")
        results: list[Any] | None = found.get("cases") if found.get("status") == "ran" else None
        if not isinstance(results, list) or len(results) != len(self.cases):
            return self.outcome(ERROR, 0, f"the results of {self.name} could not be read back.")
        if all((as_dict(r) or {}).get("not_implemented") for r in results):
            return self.not_attempted()
        # a case is right when it returned a value and `problem` finds nothing wrong with it
        failed = [(c, w, g) for c, w, g in zip(self.cases, self.expected, results, strict=True)
                  if "ok" not in (got := as_dict(g) or {}) or self.problem(w, got) is not None]
        total = len(self.cases)
        if not failed:
            return self.outcome(CORRECT, 1, f"all {total} cases right.")
        return replace(self._verdict(total - len(failed), total, failed), blocked=self.blocked_hits(results))

    def owns_target(self, hit: str) -> bool:
        """Whether `hit` ("module:Class.function", as a blocked function names itself) is one of the
        functions this question's `blocked` targets ("module:path", "module:Class.*", "module:*")."""
        module, _, path = hit.partition(":")
        return bool(path) and any(
            t_module == module and (t_path in (path, "*") or path.startswith(t_path.removesuffix(".*") + "."))
            for t_module, _, t_path in (target.partition(":") for target in self.blocked))

    def blocked_hits(self, results: list[Any]) -> tuple[str, ...]:
        """The blocked references the cases called, as the records carry them (never read from a
        message): each a well-formed target (`records.BLOCKED_TARGET`) among this question's own."""
        hits = {found["blocked"] for r in results if isinstance((found := as_dict(r) or {}).get("blocked"), str)}
        return tuple(sorted(h for h in hits if BLOCKED_TARGET.fullmatch(h) and self.owns_target(h)))

    def _verdict(self, right: int, total: int, failed: list[Failure]) -> Outcome:
        """The outcome when some cases failed: partial credit, the first failed case explained, and
        the first one that raised if that is another."""
        errors = [f for f in failed if {"error", "timeout", "blocked"} & (as_dict(f[2]) or {}).keys()]
        first_miss, first_error = failed[0], (errors[0] if errors else None)
        if right == 0 and first_error is not None and first_error == first_miss:
            return self.outcome(ERROR, 0, self._explain(*first_error))
        status = PARTIAL if right else INCORRECT
        message = f"{right} of {total} cases right. {self._explain(*first_miss)}"
        if first_error is not None and first_error != first_miss:
            message += f" Also: {self._explain(*first_error)}"
        return self.outcome(status, Fraction(right, total) * WRONG_AT_MOST, message)

    def _case_name(self, case: Case) -> str:
        """How a message names a case: its call (or number, when the call is long), and its topic."""
        call = case.call_text(self.name)
        name = call if len(call) <= self.calls_named_up_to else f"case {self.cases.index(case) + 1}"
        return f"{name} ({case.topic})" if case.topic else name

    def _run_failure(self, where: str, got: object) -> str | None:
        """The sentence for a case that produced no value (no result, timeout, exception), else None."""
        found = as_dict(got)
        if found is None:
            return f"{where}: no result."
        if found.get("timeout"):
            return f"{where} took longer than {self.case_timeout:g} s."
        if found.get("skipped"):
            return f"{where} was not run: earlier cases were too slow."
        if found.get("not_implemented"):
            return f"{where} raised NotImplementedError."
        place = f" (in {found['where']})" if found.get("where") else ""
        if "blocked" in found:  # worded here, from the target the record carries
            target = found["blocked"]
            named = f" ({target})" if isinstance(target, str) and BLOCKED_TARGET.fullmatch(target) else ""
            return f"{where} raised RuntimeError: the reference implementation {BLOCKED_MESSAGE}{named}{place}."
        if "error" in found:
            return f"{where} raised {_error_shown(found['error'], self.drawn_cases, self.known_words)}{place}."
        return None

    def _explain(self, case: Case, want: Any, got: Any) -> str:
        """One sentence about a failed case: why it gave no value, or what is wrong with it (hints are hint()'s job)."""
        where = self._case_name(case)
        failure = self._run_failure(where, got)
        return failure if failure is not None else f"{where}: {self.problem(want, as_dict(got) or {})}."


# Python's own words for a call that does not fit a signature: on a hidden case these are shown in
# full when every name in them is one the question itself uses (`Code.known_words`)
_SIGNATURE = re.compile(r"TypeError: ([\w.]{1,80})\(\) (?:got an unexpected keyword argument|missing \d required "
                        r"(?:positional|keyword-only) arguments?:|takes \d{1,2} positional arguments? but \d{1,2} "
                        r"(?:was|were) given)(?: '\w{1,40}'(?:,| and|, and)?)*")

# Library errors about shapes, shown in full on a hidden case: their only variable parts are small sizes
_SHAPES = (re.compile(r"RuntimeError: The size of tensor a \(\d{1,4}\) must match the size of tensor b \(\d{1,4}\) "
                      r"at non-singleton dimension -?\d"),
           re.compile(r"RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                      r"\(\d{1,4}x\d{1,4} and \d{1,4}x\d{1,4}\)"),
           re.compile(r"IndexError: index -?\d{1,4} is out of bounds for (?:axis|dimension) \d with size \d{1,4}"))


def _error_shown(error: object, hidden: bool, known_words: frozenset[str] = frozenset()) -> str:
    """What a message shows of an error the learner's code raised ("ValueError: bad shape"). On a
    hidden case only a built-in exception's name, a shape error, or Python's words for a call that
    does not fit a signature naming nothing but `known_words`: a message of the learner's making
    could carry the case out of the run, to be answered at home and replayed."""
    error = str(error)
    if not hidden or any(shape.fullmatch(error) for shape in _SHAPES):
        return error
    signature = _SIGNATURE.fullmatch(error)
    if signature and set(re.findall(r"'(\w+)'", error)) | {signature.group(1).split(".")[-1]} <= known_words:
        return error
    name = error.split(":", 1)[0].strip()
    known = getattr(builtins, name, None)
    return name if isinstance(known, type) and issubclass(known, BaseException) else "an exception of its own class"


# When a free-text answer counts as an attempt: enough words of its own, not filler, not a paste. "Submitted"
# (and the self-check questions it unlocks) should mean the learner tried; the numbers below are deliberately
# low, so one honest sentence passes. docs/grading.md ("FreeText") says what is counted and why.
MIN_WORDS = 8
MIN_DISTINCT = 6
SHINGLE = 5
COPIED_SHARE = 0.5
FILLER = frozenset("""todo tbd tba fixme xxx idk dunno n/a na none nothing answer here later see above below
lorem ipsum dolor sit amet asdf qwerty test testing placeholder write your something blah etc""".split())
_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_MARKUP = re.compile(r"`[^`]*`|\$[^$]*\$|<[^>]+>|[*_#>|~\[\]()]")


def words(text: str) -> list[str]:
    """The words of a Markdown text, lower case, code spans and formulas left out."""
    return [w.lower() for w in _WORD.findall(_MARKUP.sub(" ", text))]


def _shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[k:k + SHINGLE]) for k in range(len(tokens) - SHINGLE + 1)}


def copied_share(text: str, sources: Iterable[str]) -> float:
    """The share of the answer's runs of SHINGLE words that appear word for word in `sources`."""
    own = _shingles(words(text))
    if not own:
        return 0.0
    seen = set[tuple[str, ...]]().union(*(_shingles(words(source)) for source in sources))
    return len(own & seen) / len(own)


def lacks_substance(text: str, placeholder: str = "", visible: Iterable[str] = ()) -> str | None:
    """None for an attempt with substance; else a sentence telling the learner what is missing."""
    tokens = words(text.replace(placeholder, " ") if placeholder else text)
    meaningful = [w for w in tokens if w not in FILLER]
    if len(meaningful) < MIN_WORDS or len(set(meaningful)) < MIN_DISTINCT:
        return ("this does not read as an answer yet (a few words or a placeholder). Write what you would say "
                "in a sentence or two, in your own words; then save and run check again.")
    share = copied_share(text, visible)
    if share > COPIED_SHARE:
        return (f"{share:.0%} of this repeats, word for word, text the course shows beside the question (its "
                "rubric, checklist or hints). Say it in your own words; your instructor marks your reasoning.")
    return None


@dataclass(frozen=True)
class FreeText(Question):
    """Prose for the instructor, collected and never auto-scored.

    The answer lives in a Markdown cell (role "answer") named `name`, so the grader reads it from the
    submitted file. `rubric` lists the elements of a good answer, (element, points) pairs summing to
    the question's points, printed in free_text.csv for whoever marks the answers. `checklist` says
    the same elements in the learner's words; `self_check` shows them once the learner has written
    an answer (the rubric's own elements without one). Nothing is marked here.
    """

    placeholder: str = "_Write your answer here._"
    rubric: tuple[tuple[str, float], ...] = ()
    checklist: tuple[str, ...] = ()
    kind: ClassVar[str] = "free text"
    auto_scored: ClassVar[bool] = False

    def visible_texts(self) -> tuple[str, ...]:
        """What a learner can read beside the question: an answer copied from these is not the learner's."""
        return (*(element for element, _ in self.rubric), *self.checklist, *self.hints)

    def _blank(self, text: str) -> bool:
        return not text.strip() or text.strip() == self.placeholder.strip()

    def self_check(self, text: str) -> Outcome:
        """What `check("qN")` prints for a free-text answer: Not attempted, or the questions to hold it against."""
        if self._blank(text):
            return self.outcome(NOT_ATTEMPTED, 0, "write your answer in the Markdown cell below the question, "
                                "save the notebook (check reads the saved file), and run check again.")
        missing = lacks_substance(text, self.placeholder, self.visible_texts())
        if missing:
            return self.outcome(NOT_ATTEMPTED, 0, missing)
        elements = self.checklist or tuple(element for element, _ in self.rubric)
        lines = [f"  - ({format_points(points)} pt{'' if points == 1 else 's'}) {element}"
                 for element, (_, points) in zip(elements, self.rubric, strict=True)]
        return self.outcome(SUBMITTED, 0, f"your instructor marks this answer ({format_points(self.points)} "
                            "points); check() does not. Hold your answer against these questions:\n" + "\n".join(lines))

    def rubric_text(self) -> str:
        """The rubric on one line: "1 pt: names both changes; 1 pt: ..."."""
        return "; ".join(f"{format_points(points)} pt{'' if points == 1 else 's'}: {element}"
                         for element, points in self.rubric)

    def score(self, record: object) -> Outcome:
        text = str((as_dict(record) or {}).get("text", ""))
        if self._blank(text):
            return self.outcome(NOT_ATTEMPTED, 0, "write your answer in the Markdown cell.")
        missing = lacks_substance(text, self.placeholder, self.visible_texts())
        if missing and "repeats" not in missing:  # a placeholder: nothing for the instructor to read
            return self.outcome(NOT_ATTEMPTED, 0, missing)
        note = f" Note for the marker: {copied_share(text, self.visible_texts()):.0%} of it repeats the rubric, " \
               "checklist or hints word for word." if missing else ""
        return self.outcome(SUBMITTED, 0, "your instructor reads free-text answers; check() cannot mark them." + note)
