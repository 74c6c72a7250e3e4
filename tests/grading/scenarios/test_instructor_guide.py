"""The instructor's guide works as written on the three sample submissions kept here."""
import csv
import hashlib
import subprocess
import sys
from pathlib import Path

from isolation_helpers import ISOLATION_ARGS

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "tests" / "sample_class"


def test_readme_grading_command_on_sample_class(tmp_path):
    readme = (ROOT / "README.md").read_text()
    assert "t5grade grade tests/sample_class --out /tmp/report" in readme
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SAMPLES.glob("*.ipynb")}
    out = tmp_path / "report"
    # exactly the README's command where kernels can be isolated; elsewhere the grader would refuse
    result = subprocess.run([sys.executable, "-m", "t5lesson.grade", "grade", str(SAMPLES), "--out", str(out),
                             *ISOLATION_ARGS],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert {s: (r["total"], r["status"]) for s, r in rows.items()} == {
        "ada": ("14", "graded"), "ben": ("8.22", "graded"), "cy": ("0", "graded")}
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["ada.md", "ben.md", "cy.md"]
    assert (out / "free_text.csv").exists()
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SAMPLES.glob("*.ipynb")}
    assert after == before


def test_the_guide_says_what_is_and_is_not_protected():
    """Brute-forcing hashed keys and reaching the reference cannot be stopped inside the kernel: both are documented."""
    docs = (ROOT / "docs" / "grading.md").read_text()
    section = docs.split("### What the grader guarantees, and what it does not", 1)[1].split("\n### ", 1)[0]
    for needed in ("brute-forced", "importlib.reload", "publish_display_data", "What to do about it", "formula"):
        assert needed in section, needed
    readme = (ROOT / "README.md").read_text()
    guide = readme.split("## Instructor's guide", 1)[1]
    assert "brute-force" in guide and "docs/grading.md#what-the-grader-guarantees-and-what-it-does-not" in guide
    harvest = (ROOT / "t5lesson" / "grading" / "harvest.py").read_text()
    assert "nothing more" not in harvest  # it used to claim a notebook could only spoil its own answers
