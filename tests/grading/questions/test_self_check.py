"""check() on free-text answers, and the nudge for a wrong answer check has no sentence for.

A free-text answer lives in a Markdown cell, so `check("qN")` reads it from the saved notebook:
an empty (or placeholder) answer is Not attempted; a written one gets the rubric's elements, in
the learner's words, to compare with, and no mark. The grader's marking of free text is unchanged.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from t5lesson import exercises as bank
from t5lesson.check import Checker
from t5lesson.grading.authoring.notebook_format import cell_info
from t5lesson.grading.check import saved_answer
from t5lesson.grading.questions.kinds import FreeText, MultipleChoice, Numeric, answer_hash
from t5lesson.grading.verdict import INCORRECT, NOT_ATTEMPTED, SUBMITTED

ROOT = Path(__file__).resolve().parents[3]

QUESTIONS = [(bank.get(e), q) for e in bank.exercise_ids() for q in bank.get(e).questions]
FREE_TEXT = [(e, q) for e, q in QUESTIONS if isinstance(q, FreeText)]
IDS = [f"{e.id}-{q.id}" for e, q in FREE_TEXT]


SUBSTANTIVE = ("Without the scale the logits grow with the dimension, so the softmax saturates and its "
               "gradients vanish.")


@pytest.mark.parametrize("exercise, question", FREE_TEXT, ids=IDS)
def test_an_empty_answer_is_not_attempted_and_a_written_one_gets_the_rubric(exercise, question):
    for empty in ("", "   \n", question.placeholder):
        assert question.self_check(empty).status == NOT_ATTEMPTED
    outcome = question.self_check(SUBSTANTIVE)
    assert outcome.status == SUBMITTED and outcome.points == 0
    elements = question.checklist or tuple(element for element, _ in question.rubric)
    assert all(element in outcome.message for element in elements)
    assert outcome.message.count("\n  - ") == len(question.rubric)


@pytest.mark.parametrize("exercise, question", FREE_TEXT, ids=IDS)
def test_a_checklist_has_one_line_per_rubric_element(exercise, question):
    assert not question.checklist or len(question.checklist) == len(question.rubric)
    assert abs(sum(points for _, points in question.rubric) - question.points) < 1e-9


def test_the_graders_marking_of_free_text_is_unchanged():
    question = bank.get("01_unscaled_scores")["q3"]
    assert question.score({"text": SUBSTANTIVE}).status == SUBMITTED
    message = "your instructor reads free-text answers; check() cannot mark them."
    assert question.score({"text": SUBSTANTIVE}).message == message
    assert question.score({"text": question.placeholder}).status == NOT_ATTEMPTED


def _notebook(path, exercise_id, text):
    nb = nbformat.v4.new_notebook()
    nb.metadata["t5lesson"] = {"exercise": exercise_id}
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["t5lesson"] = {"cell": "q3-answer", "question": "q3", "role": "answer"}
    nb.cells = [nbformat.v4.new_markdown_cell("# title"), cell]
    nbformat.write(nb, path)


def test_check_reads_the_saved_answer_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    checker = Checker("01_unscaled_scores")
    checker.check("q3")
    assert "could not find this notebook's saved file" in capsys.readouterr().out

    _notebook(tmp_path / "01_unscaled_scores.ipynb", "01_unscaled_scores", "_Write your answer here._")
    checker.check("q3")
    assert capsys.readouterr().out.startswith("q3: Not attempted: write your answer")

    _notebook(tmp_path / "01_unscaled_scores.ipynb", "01_unscaled_scores", SUBSTANTIVE)
    checker.check("q3")
    out = capsys.readouterr().out
    assert out.startswith("q3: Submitted:") and "Does it say what the added u_b(j-i) does" in out and "[" not in out


def test_check_follows_the_file_jupyter_names(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    renamed = tmp_path / "my copy.ipynb"
    _notebook(renamed, "01_unscaled_scores", SUBSTANTIVE)
    _notebook(tmp_path / "01_unscaled_scores.ipynb", "01_unscaled_scores", "")
    monkeypatch.setenv("JPY_SESSION_NAME", str(renamed))
    Checker("01_unscaled_scores").check("q3")
    assert capsys.readouterr().out.startswith("q3: Submitted:")
    blank = {"__session__": str(tmp_path / "01_unscaled_scores.ipynb")}
    assert saved_answer("01_unscaled_scores", "q3-answer", blank) == ""


def test_another_exercises_notebook_is_not_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    other = tmp_path / "other.ipynb"
    _notebook(other, "02_where_sqrt_d_went", "An answer to another exercise.")
    assert saved_answer("01_unscaled_scores", "q3-answer", {"__session__": str(other)}) is None
    (tmp_path / "01_unscaled_scores.ipynb").write_text("not json")
    assert saved_answer("01_unscaled_scores", "q3-answer", {}) is None


def test_an_answer_given_as_text_is_checked_without_a_file(capsys):
    checker = Checker("02_where_sqrt_d_went")
    checker.check("q1", "The paper gives no reason for it; the code folds the scale into the initial W_q instead.")
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("q1: Submitted:") and "keep apart what the paper says, what the code says" in out
    assert "(nothing)" not in out  # the checklist asks; it does not answer
    checker.check("q1", "")
    assert capsys.readouterr().out.startswith("q1: Not attempted")


SOLVED = [e for e in bank.exercise_ids() if not bank.get(e).practice]


@pytest.mark.parametrize("exercise_id", SOLVED)
def test_every_free_text_answer_cell_is_followed_by_its_check_cell(exercise_id):
    for folder in ("solutions", "exercises"):
        nb = nbformat.read(ROOT / folder / f"{exercise_id}.ipynb", as_version=4)
        infos = [cell_info(c) for c in nb.cells]
        for question in bank.get(exercise_id).questions:
            if isinstance(question, FreeText):
                at = next(i for i, info in enumerate(infos) if info.get("cell") == question.name)
                after = nb.cells[at + 1]
                assert infos[at + 1].get("role") == "check" and infos[at + 1].get("question") == question.id
                assert after.source.strip() == f'check("{question.id}")'


@pytest.mark.parametrize("exercise_id", SOLVED)
def test_the_stored_free_text_checks_show_the_checklist(exercise_id):
    nb = json.loads((ROOT / "solutions" / f"{exercise_id}.ipynb").read_text())
    shown = {"".join(o.get("text", "")).split(":")[0]: "".join(o.get("text", ""))
             for c in nb["cells"] if c.get("metadata", {}).get("t5lesson", {}).get("role") == "check"
             for o in c.get("outputs", [])}
    for question in bank.get(exercise_id).questions:
        if isinstance(question, FreeText):
            assert shown[question.id].startswith(f"{question.id}: Submitted:")
            said = " ".join(shown[question.id].split())  # check() wraps its lines at 88 characters
            assert all(" ".join(line.split()) in said for line in question.checklist)


# --- the nudge for wrong answers check has no sentence for (lesson 0, section 3) --------------

KEYED = [(e, q) for e, q in QUESTIONS if isinstance(q, (MultipleChoice, Numeric))]


def _unrecognised(question):
    if isinstance(question, MultipleChoice):
        for letter in question.options:
            digest = answer_hash(question.id, letter, question.salt)
            if digest != question.key and digest not in question.feedback:
                return letter if not question.multiple else [letter]
        return None
    return 123457 if question.tolerance is None else 12345.6789


@pytest.mark.parametrize("exercise, question", KEYED, ids=[f"{e.id}-{q.id}" for e, q in KEYED])
def test_an_unrecognised_wrong_answer_gets_the_nudge_lesson_0_promises(exercise, question, capsys):
    answer = _unrecognised(question)
    if answer is None:
        pytest.skip("every wrong option has its own feedback")
    checker = Checker(exercise.id)
    assert checker.outcome(question.id, answer).status == INCORRECT
    checker.check(question.id, answer)
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(rf'{question.id}: Incorrect: not this one\. Try again, or run hint\("{question.id}"\)\. '
                        r"\[0/\d+(\.\d+)?\]", line), line


def test_final_hints_leave_a_step():
    """The last hint of these questions used to be the answer itself (a formula, or the first position)."""
    assert "d_model * d_kv" not in bank.get("02_where_sqrt_d_went")["q4"].hints[-1]
    assert "first such query is at position 480" not in bank.get("05_length_generalisation")["q4"].hints[-1]
    last = bank.get("01_unscaled_scores")["q1"].hints[-1]
    assert "added to the score" not in last


@pytest.mark.parametrize("exercise, question", FREE_TEXT, ids=IDS)
def test_a_placeholder_or_a_paste_is_not_submitted(exercise, question):
    """'todo' and its kind are not an attempt; the rubric, checklist or hints pasted back are not the learner's."""
    for filler in ("todo", "TODO: finish this later", "idk", "see above", "answer answer answer answer answer",
                   "test test test test test test test test test", "lorem ipsum dolor sit amet"):
        assert question.self_check(filler).status == NOT_ATTEMPTED, filler
        assert question.score({"text": filler}).status == NOT_ATTEMPTED, filler
    pastes = [" ".join(element for element, _ in question.rubric), " ".join(question.checklist)]
    for paste in filter(None, pastes):
        outcome = question.self_check(paste)
        assert outcome.status == NOT_ATTEMPTED and "own words" in outcome.message, paste[:80]
        marked = question.score({"text": paste})
        assert marked.status == SUBMITTED and "Note for the marker" in marked.message


@pytest.mark.parametrize("exercise, question", FREE_TEXT, ids=IDS)
def test_the_self_check_asks_questions_that_give_nothing_away(exercise, question):
    """The learner sees questions to hold an answer against, none of which restates a rubric element."""
    from t5lesson.grading.questions.kinds import SHINGLE, words

    assert question.checklist, f"{question.id}: no checklist, so the self-check would show the rubric"
    for item, (element, _) in zip(question.checklist, question.rubric, strict=True):
        assert item.rstrip().endswith("?"), f"{question.id}: not a question: {item!r}"
        mine, theirs = words(item), " ".join(words(element))
        runs = [" ".join(mine[k:k + SHINGLE + 1]) for k in range(len(mine) - SHINGLE)]
        assert not [r for r in runs if r in theirs], f"{question.id}: {item!r} restates the rubric"
