"""The instructor's guide works as written on the three sample submissions kept here."""
import csv
import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "sample_class"


def test_readme_grading_command_on_sample_class(tmp_path):
    readme = (ROOT / "README.md").read_text()
    assert "python -m t5lesson.grading.grade tests/sample_class --out /tmp/report" in readme
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SAMPLES.glob("*.ipynb")}
    out = tmp_path / "report"
    result = subprocess.run([sys.executable, "-m", "t5lesson.grading.grade", str(SAMPLES), "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert {s: (r["total"], r["status"]) for s, r in rows.items()} == {
        "ada": ("14", "graded"), "ben": ("11.25", "graded"), "cy": ("0", "graded")}
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["ada.md", "ben.md", "cy.md"]
    assert (out / "free_text.csv").exists()
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SAMPLES.glob("*.ipynb")}
    assert after == before
