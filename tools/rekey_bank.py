"""Recompute a bank module's stored keys with the exercise id in the salt, in place.

    .venv/bin/python tools/rekey_bank.py t5lesson/exercises/ex06_t5_layer.py

For every multiple-choice and numeric question of the module's exercise it finds, by trying
answers (option sets, whole numbers, and float grid points out to a few million steps), the
answer behind each stored key and feedback key under the old salt (question id only), and
writes the key of that answer under the new salt (`answer_hash(qid, answer, exercise_id)`).
Then add `salted=True` to the module's `Exercise(...)`. Stops with an error, changing nothing,
if a key's answer is not found.
"""
from __future__ import annotations

import importlib
import itertools
import re
import sys
from pathlib import Path

from t5lesson.grading.questions.kinds import MultipleChoice, Numeric, answer_hash


def _candidates(question):
    if isinstance(question, MultipleChoice):
        for size in range(1, len(question.options) + 1):
            for letters in itertools.combinations(sorted(question.options), size):
                yield "".join(letters)
        return
    for n in itertools.count():
        if n > 4_000_000:
            return
        yield str(n)
        if n:
            yield str(-n)


def rekey(path: Path) -> int:
    module_name = "t5lesson.exercises." + path.stem
    exercise = importlib.import_module(module_name).EXERCISE
    if exercise.salted:
        print(f"{path}: already salted")
        return 0
    text = path.read_text()
    new_of = {}
    for question in exercise.questions:
        if not isinstance(question, (MultipleChoice, Numeric)):
            continue
        wanted = {question.key, *question.feedback}
        found = {}
        for answer in _candidates(question):
            digest = answer_hash(question.id, answer)
            if digest in wanted:
                found[digest] = answer
                if len(found) == len(wanted):
                    break
        missing = wanted - set(found)
        if missing:
            raise SystemExit(f"{path}: {question.id}: no answer found for {sorted(missing)}")
        for old, answer in found.items():
            new_of[old] = answer_hash(question.id, answer, exercise.id)
    for old, new in new_of.items():
        assert len(re.findall(old, text)) == 1, (path, old)
        text = text.replace(old, new)
    path.write_text(text)
    print(f"{path}: {len(new_of)} keys recomputed; now add salted=True to its Exercise(...)")
    return 0


if __name__ == "__main__":
    for name in sys.argv[1:]:
        rekey(Path(name))
