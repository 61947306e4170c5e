"""Coverage documents (every article of a story, for Full Coverage) and the article card they and the pages show.

:func:`coverage_documents` is a phase of the rank cycle (transforms/editions/cycle/run.py): the coverage of the page
and pool stories whose coverage changed since the edition last emitted it. :func:`coverage_document` is
edition-independent (the storyline pages build one for a story that left the pool); :func:`article_card` is the
card of one article, on a page or in a coverage timeline.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.context import EditionMemory
from transforms.editions.cycle.kept import SHARED_LOCK
from transforms.editions.cycle.representatives import labels_for
from transforms.editions.vocabulary import documents as docs
from transforms.editions.vocabulary.params import RankParams


def with_image_size(card: dict, base: dict) -> dict:
    """``card`` with ``image_width``/``image_height`` when the article states both for its image (Article fields,
    from its ImageObject or og:image size). Optional fields of the edition page schema: a card without them is the
    same bytes as before they existed, and the web card then sets no box rather than a guessed one."""
    w, h = base.get("image_size") or (None, None)
    if base.get("image_url") and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 20_000 for v in (w, h)
    ):
        card["image_width"], card["image_height"] = w, h
    return card


def article_card(base: dict, first_seen_ms, labels) -> dict:
    """One article's card on a page (a section's story or a Full Coverage timeline): the stored card's fields, its
    times in ISO form and the labels the cycle gave it."""
    card = {
        "article_id": base["article_id"],
        "url": base["url"],
        "title": base["title"],
        "publisher_id": base["publisher_id"],
        "publisher_name": base["publisher_name"],
        "image_url": base["image_url"],
        "published_at": docs.iso(base["published_at"]),
        "first_seen_at": docs.iso(first_seen_ms),
        "language": base["language"],
        "labels": labels,
    }
    with_image_size(card, base)
    return card


def coverage_documents(book: StoryBook, p: RankParams, prim: np.ndarray, rows: set, memory: EditionMemory) -> list:
    """Coverage of the page and pool stories whose coverage changed since this edition last emitted it."""
    shown = np.array(sorted(rows), np.int64)
    ids = book.stories.id[shown].tolist()
    versions = book.stories.version[shown]
    last = np.array([memory.coverage_versions.get(sid, 0) for sid in ids], np.int64)
    changed = np.flatnonzero(versions > last).tolist()  # the rest: emitted before at this version or later
    coverage = [shared_coverage(book, int(shown[k]), p, int(prim[shown[k]])) for k in changed]
    memory.coverage_versions = dict(zip(ids, np.maximum(versions, last).tolist()))
    return coverage


class SharedCoverage:
    """Coverage documents shared by the editions of a language and kept across minutes, by story, version and
    primary section: :func:`coverage_document` reads the book's tables, config, registry and parameters only, and
    every change of a story's coverage versions it (the rule :func:`coverage_documents` already rests on: a story is
    emitted again only at a new version). At 300,000 live stories a minute's ~1,400 articles made ~6,700 coverage
    documents and ~22,000 more for ~11,000 storyline pages' episodes, each English one 15 times over and the
    episodes of unchanged stories every minute again (benchmarks/rank_bench.py). One value per story (its newest
    version asked for), the least recently used going first beyond ``kept``. A value handed out is shared by every
    edition that asks for it: read it, never write into it (takedowns and the publisher make changed copies). The
    same keeping holds the stories' :func:`coverage_summary` (``SHARED_SUMMARIES``)."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        # (language, story id) -> (version, prim, config, registry, p, value), the least recently used first: an
        # OrderedDict, whose move and eviction are O(1) (a dict's first key after many pops from its front is found
        # by scanning the deleted slots: ~10 us an eviction at 40,000 values, growing cycle after cycle)
        self.docs: OrderedDict[tuple, tuple] = OrderedDict()

    def peek(self, book: StoryBook, row: int, p: RankParams, prim: int):
        """The kept value of this story at its version, or None (nothing made)."""
        hit = self.docs.get((book.language, int(book.stories.id[row])))
        same = hit is not None and hit[:2] == (int(book.stories.version[row]), prim) and hit[2] is book.config
        return hit[5] if same and hit[3] is book.registry and hit[4] is p else None

    def document(self, book: StoryBook, row: int, p: RankParams, prim: int, make=None):
        """The kept value of this story at its version, else ``make()`` (default: its coverage document), kept."""
        key, version = (book.language, int(book.stories.id[row])), int(book.stories.version[row])
        with SHARED_LOCK:
            hit = self.docs.get(key)
            if hit is not None:
                self.docs.move_to_end(key)  # the most recently used last
        same = hit is not None and hit[:2] == (version, prim) and hit[2] is book.config and hit[3] is book.registry
        if same and hit[4] is p:
            return hit[5]
        value = coverage_document(book, row, p, prim) if make is None else make()
        with SHARED_LOCK:
            self.docs[key] = (version, prim, book.config, book.registry, p, value)
            self.docs.move_to_end(key)
            while len(self.docs) > self.kept:
                self.docs.popitem(last=False)
        return value


# documents: ~4.3 KB each (objsize, benchmarks/rank_bench.py's world), ~70 MB; a minute at 300,000 live stories makes
# ~1,300 new versions
SHARED_COVERAGE = SharedCoverage(kept=16_000)
# summaries (a storyline's unchanged episodes, ~2,600 asked a minute): ~0.6 KB each, ~25 MB
SHARED_SUMMARIES = SharedCoverage(kept=40_000)


def shared_coverage(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    """:func:`coverage_document` through ``SHARED_COVERAGE`` (made once per language, story, version and primary
    section). The document is shared: read it, never write into it."""
    return SHARED_COVERAGE.document(book, row, p, prim)


def coverage_document(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    """All articles of a story (edition-independent), newest first, keyset order (published_at desc, article_id)."""
    arts = book.story_articles(row)
    labels = labels_for(book, np.array(arts, np.int64), None) if arts else []
    best = best_article(book, row, arts, p, prim)
    cards = []
    for k, a in enumerate(arts):
        base = book.articles.card[a]
        card = article_card(base, book.articles.first_seen[a], labels[k])
        cards.append((-int(base["published_at"]), base["article_id"], card))
    cards.sort(key=lambda t: (t[0], t[1]))
    return {
        "schema": docs.COVERAGE_SCHEMA,
        "story_id": str(int(book.stories.id[row])),
        "version": int(book.stories.version[row]),
        "language": book.language,
        "title": book.articles.card[best]["title"] if best is not None else "",
        "updated_at": docs.iso(book.stories.newest_seen[row]),
        "links": tuple(str(x) for x in sorted(book.stories.links[row])),
        **book.storylines.page_field(int(book.stories.id[row])),  # its storyline, when that has a page
        "articles": [c for _, _, c in cards],
    }


def best_article(book: StoryBook, row: int, arts: list, p: RankParams, prim: int) -> int | None:
    """The article whose title a story's coverage shows: the most central, authoritative, best-headlined original
    (ties: by article id); None for no article."""
    tsum = book.stories.title_sum[row].astype(np.float64)
    norm = max(float(np.linalg.norm(tsum)), 1e-9)
    rp = p.representative
    best, best_key = None, None
    for a in arts:
        central = float(book.articles.title_vector[a].astype(np.float64) @ tsum) / norm
        key = (
            -(
                rp.w_centrality * central
                + rp.w_authority * float(book.publishers.authority[book.articles.publisher[a], prim + 1])
                + rp.w_headline * float(book.articles.headline_quality[a])
                - rp.copy_penalty * bool(book.articles.is_copy[a])
            ),
            book.articles.card[a]["article_id"],
        )
        if best_key is None or key < best_key:
            best, best_key = a, key
    return best


def coverage_summary(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    """What a storyline page's episode reads of a story's coverage document (title, ``updated_at``, articles'
    count and publishers), without its article cards: the kept document when there is one at this version
    (``SHARED_COVERAGE``), else made from the book (a storyline's other episodes, unchanged this minute, asked for
    only for this) and kept by version as the documents are (``SHARED_SUMMARIES``). No takedowns applied (a caller with takedowns filters the whole document)."""
    doc = SHARED_COVERAGE.peek(book, row, p, prim)
    if doc is not None:
        return {
            "story_id": doc["story_id"],
            "title": doc["title"],
            "updated_at": doc["updated_at"],
            "article_count": len(doc["articles"]),
            "publisher_count": len({a["publisher_id"] for a in doc["articles"]}),
        }
    return SHARED_SUMMARIES.document(book, row, p, prim, lambda: _summary(book, row, p, prim))


def _summary(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    arts = book.story_articles(row)
    best = best_article(book, row, arts, p, prim)
    return {
        "story_id": str(int(book.stories.id[row])),
        "title": book.articles.card[best]["title"] if best is not None else "",
        "updated_at": docs.iso(book.stories.newest_seen[row]),
        "article_count": len(arts),
        "publisher_count": len({book.articles.card[a]["publisher_id"] for a in arts}),
    }
