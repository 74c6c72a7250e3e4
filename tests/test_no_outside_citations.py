"""Nothing in the repository points learners at material they do not have.

Lessons, the package, the tests and the README may cite papers and public source files, but not
course-planning documents that live outside this repository. This test scans every tracked text
file (this file excepted, since it has to name what it looks for).
"""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("COURSE.md", "../shared", "seed material", "seed card")


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file below the root
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    this = str(Path(__file__).resolve().relative_to(ROOT))
    return [n for n in names if n != this and (ROOT / n).is_file()]


def test_no_file_cites_material_outside_the_repository():
    hits = []
    for name in tracked_files():
        text = (ROOT / name).read_bytes().decode("utf-8", errors="ignore")
        hits += [f"{name}: {word!r}" for word in FORBIDDEN if word.lower() in text.lower()]
    assert not hits, "cites material learners do not have:\n" + "\n".join(hits)

