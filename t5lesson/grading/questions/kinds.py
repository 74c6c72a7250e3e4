"""Question kinds, answer keys and scoring: the one definition that `check()` and the grader share.

A question is scored from a *plain record* (`harvest`), never from the learner's objects, so no
method of theirs is called here; in the grader this runs in the grader's process, in the notebook
`check()` runs the very same code. Keys are salted hashes: deterrence, not security. The words of
an outcome are `verdict`'s. See docs/grading.md, "The questions live in the package".
"""
from __future__ import annotations

import builtins
import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import Any

from ..protocol import resolve
from ..records import BLOCKED_TARGET, describe, missing, value_of
from ..verdict import CORRECT, ERROR, INCORRECT, NOT_ATTEMPTED, PARTIAL, SUBMITTED, Outcome, Verdict, format_points
from .substance import copied_share, lacks_substance

__all__ = ["Question", "MultipleChoice", "Numeric", "Code", "Case", "FreeText", "answer_hash", "blocked_sentence"]

SALT = "t5lesson/exercises/v1"


def answer_hash(question_id: str, canonical: str, exercise: str) -> str:
    """The stored form of an answer key: a salted hash of its canonical text (see module doc).

    The salt holds the exercise id as well as the question id, so the same answer to two
    questions of the same id in different exercises ("B" to q1 of exercises 1 and 5) gets two
    different keys. An `Exercise` gives each of its questions its id as `salt`.
    """
    return hashlib.sha256(f"{SALT}|{exercise}|{question_id}|{canonical}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Question:
    """What every graded question has: an id, points, and hints in levels.

    `name` is the variable (or function) the learner fills in; the grader reads it out of the
    kernel, and `check("q1")` reads it from the notebook's namespace. The question's title is
    its heading in the notebook (see `notebook_format.validate`), and only there. `objectives`
    are the course's learning objectives (1-7, `t5lesson.exercises.objectives`) it assesses.
    """

    id: str
    points: float
    name: str
    hints: tuple[str, ...] = ()
    objectives: tuple[int, ...] = ()
    salt: str = ""  # the exercise id its keys are salted with: `Exercise` sets it (see answer_hash)
    kind = "question"
    auto_scored = True

    def outcome(self, status: Verdict, fraction: Fraction | float = 0, message: str = "") -> Outcome:
        points = round(float(self.points * Fraction(fraction)), 2)
        return Outcome(self.id, status, points, float(self.points), message)

    def not_attempted(self) -> Outcome:
        return self.outcome(NOT_ATTEMPTED, 0, f"set {self.name} in the answer cell.")

    def harvest_spec(self) -> dict:
        """What the code injected into the kernel must collect for this question."""
        return {"id": self.id, "kind": "value", "name": self.name}

    def score(self, record) -> Outcome:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


@dataclass(frozen=True)
class MultipleChoice(Question):
    """Pick one option (multiple=False) or all the right ones (multiple=True); all or nothing.

    The learner answers with a letter ("B"), or for multiple=True with several ("A", "C" in a
    list, or the string "A, C"). `key` is `answer_hash(id, "B", exercise)` or `answer_hash(id, "AC", exercise)`.
    `feedback` maps `answer_hash(id, canonical, exercise)` of a tempting wrong answer to a sentence
    saying what is wrong with it, without naming the right one.
    """

    options: str = "ABCD"
    multiple: bool = False
    key: str = ""
    feedback: dict = field(default_factory=dict)
    kind = "multiple choice"

    @staticmethod
    def canonical(letters) -> str:
        """The form a key hashes: each chosen letter once, in order ("CA", ["A", "C", "A"] -> "AC")."""
        return "".join(sorted(set(letters)))

    def not_attempted(self) -> Outcome:
        what = ("a list of the letters of every right option" if self.multiple
                else "the letter of your choice, as a string")
        return self.outcome(NOT_ATTEMPTED, 0, f"set {self.name} to {what}.")

    def letters(self, value) -> list[str] | str:
        """The chosen letters, or a friendly message saying why the answer cannot be read."""
        kind = value.get("t")
        example = '"A, C"' if self.multiple else '"A"'
        if kind == "str":
            tokens = [t.strip("().:") for t in re.split(r"[\s,;/&+]+|\bAND\b", value["v"].upper()[:200])]
            letters = [t for t in tokens if t]
            if any(len(t) != 1 or not t.isalpha() for t in letters):
                return f"{self.name} should be option letters such as {example}, not a longer text."
        elif kind == "list":
            items = value["v"]
            if not all(isinstance(i, dict) and i.get("t") == "str" for i in items):
                return f"{self.name} should hold letters as strings, e.g. [\"A\", \"C\"]."
            letters = [i["v"].strip().upper() for i in items]
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

    def score(self, record) -> Outcome:
        if missing(record) or value_of(record).get("t") == "none":
            return self.not_attempted()
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

    The key of an integer is `answer_hash(id, str(value), exercise)`. A float is stored on a grid of step
    tolerance/8: the key is the hash of round(value / step), and an answer is accepted when it
    lands within 8 grid steps of it, i.e. within the tolerance give or take one step.
    """

    key: str = ""
    tolerance: float | None = None
    feedback: dict = field(default_factory=dict)
    kind = "numeric"

    GRID = 8

    @classmethod
    def float_key(cls, question_id: str, value: float, tolerance: float, exercise: str) -> str:
        return answer_hash(question_id, str(round(value / (tolerance / cls.GRID))), exercise)

    def not_attempted(self) -> Outcome:
        what = "a whole number" if self.tolerance is None else "a number"
        return self.outcome(NOT_ATTEMPTED, 0, f"set {self.name} to {what}.")

    def number(self, value):
        kind = value.get("t")
        if kind in ("int", "float") and isinstance(value.get("v"), (int, float)) and not isinstance(value["v"], bool):
            return value["v"]
        if kind == "array" and value.get("shape") in ([], [1]) and len(value.get("v", [])) == 1:
            return self.number(value["v"][0])
        if kind == "str":
            return f"{self.name} should be a number, not the string {value['v'][:20]!r}: drop the quotes."
        if kind == "float":
            return f"{self.name} is {value.get('v')}, which is not a finite number."
        return f"{self.name} should be a number, but it is {describe(value)}."

    def score(self, record) -> Outcome:
        if missing(record) or value_of(record).get("t") == "none":
            return self.not_attempted()
        number = self.number(value_of(record))
        if isinstance(number, str):
            return self.outcome(INCORRECT, 0, number)
        if self.tolerance is None:
            if number != math.floor(number):
                return self.outcome(INCORRECT, 0, f"the answer is a whole number, and {number} is not one.")
            digest = answer_hash(self.id, str(int(number)), self.salt)
            if digest == self.key:
                return self.outcome(CORRECT, 1)
            return self.outcome(INCORRECT, 0, self.feedback.get(digest, ""))
        step = self.tolerance / self.GRID
        try:
            ratio = number / step
        except OverflowError:  # an int too large for a float
            ratio = math.inf
        if not math.isfinite(ratio) or abs(ratio) > 2 ** 62:  # nowhere near any key: 1e308, 10**400
            return self.outcome(INCORRECT, 0, "")  # an unrecognised answer: hints are for hint()
        centre = round(ratio)
        near = [answer_hash(self.id, str(centre + d), self.salt) for d in range(-self.GRID, self.GRID + 1)]
        if self.key in near:
            return self.outcome(CORRECT, 1)
        known = [self.feedback[h] for h in near if h in self.feedback]
        return self.outcome(INCORRECT, 0, known[0] if known else "")


def blocked_sentence(target) -> str:
    """How a call of a blocked reference reads in feedback: the refusal the learner's code met."""
    from ..harvest import BLOCKED_MESSAGE

    named = f" ({target})" if isinstance(target, str) and BLOCKED_TARGET.fullmatch(target) else ""
    return f"RuntimeError: the reference implementation {BLOCKED_MESSAGE}{named}"


@dataclass(frozen=True)
class Case:
    """One call of a code question: args and kwargs (plain ints/bools), and what it exercises."""

    args: tuple
    kwargs: tuple = ()  # (name, value) pairs, so a Case stays hashable and its order fixed
    topic: str = ""

    def call_text(self, function: str) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{function}({', '.join(parts)})"

    def plain(self) -> dict:
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}


# A function that fails any case is wrong: it earns the share of cases it gets right, times a third,
# so no wrong answer earns a third of the points however many cases it gets right (a slip confined to
# the decoder, or to a single region, still gets most cases right). Partial credit tells a learner
# how close they are; it never lets a wrong answer pass for most of a right one.
WRONG_AT_MOST = Fraction(1, 3)


@dataclass(frozen=True)
class Code(Question):
    """A function the learner writes, called on every case and compared with a reference.

    Partial credit per case: points * (cases right) / (cases). The comparison happens on plain
    values only: a case is right when the function returned a genuine int (NumPy integers are
    converted by the harvesting code; bools are refused) equal to the reference's result.
    `reference` is "module:function"; it is called with the same arguments, here, in the grader.
    A function that raises NotImplementedError on every case (the generated stub) is Not attempted.
    While the cases run, the functions named in `blocked` (the reference and its helpers) raise
    instead of answering, so `return relative_position_bucket(...)` earns nothing; see
    `t5lesson.grading.harvest.blocking`.
    `cases` are what `check()` runs in the notebook; they ship with the package, so the learner
    has them. The grader runs others: `hidden` names a recipe that draws cases of the same kinds
    (same topics, same configurations) with fresh numbers from the instructor's seed (`drawn`).
    """

    reference: str = ""
    cases: tuple[Case, ...] = ()
    case_timeout: float = 1.0
    blocked: tuple[str, ...] = ()  # "module:attribute" made to raise while the learner's code runs
    hidden: str = ""  # "module:function"(rng) -> the grading cases: `cases`' recipe, its numbers drawn
    # of `blocked`, what stays usable until this answer is read, because other questions of the
    # exercise are answered with it (every other target is blocked from the run's first cell on)
    open_until_read: tuple[str, ...] = ()
    drawn_cases: bool = False  # set by `drawn`: the cases are hidden, so no message echoes the learner's text
    kind = "code"
    answer_kind = "a function"  # what the learner's name should hold, in messages

    def not_attempted(self) -> Outcome:
        return self.outcome(NOT_ATTEMPTED, 0, f"write the body of {self.name} in the answer cell.")

    def harvest_spec(self) -> dict:
        return {"id": self.id, "kind": "code", "name": self.name, "timeout": self.case_timeout,
                "cases": [c.plain() for c in self.cases], "blocked": list(self.blocked)}

    def drawn(self, rng: Any) -> Code:
        """This question with the cases the grader uses: `hidden`'s recipe run on `rng` (a NumPy
        Generator seeded from the instructor's secret, see `Exercise.drawn`); their expected
        results (`expected`) are computed here, in the grader's process, when first asked for
        (the grader asks while the first kernels run). The cases `check()` runs stay `cases`."""
        if not self.hidden:
            return self
        return replace(self, cases=tuple(resolve(self.hidden)(rng)), drawn_cases=True)

    @property
    def known_words(self) -> frozenset:
        """Names this question itself uses (the learner's function, the reference's parameters): an
        error on a hidden case may show Python's words about a signature only when they name these."""
        import inspect

        try:
            parameters = set(inspect.signature(resolve(self.reference)).parameters)
        except (ValueError, TypeError, ImportError, AttributeError):
            parameters = set()
        return frozenset(parameters | {self.name})

    def reference_results(self) -> list:
        """The reference's result for every case, as it returns them, computed in this process."""
        function = resolve(self.reference)
        return [function(*c.args, **dict(c.kwargs)) for c in self.cases]

    def expect(self, result):
        """One reference result in the form `problem` compares with (here: an int)."""
        return int(result)

    @cached_property
    def expected(self) -> tuple[Any, ...]:
        """What every case should give, computed once in this process."""
        return tuple(self.expect(result) for result in self.reference_results())

    def problem(self, want, got: dict) -> str | None:
        """The per-case check: None if the case's result is right, else what is wrong with it.

        Here the result must be a genuine int equal to the reference's; kinds whose answers are
        structures or floats (`t5lesson.grading.questions.structured`) override this, `expect` and
        `_wrong_case`, and nothing else.
        """
        value = got.get("ok")
        if isinstance(value, dict) and value.get("t") == "int" and type(value.get("v")) is int:
            return None if value["v"] == want else f"returned {value['v']}, which is not right"
        return f"returned {describe(value)}; it should return an int"

    def _wrong_case(self, where: str, want, got: dict) -> str:
        """The sentence for a case that ran and returned a wrong answer (hints are hint()'s job)."""
        return f"{where} {self.problem(want, got)}."

    def score(self, record) -> Outcome:
        if missing(record):
            return self.not_attempted()
        if record.get("status") == "not_callable":
            what = describe(value_of(record))
            return self.outcome(INCORRECT, 0, f"{self.name} should be {self.answer_kind}, but it is {what}.")
        results = record.get("cases")
        if record.get("status") != "ran" or not isinstance(results, list) or len(results) != len(self.cases):
            return self.outcome(ERROR, 0, f"the results of {self.name} could not be read back.")
        if all(isinstance(r, dict) and r.get("not_implemented") for r in results):
            return self.not_attempted()

        right, failed = 0, []
        for case, want, got in zip(self.cases, self.expected, results, strict=True):
            if isinstance(got, dict) and "ok" in got and self.problem(want, got) is None:
                right += 1
            else:
                failed.append((case, want, got))
        total = len(self.cases)
        if right == total:
            return self.outcome(CORRECT, 1, f"all {total} cases right.")
        return replace(self._verdict(right, total, failed), blocked=self.blocked_hits(results))

    def owns_target(self, hit: str) -> bool:
        """Whether `hit` ("module:Class.function", as a blocked function names itself) is one of the
        functions this question's `blocked` targets ("module:path", "module:Class.*", "module:*")."""
        module, _, path = hit.partition(":")
        for target in self.blocked:
            t_module, _, t_path = target.partition(":")
            if module != t_module or not path:
                continue
            if t_path in (path, "*") or (t_path.endswith(".*") and path.startswith(t_path[:-1])) \
                    or path.startswith(t_path + "."):
                return True
        return False

    def blocked_hits(self, results: list) -> tuple[str, ...]:
        """The blocked references the cases called, as the records carry them (never read from a
        message): each a well-formed target (`records.BLOCKED_TARGET`) among this question's own."""
        hits = {r["blocked"] for r in results if isinstance(r, dict) and isinstance(r.get("blocked"), str)}
        return tuple(sorted(h for h in hits if BLOCKED_TARGET.fullmatch(h) and self.owns_target(h)))

    def _verdict(self, right: int, total: int, failed: list) -> Outcome:
        """The outcome when some cases failed ((case, want, got) each, in order): partial credit,
        and here the first failed case explained, plus the first one that raised if that is another."""
        errors = [f for f in failed if isinstance(f[2], dict) and ({"error", "timeout", "blocked"} & f[2].keys())]
        first_miss, first_error = failed[0], (errors[0] if errors else None)
        if right == 0 and first_error is not None and first_error == first_miss:
            return self.outcome(ERROR, 0, self._explain(*first_error))
        status = PARTIAL if right else INCORRECT
        message = f"{right} of {total} cases right. {self._explain(*first_miss)}"
        if first_error is not None and first_error != first_miss:
            message += f" Also: {self._explain(*first_error)}"
        return self.outcome(status, Fraction(right, total) * WRONG_AT_MOST, message)

    def _case_name(self, case: Case) -> str:
        """How a message names a case: the call, and what the case exercises."""
        call = case.call_text(self.name)
        return f"{call} ({case.topic})" if case.topic else call

    def _run_failure(self, where: str, got) -> str | None:
        """The sentence for a case that produced no value (no result, timeout, exception), else None."""
        if not isinstance(got, dict):
            return f"{where}: no result."
        if got.get("timeout"):
            return f"{where} took longer than {self.case_timeout:g} s."
        if got.get("skipped"):
            return f"{where} was not run: earlier cases were too slow."
        if got.get("not_implemented"):
            return f"{where} raised NotImplementedError."
        place = f" (in {got['where']})" if got.get("where") else ""
        if "blocked" in got:  # worded here, from the target the record carries (see `blocked_sentence`)
            return f"{where} raised {blocked_sentence(got['blocked'])}{place}."
        if "error" in got:
            return f"{where} raised {_error_shown(got['error'], self.drawn_cases, self.known_words)}{place}."
        return None

    def _explain(self, case: Case, want, got) -> str:
        """One sentence about a failed case: why it gave no value, or what is wrong with the value."""
        where = self._case_name(case)
        failure = self._run_failure(where, got)
        return failure if failure is not None else self._wrong_case(where, want, got)


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


def _error_shown(error: str, hidden: bool, known_words=frozenset()) -> str:
    """What a message shows of an error the learner's code raised ("ValueError: bad shape"). On a
    hidden case only a built-in exception's name, or Python's own words for a call that does not fit
    a signature, naming nothing but `known_words`: a message of the learner's making (or a class
    named so) could carry the case out of the run, to be answered at home and replayed."""
    if not hidden:
        return error
    error = str(error)
    if any(shape.fullmatch(error) for shape in _SHAPES):
        return error
    signature = _SIGNATURE.fullmatch(error)
    if signature:
        names = set(re.findall(r"'(\w+)'", error)) | {signature.group(1).split(".")[-1]}
        if names <= known_words:
            return error
    name = error.split(":", 1)[0].strip()
    known = isinstance(getattr(builtins, name, None), type) and issubclass(getattr(builtins, name), BaseException)
    return name if known else "an exception of its own class"


@dataclass(frozen=True)
class FreeText(Question):
    """Prose for the instructor, collected and never auto-scored.

    The answer lives in a Markdown cell of the notebook (role "answer"), so the grader reads it
    from the submitted file itself; `name` is that cell's name. `rubric` lists the elements of a
    good answer with their points, (element, points) pairs summing to the question's points; it
    is printed in the grader's free_text.csv for whoever marks the answers.

    `checklist` says the same elements in the learner's words, one question per rubric element
    ("Does your answer say ...?"); `self_check` shows them once the learner has written an
    answer, so a learner working alone can hold the answer against them. Without a checklist the
    rubric's own elements are shown. Nothing is marked: the instructor's marking (`score`, in the
    grader) does not change.
    """

    placeholder: str = "_Write your answer here._"
    rubric: tuple[tuple[str, float], ...] = ()
    checklist: tuple[str, ...] = ()
    kind = "free text"
    auto_scored = False

    def visible_texts(self) -> tuple[str, ...]:
        """What a learner can read beside the question: an answer copied from these is not the learner's."""
        return (*(element for element, _ in self.rubric), *self.checklist, *self.hints)

    def lacks_substance(self, text: str) -> str | None:
        """None when `text` is an attempt with substance (`substance.py`), else what it lacks."""
        return lacks_substance(text, self.placeholder, self.visible_texts())

    def self_check(self, text: str) -> Outcome:
        """What `check("qN")` prints for a free-text answer: Not attempted, or the questions to hold it against."""
        if not text.strip() or text.strip() == self.placeholder.strip():
            return Outcome(self.id, NOT_ATTEMPTED, 0.0, float(self.points),
                           "write your answer in the Markdown cell below the question, save the notebook "
                           "(check reads the saved file), and run check again.")
        missing = self.lacks_substance(text)
        if missing:
            return Outcome(self.id, NOT_ATTEMPTED, 0.0, float(self.points), missing)
        elements = self.checklist or tuple(element for element, _ in self.rubric)
        lines = [f"  - ({format_points(points)} pt{'' if points == 1 else 's'}) {element}"
                 for element, (_, points) in zip(elements, self.rubric, strict=True)]
        return Outcome(self.id, SUBMITTED, 0.0, float(self.points),
                       f"your instructor marks this answer ({format_points(self.points)} points); check() does "
                       "not. Hold your answer against these questions:\n" + "\n".join(lines))

    def harvest_spec(self) -> dict:
        return {}

    def rubric_text(self) -> str:
        """The rubric on one line: "1 pt: names both changes; 1 pt: ..."."""
        return "; ".join(f"{format_points(points)} pt{'' if points == 1 else 's'}: {element}"
                         for element, points in self.rubric)

    def score(self, record) -> Outcome:
        text = record.get("text", "") if isinstance(record, dict) else ""
        if not text.strip() or text.strip() == self.placeholder.strip():
            return Outcome(self.id, NOT_ATTEMPTED, 0.0, float(self.points), "write your answer in the Markdown cell.")
        missing = self.lacks_substance(text)
        if missing and "repeats" not in missing:  # a placeholder: nothing for the instructor to read
            return Outcome(self.id, NOT_ATTEMPTED, 0.0, float(self.points), missing)
        note = f" Note for the marker: {copied_share(text, self.visible_texts()):.0%} of it repeats the rubric, " \
               "checklist or hints word for word." if missing else ""
        return Outcome(self.id, SUBMITTED, 0.0, float(self.points),
                       "your instructor reads free-text answers; check() cannot mark them." + note)
