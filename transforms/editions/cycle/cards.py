"""The article cards of one ranking cycle of one edition (transforms/editions/cycle/run.py): built once per article
and cycle, kept in the edition's CycleCache while the article's first-seen time, version and labels are the same,
and shared by the editions whose books have the same tables (:data:`SHARED_CARDS`).

:class:`Cards` computes the label bits of every card the cycle may show in one batch (the page and pool keys of
run.py compare them) and builds a card only when a page or pool entry that is not reused asks for it.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.arrays import unique_ints
from transforms.editions.cycle.context import CycleCache
from transforms.editions.cycle.coverage import article_card
from transforms.editions.cycle.kept import LineageMemo
from transforms.editions.cycle.representatives import LABELS_BY_CODE, label_codes

FACT_CHECK_BIT = 1 << LABELS_BY_CODE.index(("fact_check",))  # in label_codes' bits

# The cards made in a lineage's scope (kept.LineageMemo), one dict per scope: by card key (2 x article row + with
# lede) and what :meth:`Cards.get` checks a card by (first seen, version, labels: the region's 'local' among them).
# A card reads the article's stored card and those alone, so the editions whose books have the same tables share
# it: a real minute puts the same new stories on the pages of the 15 English editions, whose cards each edition
# built again (~12,000 cards a cycle, most of them new to an edition's pages). The dicts only grow while their
# scope is kept (single dict operations: a race makes a card twice, never a wrong one) and no card in them is
# written. Budget: scopes, one dict each (a large book's lineage moves with every fold: a scope holds a minute of a
# language's cards; at 300,000 stories ~6,000 cards a minute across languages, ~1 KB each: ~10 MB for 64 scopes).
SHARED_CARDS = LineageMemo(kept=64)


class Cards:
    """Article cards of one cycle, built once per article with labels computed for all needed articles at once.
    The label bits of every card the cycle may show are computed in one batch (:meth:`codes_of`: the document
    keys compare them); what a cached card must match (first seen, version, labels) is looked up per article only
    when a card is asked for (a page or pool entry that is not reused: a few hundred per edition and cycle, of
    ~2,500 articles)."""

    def __init__(self, book: StoryBook, region: str, cache: CycleCache, page_slots, pool_reps: np.ndarray):
        # page_slots: run.PageSlots (not imported: run imports this module)
        needed = [rep for chosen in page_slots.by_section.values() for _, _, rep, _, _ in chosen]
        needed += [a for chosen in page_slots.by_section.values() for _, _, _, sup, _ in chosen for a in sup]
        arts = unique_ints(np.concatenate([np.array(needed, np.int64), np.asarray(pool_reps, np.int64)]))
        self.book = book
        self.arts, self.codes = arts, label_codes(book, arts, region)  # the label bits of every card of the cycle
        self._arts_l, self._codes_l = arts.tolist(), self.codes.tolist()
        # what the document keys read of a card (first seen, version, label bits), for every card at once
        self.cols = np.stack([book.articles.first_seen[arts], book.articles.version[arts], self.codes]).astype(np.int64)
        self.old, self.new = cache.cards, {}
        self.shared = SHARED_CARDS.get(book, None, "cards", dict)  # this lineage's cards (SHARED_CARDS)

    def codes_of(self, arts: np.ndarray) -> np.ndarray:
        """The label bits of the cards of article rows ``arts`` (each among the cycle's cards)."""
        return self.codes[np.searchsorted(self.arts, arts)]

    def cols_of(self, arts: np.ndarray) -> np.ndarray:
        """The first-seen times, versions and label bits of the cards of article rows ``arts`` (each among the
        cycle's cards), as three rows of integers."""
        return self.cols[:, np.searchsorted(self.arts, arts)]

    def label_of(self, a: int) -> tuple[str, ...]:
        """The card labels of article row ``a`` (one of the cycle's cards)."""
        return LABELS_BY_CODE[self._codes_l[bisect_left(self._arts_l, a)]]

    def _check(self, a: int) -> tuple:
        """What a cached card of article row ``a`` must match: its first-seen time, version and labels."""
        arts = self.book.articles
        return (int(arts.first_seen[a]), int(arts.version[a]), self.label_of(a))

    def get(self, a: int, with_lede: bool) -> dict:
        """The card of article row ``a`` (``with_lede``: the page representative's, with its lede). Cached by
        ``2a + with_lede`` (an int key: this runs ~200,000 times a cycle) while first seen, version and labels
        are unchanged; else the lineage's card of the same key and check (:data:`SHARED_CARDS`), else built."""
        key = a + a + with_lede
        check = self._check(a)
        hit = self.new.get(key)
        if hit is None:
            hit = self.old.get(key)
        if hit is not None and hit[0] == check:
            self.new[key] = hit
            return hit[1]
        c = self.shared.get((key, check))
        if c is None:
            base = self.book.articles.card[a]
            c = article_card(base, check[0], check[2])
            if with_lede and base["lede"]:
                c["lede"] = base["lede"][:300]
            c = self.shared.setdefault((key, check), c)
        self.new[key] = (check, c)
        return c

    def plain(self, arts: list) -> tuple:
        """The cards without lede of article rows ``arts`` (a story's supporting links), as :meth:`get` gives
        them one by one, in one loop: ~130,000 a cycle."""
        new, old, check_of, out = self.new, self.old, self._check, []
        for a in arts:
            key = a + a
            hit = new.get(key)
            if hit is None:
                hit = old.get(key)
            if hit is not None and hit[0] == check_of(a):
                new[key] = hit
                out.append(hit[1])
            else:
                out.append(self.get(a, False))
        return tuple(out)
