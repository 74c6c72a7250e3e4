"""Write docs/checks.md's table: for every learner-facing check, the wrong answers it was tried on.

    python tools/check_table.py          # run the harness (tests/checks) and rewrite the table
    python tools/check_table.py --check  # fail when the table's counts of written answers are stale

A row per check: the slips written by hand, the mutants made from the course's answer and how many
of them differential testing proved wrong (the others are equal to the course's answer on every
input and dropped), and the right answers written another way. tests/checks/test_catalogue.py
asserts that every slip and every mutant proven wrong is held and every right answer accepted, so
"held" in the table is "all of them"; `--check` (run by tests/checks/test_table.py) keeps the
counts of written answers in step with the catalogue without running it.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "checks.md"
BEGIN, END = "<!-- check table: begin -->", "<!-- check table: end -->"
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "checks")]


def rows(run: bool) -> list[tuple[str, int, str, int]]:
    """(check id, slips written, mutants 'proven/made' (or '?/made' without running), right variants)."""
    import harness
    from mutants import mutants
    from test_catalogue import CHECKS

    table = []
    for check in sorted(CHECKS, key=lambda c: c.id):
        made = mutants(check.answer, check.mutate, check.max_mutants)
        proven = "?"
        if run:
            proven = 0
            for label, source in made.items():
                try:
                    proven += harness.proven_wrong(check, check.function(source, label)) is not None
                except Exception:  # noqa: BLE001 - a mutant that defines nothing is no answer
                    continue
        table.append((check.id, len(check.wrong), f"{proven} of {len(made)}", len(check.right)))
    return table


def markdown(table) -> str:
    lines = ["| check | slips written, all held | mutants proven wrong (all held) of those made | "
             "right answers written another way, all accepted |", "|---|---|---|---|"]
    lines += [f"| {check} | {slips} | {mutants} | {right} |" for check, slips, mutants, right in table]
    return "\n".join(lines)


def written_counts(text: str) -> dict[str, tuple[str, str, str]]:
    """check id -> (slips, mutants made, right) as the table in `text` states them."""
    found = {}
    for match in re.finditer(r"^\| ([^|]+?) \| (\d+) \| (?:\d+|\?) of (\d+) \| (\d+) \|$", text, re.MULTILINE):
        found[match.group(1)] = match.group(2, 3, 4)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare the written counts, run nothing")
    args = parser.parse_args()
    text = DOC.read_text()
    if args.check:
        want = {check: (str(s), m.split(" of ")[1], str(r)) for check, s, m, r in rows(run=False)}
        have = written_counts(text)
        if want != have:
            stale = sorted(set(want.items()) ^ set(have.items()))
            sys.exit(f"{DOC.name}'s table is stale (run python tools/check_table.py): {stale}")
        return
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    DOC.write_text(f"{head}{BEGIN}\n{markdown(rows(run=True))}\n{END}{tail}")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
