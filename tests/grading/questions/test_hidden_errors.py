"""On a hidden case, feedback shows of the learner's error only what cannot carry the case out of the run.

A built-in exception's name always; Python's own words about a call that does not fit a signature
when every name in them is one the question uses; a library's words about shapes, whose only
variable parts are small sizes. Never the learner's own message, nor a class named after the case.
On the public cases `check()` runs, the whole text is shown as before.
"""
from __future__ import annotations

import pytest

from t5lesson import exercises as bank
from t5lesson.grading.questions.kinds import _error_shown

KNOWN = frozenset({"forward", "key_value_states", "my_bucket", "relative_position"})


@pytest.mark.parametrize("error, shown", [
    ("RuntimeError: CASE(-17, True, 32, 128)", "RuntimeError"),
    ("ValueError", "ValueError"),
    ("CASE_999017_32_128", "an exception of its own class"),
    ("Leak: 760604 72863853", "an exception of its own class"),
    ("TypeError: forward() got an unexpected keyword argument 'key_value_states'",
     "TypeError: forward() got an unexpected keyword argument 'key_value_states'"),
    ("TypeError: forward() got an unexpected keyword argument 'seed_760604'", "TypeError"),
    ("TypeError: case_760604() got an unexpected keyword argument 'key_value_states'", "TypeError"),
    ("TypeError: my_bucket() missing 1 required positional argument: 'relative_position'",
     "TypeError: my_bucket() missing 1 required positional argument: 'relative_position'"),
    ("TypeError: forward() got an unexpected keyword argument 'key_value_states' CASE 12", "TypeError"),
    ("RuntimeError: The size of tensor a (7) must match the size of tensor b (5) at non-singleton dimension 3",
     "RuntimeError: The size of tensor a (7) must match the size of tensor b (5) at non-singleton dimension 3"),
    ("RuntimeError: The size of tensor a (760604) must match the size of tensor b (5) at non-singleton dimension 3",
     "RuntimeError"),
])
def test_a_hidden_case_shows_no_text_of_the_learners_making(error, shown):
    assert _error_shown(error, True, KNOWN) == shown
    assert _error_shown(error, False, KNOWN) == error  # a public case: everything, as check() shows it


def test_drawn_questions_are_marked_hidden_and_know_their_words():
    drawn = bank.get("03_relative_position_buckets").drawn("hidden errors")
    q7 = drawn["q7"]
    assert q7.drawn_cases and not bank.get("03_relative_position_buckets")["q7"].drawn_cases
    assert {"my_bucket", "relative_position", "max_distance"} <= q7.known_words
    q4 = bank.get("06_t5_layer").drawn("hidden errors")["q4"]
    assert q4.drawn_cases and "key_value_states" in q4.known_words
    got = {"error": "RuntimeError: CASE(3, True, 32, 128)", "where": "my_bucket, line 2"}
    sentence = q7._explain(q7.cases[0], q7.expected[0], got)
    assert "CASE" not in sentence and sentence.endswith("raised RuntimeError (in my_bucket, line 2).")
