"""Notebook 00's one hint(): the practice question's hints and the your-turn cell's, by name."""
from t5lesson.check import checker
from t5lesson.lessons import your_turn as yt
from t5lesson.lessons.start_here import weight_of_b


def test_one_hint_serves_the_question_and_the_your_turn_cell(capsys):
    check, hint = checker("00_start_here")
    hint("weight_of_b")
    hint("q1")
    hint("no_such_name")
    out = " ".join(capsys.readouterr().out.split())
    assert f"weight_of_b, hint 1 of {len(yt.turn('weight_of_b').hints)}:" in out
    assert "q1 hint 1/2" in out and "is not a question here" not in out
    assert "'no_such_name' is neither a question here (q1) nor a your-turn cell" in out


def test_weight_of_b_is_key_bs_softmax_weight():
    assert weight_of_b(0.0) == 0.5 and abs(weight_of_b(3.0) - 0.952574) < 1e-6
    assert abs(weight_of_b(-3.0) + weight_of_b(3.0) - 1) < 1e-12
