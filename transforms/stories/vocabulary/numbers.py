"""The numbers a headline names its event by: the ages of the people in it ("16-year-old", "Boy, 3,", "14-month-old").

Reads a title; writes a frozenset of keys ``"16y"`` / ``"14m"`` (number and unit: year, month, week, day). English
only for now (other languages give none: neutral).

Why: shootings of one day in different cities read alike in every similarity the writer has (dense, entity and
TF-IDF cosines), and the local reports often name no place the gazetteer knows ("Boy, 17, wounded in Little Village
shooting" against "Two wounded in South Chicago shooting"); the victim's age is what their headlines say instead.
Measured on gva-dev (pairs of one language at most 72 h apart, title ages as here): 23 % of articles name an age;
of the same-event pairs where both do, 86 % share one and 14 % conflict (victim against shooter, an age
corrected); of the different-event pairs, 8 % share one and 92 % conflict. BASIL and MEANTIME headlines name no age,
ECB+ 13 of 496. Evidence that asks for a second opinion (:mod:`transforms.stories.writer.scoring`), not a veto.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen".split()
    )
}
_NUM = r"(\d{1,3}|" + "|".join(_WORDS) + ")"
_AGE = re.compile(r"\b" + _NUM + r"[- ](year|yr|month|week|day)s?[- ]old", re.IGNORECASE)
_PERSON = re.compile(
    r"\b(?:boy|girl|man|woman|teen|teenager|child|toddler|baby|son|daughter|brother|sister|mother|father|mom|dad|"
    r"grandmother|grandfather|student|officer|deputy)s?,? \(?(\d{1,2})\b(?![- ]?(?:year|yr|month|week|day|%|:|\d))",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def ages(title: str) -> frozenset[str]:
    """The ages a headline states, as ``"<number><unit>"`` keys (module docstring)."""
    out = set()
    for n, unit in _AGE.findall(title or ""):
        out.add(f"{int(_WORDS.get(n.lower(), n))}{unit[0].lower()}")
    out.update(f"{int(n)}y" for n in _PERSON.findall(title or ""))
    return frozenset(out)


def relation(a: frozenset, b: frozenset) -> float:
    """+1 when two headlines share an age, -1 when both state ages and none is shared, 0 when either states none."""
    if not a or not b:
        return 0.0
    return 1.0 if a & b else -1.0


def relation_mean(titles_a: list[str], titles_b: list[str]) -> float:
    """The mean :func:`relation` between every headline of ``titles_a`` and every one of ``titles_b``."""
    if not titles_a or not titles_b:
        return 0.0
    a = [ages(t) for t in titles_a]
    b = [ages(t) for t in titles_b]
    if not any(a) or not any(b):
        return 0.0
    return float(np.mean([[relation(x, y) for y in b] for x in a]))
