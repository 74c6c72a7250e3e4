"""Your-turn cells: stored blank, each with an answer kept out of the lesson, and the answers flow through.

The slow test fills every your-turn cell with its answer (solutions/your_turn/), runs each lesson to
the end, and requires that every your-turn check says it matches and every other compared output is
the one stored: what the learner writes is what the cells below run on.
"""
import json

import pytest
from your_turn_fill import ANSWERS, LESSONS, answers_for, last_line, printed, your_turn_cells

from t5lesson.lessons.your_turn import MATCHES, NOT_WRITTEN

WITH_TURNS = [p for p in sorted(LESSONS.glob("[0-9]*.ipynb")) if your_turn_cells(json.loads(p.read_text()))]
REQUIRED = ["01", "02", "03", "04", "05", "06", "07", "08"]  # every lesson from 1 to 8 asks the learner to write a step


def test_every_lesson_1_to_8_has_a_your_turn_cell():
    have = {p.name[:2] for p in WITH_TURNS}
    assert not [n for n in REQUIRED if n not in have], f"lessons without a your-turn cell: {set(REQUIRED) - have}"


@pytest.mark.parametrize("path", WITH_TURNS, ids=[p.name for p in WITH_TURNS])
def test_stored_blank_with_an_answer_each(path):
    cells = your_turn_cells(json.loads(path.read_text()))
    answers = answers_for(path.stem)
    where = f"{ANSWERS.name}/{path.stem}.py"
    assert set(cells) == set(answers), f"cells {sorted(cells)} vs answers in {where}: {sorted(answers)}"
    for name, cell in cells.items():
        text = "".join(cell["source"])
        assert "NotImplementedError" in text, f"{name}: stored filled in; a lesson is stored with the stub"
        said = " ".join(printed(cell, []).split())
        assert NOT_WRITTEN in said, f"{name}: the stored check should say it is not written yet"
        assert last_line(answers[name]) == last_line(text), f"{name}: the answer ends differently from the cell"
        assert "NotImplementedError" not in answers[name], f"{name}: the answer still raises"


@pytest.mark.parametrize("path", WITH_TURNS, ids=[p.name for p in WITH_TURNS])
def test_filled_lesson_runs_on_the_learners_code(filled_lessons, path):
    result = filled_lessons[path.name]
    for name, text in result["your_turn"].items():
        said = " ".join(text.split())
        assert MATCHES in said, f"{name}: the answer does not pass its own check: {said[:300]}"
    assert not result["differ"], "outputs below the your-turn cells changed: " + "; ".join(
        f"cell {k}: stored {a[:120]!r}, filled {b[:120]!r}" for k, a, b in result["differ"][:3])


# --- what the check says, case by case (no notebook needed) ---

from t5lesson.lessons import your_turn as yt  # noqa: E402


def _square(x):
    return x * x


def test_not_written_uses_the_course_version(capsys):
    def mine(x):
        raise NotImplementedError("Your turn")

    assert yt.your_turn("sq", mine, _square, [(2,)]) is _square
    assert "sq: not written yet. The cells below use the course's version" in capsys.readouterr().out


def test_wrong_answer_says_which_case_and_keeps_the_course_version(capsys):
    assert yt.your_turn("sq", lambda x: x + x, _square, [(2,), (3,)], hints=["h1", "h2"]) is _square
    out = capsys.readouterr().out
    assert "case 2 of 2 (3): the result is 6, expected 9" in out and 'hint("sq")' in out


def test_error_names_the_line_of_the_cell(capsys):
    def mine(x):
        y = x
        return y[0]  # an int is not subscriptable

    assert yt.your_turn("sq", mine, _square, [(2,)]) is _square
    out = capsys.readouterr().out
    line = mine.__code__.co_firstlineno + 2 - 1  # line numbers are the file's; in a notebook, the cell's
    assert f"raised TypeError (line {line + 1} of your cell)" in out, out


def test_right_answer_is_used_below(capsys):
    mine = lambda x: x**2  # noqa: E731
    assert yt.your_turn("sq", mine, _square, [(2,), (1.5,)]) is mine
    assert "sq: matches the course's version on 2 cases. The cells below use yours." in capsys.readouterr().out


def test_arrays_shapes_and_a_custom_check(capsys):
    import numpy as np

    assert "shape (2,), expected (3,)" in yt.compare_values(np.zeros(2), np.zeros(3))
    assert "differs at index [1]" in yt.compare_values(np.array([0.0, 1.0]), np.array([0.0, 2.0]))
    assert yt.compare_values((np.ones(2), 3), (np.ones(2), 3)) is None
    assert yt.your_turn("t", 1, 2, check=lambda a, b: "the traces part at step 3") == 2
    assert "differs from the course's version on the traces part at step 3" in capsys.readouterr().out


def test_hints_come_one_level_at_a_time(capsys):
    yt.your_turn("sq", lambda x: 0, _square, [(2,)], hints=["first", "second"])
    capsys.readouterr()
    yt.hint("sq")
    yt.hint("sq")
    yt.hint("sq")
    assert capsys.readouterr().out.splitlines() == ["sq, hint 1 of 2: first", "sq, hint 2 of 2: second",
                                                     "sq, hint 2 of 2: second"]


def test_a_function_that_only_calls_the_course_version_is_told_so(capsys):
    helper = _square  # under any name: the check compares the code that runs, not names

    def mine(x):
        return helper(x)

    assert yt.your_turn("sq", mine, _square, [(2,), (3,)]) is _square
    out = " ".join(capsys.readouterr().out.split())
    assert f"sq: {yt.CALLS_COURSE} (_square)" in out and yt.MATCHES not in out, out


def test_an_error_inside_a_check_function_names_its_case(capsys):
    def check(learner, reference):
        with yt.case("3 updates of the toy model"):
            learner(None)

    def mine(x):
        return x + 1

    assert yt.your_turn("step", mine, _square, check=check) is _square
    out = " ".join(capsys.readouterr().out.split())
    assert "raised TypeError" in out and "on 3 updates of the toy model" in out, out


def test_an_error_on_a_case_names_the_case(capsys):
    assert yt.your_turn("sq", lambda x: 1 / x, _square, [(0,), (2,)]) is _square
    out = " ".join(capsys.readouterr().out.split())
    assert "raised ZeroDivisionError" in out and "on case 1 of 2 (0)" in out, out


def test_every_your_turn_cell_has_a_turn_with_hints():
    for name in yt.TURNS:
        spec = yt.turn(name)
        assert (spec.cases is None) != (spec.check is None), f"{name}: a Turn has cases or a check, not both"
        assert len(spec.hints) >= 2, f"{name}: hints come in levels"


def test_hint_for_an_unknown_name_says_what_it_takes(capsys):
    yt.hint("no_such_cell")
    assert 'hint() takes the name in a your-turn cell' in " ".join(capsys.readouterr().out.split())


CODE_IN_A_HINT = __import__("re").compile(
    r"\w\(|\w\[|[^=!<>]=[^=]|\bnp\.|\btorch\.|\bF\.|\.\w+\(|\bdef |\breturn\b|\blambda\b|`")


def test_hints_teach_before_they_tell():
    """Level 1 asks a question or names a concept, with no code; code may come only at the last level."""
    for name in yt.TURNS:
        hints = yt.turn(name).hints
        first = hints[0]
        assert not CODE_IN_A_HINT.search(first), f"{name}: hint 1 holds code: {first!r}"
        assert "?" in first, f"{name}: hint 1 should ask the learner something: {first!r}"


@pytest.mark.parametrize("path", WITH_TURNS, ids=[p.name for p in WITH_TURNS])
def test_a_your_turn_cell_holds_only_the_stub_and_its_checking_call(path):
    """No hints and no course function in the cell: both live in the package, out of sight."""
    import ast

    for name, cell in your_turn_cells(json.loads(path.read_text())).items():
        text = "".join(cell["source"])
        for word in ("hints=", "reference=", "course_", "cases=", "check="):
            assert word not in text, f"{path.name}, {name}: the cell names {word!r}; it belongs in the package"
        last = ast.parse(text).body[-1]
        assert ast.unparse(last) == f"{name} = your_turn('{name}', {name})", \
            f"{path.name}, {name}: the cell should end with {name} = your_turn(\"{name}\", {name})"


def test_a_function_that_changes_its_arguments_cannot_change_the_expected_result(capsys):
    import numpy as np

    def course(values):
        return np.where(values < 0, 0, values).sum()

    def mine(values):  # clobbers its input: the course's version, run after it, would have seen 5 too
        values[values < 0] = 5
        return np.where(values < 0, 0, values).sum()

    assert yt.your_turn("clip", mine, course, [(np.array([1, -1, 2]),)]) is course
    assert "expected 3" in " ".join(capsys.readouterr().out.split())
