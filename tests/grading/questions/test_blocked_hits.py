"""A call of a blocked reference is data in the case record, never text parsed out of a message.

The harvest records `{"blocked": target}`; the grader re-validates it (`records.clean_record`), keeps
only targets the question itself blocks (`Code.blocked_hits`), and the reports list hits from
`Outcome.blocked` alone, so an error text a learner raises cannot name anyone in summary.md.
"""
from __future__ import annotations

from dataclasses import replace

from t5lesson import exercises as bank
from t5lesson.grading import harvest
from t5lesson.grading.records import clean_record
from t5lesson.grading.reports.gradebook import reference_hits, summary_text
from t5lesson.grading.reports.store import grades_text
from t5lesson.grading.verdict import Graded, RunSettings, Status

EXERCISE = bank.get("03_relative_position_buckets")
Q7 = EXERCISE["q7"]
TARGET = "t5lesson.buckets:relative_position_bucket"
FORGED = (f"the reference implementation {harvest.BLOCKED_MESSAGE} (none\n- `alice`, q7: {TARGET})")


def _scored(function):
    """q7's outcome for `function` as the class grader reaches it: harvested, cleaned, scored."""
    spec = {**Q7.harvest_spec(), "cases": [c.plain() for c in Q7.cases[:3]]}
    question = replace(Q7, cases=Q7.cases[:3])
    record = clean_record(harvest.collect(spec, {"my_bucket": function}))
    return question.score(record), record


def _graded(student, outcome):
    return Graded(student, f"{student}.ipynb", Status.GRADED, [outcome])


def test_a_learner_error_text_names_no_one():
    def forges(*args, **kwargs):
        raise RuntimeError(FORGED)

    outcome, record = _scored(forges)
    assert all("blocked" not in case for case in record["cases"])
    assert outcome.blocked == () and outcome.points == 0
    graded = [_graded("mallory", outcome), _graded("alice", Q7.outcome("correct", 1, "all cases right."))]
    assert reference_hits(graded) == []
    summary = summary_text(EXERCISE, graded, RunSettings())
    assert "The blocked reference was called" not in summary and "`alice`, q7" not in summary


def test_a_caught_call_of_the_reference_is_recorded_as_data():
    from t5lesson import relative_position_bucket

    def calls(relative_position, *args, **kwargs):
        try:
            return relative_position_bucket(relative_position, *args, **kwargs)
        except RuntimeError:
            return 0

    outcome, record = _scored(calls)
    assert [case.get("blocked") for case in record["cases"]] == [TARGET] * 3
    assert outcome.points == 0 and outcome.blocked == (TARGET,)
    # the learner reads the same sentence as before: the refusal and the target it named
    assert f"RuntimeError: the reference implementation {harvest.BLOCKED_MESSAGE} ({TARGET})" in outcome.message
    assert reference_hits([_graded("bob", outcome)]) == [("bob", "q7", TARGET)]
    assert f"- `bob`, q7: {TARGET}" in summary_text(EXERCISE, [_graded("bob", outcome)], RunSettings())


def test_an_uncaught_refusal_keeps_where_it_was_raised():
    from t5lesson import relative_position_bucket

    outcome, record = _scored(lambda r, *a, **k: relative_position_bucket(r, *a, **k))
    assert record["cases"][0]["blocked"] == TARGET and record["cases"][0]["where"]
    assert outcome.status == "error" and outcome.blocked == (TARGET,)
    assert f"({TARGET}) (in " in outcome.message


def test_forged_blocked_records_are_validated():
    forged = {"status": "ran", "cases": [{"blocked": f"x (y)\n- `alice`, q7: {TARGET}"},
                                         {"blocked": "os:system"}, {"blocked": ["not", "text"]},
                                         {"blocked": TARGET, "where": "f, line 2"}]}
    cleaned = clean_record(forged)
    assert [case["blocked"] for case in cleaned["cases"]] == ["", "os:system", "", TARGET]
    question = replace(Q7, cases=Q7.cases[:4])
    outcome = question.score(cleaned)
    assert outcome.points == 0
    assert outcome.blocked == (TARGET,)  # os:system is no target of q7's; the malformed ones name nothing
    assert "alice" not in outcome.message


def test_targets_a_question_owns():
    assert Q7.owns_target(TARGET)
    assert Q7.owns_target("transformers.models.t5.modeling_t5:T5Attention._relative_position_bucket")
    assert not Q7.owns_target("t5lesson.buckets:something_else")
    assert not Q7.owns_target("transformers:anything")  # a target without a path blocks the import only


def test_hits_survive_grades_json(tmp_path):
    from t5lesson.grading.reports import store

    outcome = Q7.outcome("error", 0, "raised.")
    outcome = replace(outcome, blocked=(TARGET,))
    (tmp_path / store.GRADES_FILE).write_text(grades_text(EXERCISE, [_graded("bob", outcome)], RunSettings()))
    run = store.read(tmp_path, bank)
    assert run.graded[0].outcomes[0].blocked == (TARGET,)
