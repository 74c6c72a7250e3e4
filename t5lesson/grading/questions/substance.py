"""When a free-text answer counts as an attempt: enough words of its own, not filler, not a paste.

"Submitted" (and the self-check questions it unlocks) should mean the learner tried; the numbers
below are deliberately low, so one honest sentence passes. docs/grading.md ("FreeText") says
what is counted and why.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

MIN_WORDS = 8
MIN_DISTINCT = 6
SHINGLE = 5
COPIED_SHARE = 0.5
FILLER = frozenset("""todo tbd tba fixme xxx idk dunno n/a na none nothing answer here later see above below
lorem ipsum dolor sit amet asdf qwerty test testing placeholder write your something blah etc""".split())
_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_MARKUP = re.compile(r"`[^`]*`|\$[^$]*\$|<[^>]+>|[*_#>|~\[\]()]")


def words(text: str) -> list[str]:
    """The words of a Markdown text, lower case, code spans and formulas left out."""
    return [w.lower() for w in _WORD.findall(_MARKUP.sub(" ", text))]


def _shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[k:k + SHINGLE]) for k in range(len(tokens) - SHINGLE + 1)}


def copied_share(text: str, sources: Iterable[str]) -> float:
    """The share of the answer's runs of SHINGLE words that appear word for word in `sources`."""
    own = _shingles(words(text))
    if not own:
        return 0.0
    seen = set[tuple[str, ...]]().union(*(_shingles(words(source)) for source in sources))
    return len(own & seen) / len(own)


def lacks_substance(text: str, placeholder: str = "", visible: Iterable[str] = ()) -> str | None:
    """None for an attempt with substance; else a sentence telling the learner what is missing."""
    tokens = words(text.replace(placeholder, " ") if placeholder else text)
    meaningful = [w for w in tokens if w not in FILLER]
    if len(meaningful) < MIN_WORDS or len(set(meaningful)) < MIN_DISTINCT:
        return ("this does not read as an answer yet (a few words or a placeholder). Write what you would say "
                "in a sentence or two, in your own words; then save and run check again.")
    share = copied_share(text, visible)
    if share > COPIED_SHARE:
        return (f"{share:.0%} of this repeats, word for word, text the course shows beside the question (its "
                "rubric, checklist or hints). Say it in your own words; your instructor marks your reasoning.")
    return None
