"""Text evidence against a merge: two stories of one language whose headlines name different things never merge.

A repair merge joins two stories for good (one becomes the other's alias), and the similarity it is decided on
(dense + entity + TF-IDF cosines of the profiles) is high between two events of one kind on one day: MEANTIME's
Ryanair option on five Boeing 737s and Qatar Airways' Airbus order (13 June 2005, merged in Italian and Dutch and
then linked across languages), ECB+'s pairs of earthquakes or elections of one country. What tells them apart is
what the headlines state: names and numbers. Rule (:func:`disagree`), for two stories that both have bodies:

- a story's *headline keys* are the entity keys (names and numbers, :func:`transforms.stories.vocabulary.text.entities`) that
  the titles of at least half of its originals state;
- the merge is vetoed when both have headline keys, in both directions fewer than half of one's headline keys occur
  anywhere in the other's texts (its members' entity keys), and in one direction none does: each headline names
  things the other story's reports do not mention, one of them nothing they mention. Title-case headlines make
  common words keys ("Attacks", "Gets"), so reports of one event often cover less than half of each other's
  headline; the "none" condition is what keeps them (below).

Measured on the dev files: MEANTIME's two wrong repair merges are vetoed (headline coverage 0.33 one way, 0.0 the
other). On single-article pairs of one language, the rule vetoes 8 of 148 same-event BASIL pairs and 86 % of its
different-event pairs, 80 of 2,728 same-event ECB+ pairs and 98 % of different-event ones (without the "none"
condition: 26 of 148 and 213 of 2,728, for 92 % and 98 %). docs/stories.md has the clustering scores. Not applied to headline-only stories: there every capitalised title
word is a key and the text *is* the headline, so the rule would compare headlines with headlines (on UCI it vetoed
37 of 115 right merges). Joins are not vetoed: a single report's headline often names other things than the
first report's (BASIL's Fox, NYT and HuffPost headlines of one event), and the same rule on joins cost BASIL-dev
B-cubed F1 0.956 -> 0.911 (0.947 when any shared key saves a join) for MEANTIME's one remaining wrong join.

Dates: two texts whose bodies *print* different days as their datelines (:func:`printed_days`; the time of a record
without ``published_at`` is its dateline, ``ArticleFeatures.dated_by_text``) disagree, and that vetoes both a merge
(:func:`disagree`) and a join (:func:`dates_disagree`, in the writer's candidate loop). MEANTIME's "First Airbus A380
delivered" (15 Oct 2007) and "First A380 enters commercial service" (17 Oct 2007) score as one event on every
similarity (docs/stories.md, "Dates known only to the day"); their printed dates are what tells them apart. A date
in metadata is no printed dateline: BASIL's reports of one event are published on different days. Years mentioned
in the bodies disagree between reports of one event (background years: 9 right merges and no wrong one on ECB+ and
BASIL), so they are not evidence here.
"""

from __future__ import annotations

from collections import Counter

from transforms.stories.vocabulary.config import DAY_MS
from transforms.stories.vocabulary.text import title_keys
from transforms.stories.writer.state import Member

HEADLINE_SHARE = 0.5  # a key is a story's headline key when this share of its originals' titles state it
COVERED_SHARE = 0.5  # the merge stands when at least this share of one side's headline keys occur in the other


def headline_keys(members: list[Member]) -> frozenset[str]:
    """Entity keys stated by the titles of at least HEADLINE_SHARE of ``members`` (originals)."""
    counts: Counter = Counter()
    for m in members:
        counts.update(title_keys(m.title, m.entities))
    need = max(1.0, HEADLINE_SHARE * len(members))
    return frozenset(k for k, n in counts.items() if n >= need)


def text_keys(members: list[Member]) -> frozenset[str]:
    """Every entity key of ``members``."""
    return frozenset(k for m in members for k in m.entities)


def printed_days(members: list[Member]) -> frozenset[int]:
    """The days (UTC, days since the epoch) that ``members``' bodies print as their datelines."""
    return frozenset(m.at // DAY_MS for m in members if m.dated_by_text)


def dates_disagree(a: frozenset[int], b: frozenset[int]) -> bool:
    """Whether two sets of printed dateline days (:func:`printed_days`) disagree: both print one, none in common."""
    return bool(a) and bool(b) and not (a & b)


def evidence(members: list[Member]) -> tuple[frozenset[str], frozenset[str], frozenset[int]]:
    """(headline keys, text keys, printed days) of a story's originals, sorted by article id for a deterministic
    count."""
    ms = sorted(members, key=lambda m: m.article_id)
    return headline_keys(ms), text_keys(ms), printed_days(ms)


def covered(head: frozenset[str], text: frozenset[str]) -> bool:
    return len(head & text) >= COVERED_SHARE * len(head)


def disagree(a: tuple, b: tuple) -> bool:
    """Whether the evidence of two stories (:func:`evidence`) vetoes their merge (the rule of the module docstring)."""
    (ha, ta, da), (hb, tb, db) = a, b
    if dates_disagree(da, db):
        return True
    if not ha or not hb:
        return False
    if covered(ha, tb) or covered(hb, ta):
        return False
    return not (ha & tb) or not (hb & ta)
