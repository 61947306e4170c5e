"""Fairness of an edition's pages: representative impressions estimated from page position, the
counts the publisher share cap reads, and the concentration index of a cycle's pages.

Position curve: a card at rank ``r`` of a page is worth ``1 / log2(r + 1)`` of the lead card's impressions (the
discount of DCG, the standard curve of ranked-list evaluation): rank 1 = 1.0, 2 = 0.63, 3 = 0.5, 10 = 0.29,
30 = 0.20. Readers scan a page from the top, so a slot's exposure falls with its rank, steeply at first and
slowly further down; counting every slot alike (the earlier rule) let a publisher holding the leads of every page
look as small as one holding the bottoms. Every page of an edition uses the same curve (the ranker sees no
per-page traffic, so the top page and a section page count alike).

Cap counts: per cycle, the representative of each slot of each page adds its weight to its *ownership group*
(publishers.json ``owner``; a publisher without one is its own group: sister sites share one cap), summed per
edition and UTC day in ``EditionMemory.share_counts`` / ``share_total``. The cap (representatives.py): a group
above ``publisher_share_cap`` (10 %) of the day's weight, once the edition has counted
``share_cap_min_impressions`` (200, in these weighted units: ~2 cycles of a full edition), is passed over for the
next hour wherever the story has another group's article.

Concentration: the pool document (the edition's manifest of the cycle) carries ``concentration``: ``index``, the
Herfindahl-Hirschman index over the publishers' shares of this cycle's position-weighted impressions (sum of
squared shares: 1/n for n equal publishers, 1.0 for one publisher on every slot; antitrust practice reads above
0.25 as highly concentrated), ``groups_index`` the same over ownership groups, ``day_groups_index`` over the
day's cap counts so far, ``publishers`` the number of publishers with an impression and ``capped`` the groups
the cap passes over this hour (``newsroom fairness`` reads it to say a close call was lost to the cap).
"""

from __future__ import annotations

import math

import numpy as np


def position_weight(rank: int) -> float:
    """Estimated impressions of a card at ``rank`` (1 = the lead) relative to the lead's."""
    return 1.0 / math.log2(rank + 1)


_WEIGHTS = np.array([0.0] + [position_weight(r) for r in range(1, 1025)])  # ranks past 1,024 weigh as 1,024


def herfindahl(counts: dict) -> float:
    """Sum of squared shares (0 when nothing was counted)."""
    total = sum(counts.values())
    return sum((c / total) ** 2 for c in counts.values()) if total > 0 else 0.0


def count_impressions(book, memory, shown: list) -> dict:
    """Adds the position weights of ``shown`` (``(rank, representative article row)`` of every slot of every page
    of the cycle) to the day's cap counts per ownership group; returns the cycle's ``concentration``."""
    by_pub, by_group = shown_weights(book, shown)
    add_counts(memory, by_group)
    counts = memory.share_counts
    return {
        "index": round(herfindahl(by_pub), 6),
        "groups_index": round(herfindahl(by_group), 6),
        "day_groups_index": round(herfindahl(counts), 6),
        "publishers": len(by_pub),
        "capped": tuple(memory.capped),  # the groups the share cap passes over this hour (newsroom fairness)
    }


def shown_weights(book, shown: list) -> tuple[dict, dict]:
    """The position weights of ``shown`` (as :func:`count_impressions` takes it) per publisher and per ownership
    group."""
    by_pub: dict[str, float] = {}
    by_group: dict[str, float] = {}
    if shown:
        ranks, reps = np.array(shown, np.int64).T
        per_row = np.bincount(
            book.articles.publisher[reps], weights=_WEIGHTS[np.minimum(ranks, _WEIGHTS.size - 1)]
        )  # one pass per cycle, not per slot
        groups, pub_ids = book.publisher_group_names(), book.publishers.id
        for r, w in zip(np.flatnonzero(per_row).tolist(), per_row[per_row > 0].tolist()):
            by_pub[pub_ids[r]] = w
            by_group[groups[r]] = by_group.get(groups[r], 0.0) + w
    return by_pub, by_group


def add_counts(memory, by_group: dict, times: int = 1) -> None:
    """Add ``by_group`` to the day's cap counts ``times`` times over, as that many cycles showing the same slots
    would (the same additions in the same order: the same floats)."""
    counts, total, items = memory.share_counts, memory.share_total, list(by_group.items())
    for _ in range(times):
        for g, w in items:
            counts[g] = counts.get(g, 0.0) + w
            total += w
    memory.share_total = total
