"""Where what bubblewrap starts gets no capability, the grader refuses in one sentence, never with weaker walls.

That is the case under AppArmor's `bwrap-userns-restrict` profile (its `unpriv_bwrap` part denies every
capability to bwrap's children), which some Ubuntu machines enable: there the fork server cannot make
each kernel's own namespaces. This machine has no AppArmor, so the test makes the same loss with
bwrap's own `--cap-drop ALL` (docs/grading.md, "Isolation, honestly").
"""
import pytest
from isolation_helpers import REQUIRED, WHY_NOT

from t5lesson.grading.sandbox import namespaces


def _without_capabilities(command):
    def bwrap_dropping_all(*args, **kwargs):
        argv = command(*args, **kwargs)
        at = argv.index("--cap-add")
        return argv[:at] + ["--cap-drop", "ALL"] + argv[at + 2:]
    return bwrap_dropping_all


def test_no_capability_inside_bubblewrap_is_refused_with_its_cause(monkeypatch):
    if WHY_NOT is not None:
        if REQUIRED:
            pytest.fail(f"T5LESSON_REQUIRE_ISOLATION=1 but kernels cannot be isolated here: {WHY_NOT}")
        pytest.skip(f"kernels cannot be isolated here: {WHY_NOT}")
    monkeypatch.setattr(namespaces, "command", _without_capabilities(namespaces.command))
    why = namespaces.probe()
    assert why is not None and "cannot make the kernels' namespaces" in why
    assert "AppArmor on Ubuntu" in why and "Operation not permitted" in why
    assert "\n" not in why and "Traceback" not in why
