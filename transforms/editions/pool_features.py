"""Per pool story of a cycle: its topics, publishers and places (what For you re-ranks on), from the book's story
x publisher pairs and place mentions in one vectorised pass over the pool's rows. Called by
:func:`transforms.editions.cycle.pool_document` for the entries it rebuilds; kept here so the cycle module stays
within the house size limit."""

from __future__ import annotations

import numpy as np

from transforms.editions.book import StoryBook
from transforms.editions.params import RankParams


def _groups(keys: np.ndarray, k: int, order: np.ndarray, limit: int, values: list) -> list[list]:
    """Split ``values`` (already ordered by ``order``) into ``k`` lists by group key, at most ``limit`` each."""
    out: list[list] = [[] for _ in range(k)]
    for g, v in zip(keys[order].tolist(), values):
        lst = out[g]
        if len(lst) < limit:
            lst.append(v)
    return out


def pool_features(book: StoryBook, pool_rows: np.ndarray, p: RankParams):
    """Per pool story: its sections (topics), up to 10 publishers by authority, up to 5 places (region codes) and
    the cities of its local publishers (:func:`add_publisher_cities`)."""
    k = pool_rows.size
    if k == 0:
        return [], [], []
    slot = np.full(book.stories.size + 1, -1, np.int64)
    slot[pool_rows] = np.arange(k)
    sec = book.stories.section_counts[pool_rows]
    tot = np.maximum(sec.sum(axis=1, keepdims=True), 1)
    mask = (sec > 0) & (sec >= tot * p.section_share_min)
    topics: list[list[str]] = [[] for _ in range(k)]
    for r, c in zip(*(x.tolist() for x in np.nonzero(mask))):
        topics[r].append(book.section_ids[c])
    pairs, mentions = book.pairs, book.mentions
    ns = pairs.size
    g = slot[pairs.story[:ns]]
    sel = np.flatnonzero((g >= 0) & pairs.live[:ns])
    pubs = pairs.publisher[sel]
    names = np.array(book.publishers.id, dtype=object)[pubs] if sel.size else np.zeros(0, object)
    order = np.lexsort((names.astype(str), -book.publishers.authority[pubs, 0], g[sel])) if sel.size else sel
    publishers = _groups(g[sel], k, order, 10, names[order].tolist())
    nr = mentions.size
    g2 = slot[mentions.story[:nr]]
    sel2 = np.flatnonzero((g2 >= 0) & mentions.live[:nr])
    codes = np.array(book.regions, dtype=object)[mentions.region[sel2]] if sel2.size else np.zeros(0, object)
    order2 = np.lexsort((codes.astype(str), -mentions.count[sel2], g2[sel2])) if sel2.size else sel2
    places = _groups(g2[sel2], k, order2, 5, codes[order2].tolist())
    add_publisher_cities(places, g[sel], book.publisher_cities()[pubs])
    return topics, publishers, places


def add_publisher_cities(places: list[list], slots: np.ndarray, cities: np.ndarray) -> None:
    """A story is local to the city of every local publisher covering it (``Publisher.city``), whether or not it
    is among the entry's 10 strongest publishers. ``slots[j]`` is the pool story (index into ``places``) of live
    pair j, ``cities[j]`` its publisher's city ("" if none). The codes go after the region codes, in code order;
    the cities the entities name are added later (transforms/editions/topics.py ``add_cities``). Vectorised: only
    the local pairs are looped over."""
    local = np.flatnonzero(cities != "") if len(cities) else ()
    for r, city in sorted(set(zip(slots[local].tolist(), cities[local].tolist()))):
        if city not in places[r]:
            places[r].append(city)
