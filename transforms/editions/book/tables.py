"""The StoryBook's typed column tables: publishers, stories, articles, story x publisher pairs and story x region
place mentions (:mod:`transforms.editions.book.storybook` folds events into them; the ranking maths reads their columns).

Each table declares its columns once, with their dtype and the value of a new row; :meth:`Table.add` is the only
way a table grows (numpy columns by doubling, so ``column[: table.size]`` is the live part; Python-object columns by
one item) and ``row_of`` maps a row's key (story id, article id, ...) to its row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np


class Table:
    """Rows of equal-length columns: numpy columns (``COLUMNS``: name -> (dtype, fill of a new row, width; 0 for a
    vector, a name for a width given at construction)) and Python-object columns (``LISTS``: name -> factory of a new
    row's value). :meth:`add` is the only way a table grows: the numpy columns by doubling (the ranking maths reads
    them as ``column[: table.size]``), the lists by one item; ``row_of`` maps a row's key to its row."""

    COLUMNS: ClassVar[dict[str, tuple]] = {}
    LISTS: ClassVar[dict[str, Callable[[], Any]]] = {}

    def __init__(self, **widths: int):
        self.size = 0
        self.capacity = 0  # rows every numpy column holds; those from ``size`` on hold their fill
        self.row_of: dict = {}
        for name, (dtype, fill, width) in self.COLUMNS.items():
            w = widths[width] if isinstance(width, str) else width
            setattr(self, name, np.full((0, w) if w else 0, fill, dtype))
        for name in self.LISTS:
            setattr(self, name, [])

    def add(self, row_key=None, /, **values) -> int:
        """Append one row (columns at their fill value unless given in ``values``) and return it. The columns grow
        together, filled ahead (a new row is already at its fill), so a row costs only the values given: a book
        folds ~20 columns per article."""
        row = self.size
        self.size = n = row + 1
        if n > self.capacity:
            self._grow(max(n, 2 * self.capacity, 64))
        columns = self.COLUMNS
        for name, value in values.items():
            if name in columns:
                getattr(self, name)[row] = value
        for name, factory in self.LISTS.items():
            getattr(self, name).append(values[name] if name in values else factory())
        if row_key is not None:
            self.row_of[row_key] = row
        return row

    def _grow(self, capacity: int) -> None:
        for name, (_, fill, _) in self.COLUMNS.items():
            arr = getattr(self, name)
            if arr.shape[0] != self.capacity:  # filled or resized around add(): its spare rows need not be at fill
                raise ValueError(
                    f"{type(self).__name__}.{name} holds {arr.shape[0]} rows, the table {self.capacity}: columns grow "
                    "only through add() (a column set directly must keep the capacity and its spare rows at fill)"
                )
            out = np.full((capacity,) + arr.shape[1:], fill, arr.dtype)
            out[: arr.shape[0]] = arr
            setattr(self, name, out)
        self.capacity = capacity

    def set_width(self, name: str, width: int) -> None:
        """Give a matrix column another width (every row at its fill): the story centroids once the first one shows
        the model's."""
        arr = getattr(self, name)
        fill = self.COLUMNS[name][1]
        setattr(self, name, np.full((arr.shape[0], width), fill, arr.dtype))


class PublisherTable(Table):
    """Publishers seen in the book's articles (row_of: publisher id -> row)."""

    COLUMNS = {
        "authority": (np.float64, 0.0, "sections"),  # column 0 general, 1 + s topic authority for section s
        "region": (np.int16, -1, 0),  # region index; -1: international / unknown
        "is_wire": (bool, False, 0),
    }
    LISTS = {"id": str, "name": str}
    authority: np.ndarray
    region: np.ndarray
    is_wire: np.ndarray
    id: list[str]
    name: list[str]


class StoryTable(Table):
    """Stories, merged ones included (row_of: story id -> row)."""

    COLUMNS = {
        "id": (np.int64, 0, 0),
        "last_seq": (np.float64, -1.0, 0),  # writer sequence of the latest placement into the story
        "expire_seq": (np.float64, -1.0, 0),  # of its latest EXPIRE: hidden while >= last_seq
        "is_alias": (bool, False, 0),  # merged into another story
        "centroid": (np.float32, 0.0, "dim"),
        "centroid_seq": (np.float64, -1.0, 0),
        "section_counts": (np.int32, 0, "sections"),  # labelled articles per section
        "labelled": (np.int32, 0, 0),  # labelled articles (sum of section_counts' row)
        "primary_section": (np.int32, -1, 0),  # argmax of section_counts' row (lowest on ties), -1 if none
        "n_articles": (np.int32, 0, 0),
        "n_originals": (np.int32, 0, 0),  # articles that are not copies
        "first_seen": (np.int64, 0, 0),  # first-seen time of the earliest original
        "newest_seen": (np.int64, 0, 0),  # first-seen time of the newest original
        "title_sum": (np.float32, 0.0, "title_dim"),  # sum of the members' title vectors
        "version": (np.int64, 0, 0),  # coverage version (module docstring)
        "structural_minute": (np.int64, 0, 0),  # minute of the story's latest structural event
        "created_at": (np.int64, 0, 0),
        "breaking_start": (np.int64, 0, 0),  # window end of the first breaking window, 0 = never
        "breaking_last": (np.int64, 0, 0),
        "developing_last": (np.int64, 0, 0),
        "n_opinion": (np.int32, 0, 0),
        "n_fact_checks": (np.int32, 0, 0),
    }
    LISTS = {"members": set, "links": set, "pair_rows": list, "mention_rows": list}
    id: np.ndarray
    last_seq: np.ndarray
    expire_seq: np.ndarray
    is_alias: np.ndarray
    centroid: np.ndarray
    centroid_seq: np.ndarray
    section_counts: np.ndarray
    labelled: np.ndarray
    primary_section: np.ndarray
    n_articles: np.ndarray
    n_originals: np.ndarray
    first_seen: np.ndarray
    newest_seen: np.ndarray
    title_sum: np.ndarray
    version: np.ndarray
    structural_minute: np.ndarray
    created_at: np.ndarray
    breaking_start: np.ndarray
    breaking_last: np.ndarray
    developing_last: np.ndarray
    n_opinion: np.ndarray
    n_fact_checks: np.ndarray
    members: list[set[int]]  # article rows
    links: list[set[int]]  # linked story ids (other languages)
    pair_rows: list[list[int]]  # rows of the story's PairTable entries
    mention_rows: list[list[int]]  # rows of the story's MentionTable entries


class ArticleTable(Table):
    """Articles (row_of: article id -> row); an article placed before its data arrived has ``has_data`` False."""

    COLUMNS = {
        "story": (np.int32, -1, 0),  # story row, -1: none yet
        "seq": (np.float64, -1.0, 0),  # writer sequence of the placement that decided its story
        "has_data": (bool, False, 0),
        "version": (np.int32, 0, 0),
        "publisher": (np.int32, 0, 0),  # publisher row
        "first_seen": (np.int64, 0, 0),
        "published_at": (np.int64, 0, 0),
        "is_copy": (bool, False, 0),
        "is_stale": (bool, False, 0),  # published long before first seen (transforms.common.is_stale): not news
        "section": (np.int16, -1, 0),  # section index of its label, -1: none
        "title_vector": (np.float32, 0.0, "title_dim"),
        "headline_quality": (np.float32, 0.0, 0),  # transforms/editions/book/headlines.py
        "clickbait": (np.float32, 0.0, 0),
        "is_opinion": (bool, False, 0),
        "is_fact_check": (bool, False, 0),
        "is_paid": (bool, False, 0),  # paywalled: Article.accessible_for_free false (label paid; near-ties: free)
        "key": (np.int64, 0, 0),  # article_key(id): tie-breaks
        "event_minute": (np.int64, 0, 0),  # minute of the latest event that placed or changed the article
    }
    LISTS = {"id": str, "card": lambda: None, "places": tuple, "entities": tuple}
    story: np.ndarray
    seq: np.ndarray
    has_data: np.ndarray
    version: np.ndarray
    publisher: np.ndarray
    first_seen: np.ndarray
    published_at: np.ndarray
    is_copy: np.ndarray
    is_stale: np.ndarray
    section: np.ndarray
    title_vector: np.ndarray
    headline_quality: np.ndarray
    clickbait: np.ndarray
    is_opinion: np.ndarray
    is_fact_check: np.ndarray
    is_paid: np.ndarray
    key: np.ndarray
    event_minute: np.ndarray
    id: list[str]
    card: list[dict | None]  # the fields a card shows
    places: list[tuple]  # ((region index, mentions a sub-national place), ...)
    entities: list[tuple]  # entity ids (alias-normalised by the articles stage), each once


class PairTable(Table):
    """Story x publisher pairs with an original (row_of: (story row, publisher row) -> row)."""

    COLUMNS = {
        "story": (np.int32, 0, 0),
        "publisher": (np.int32, 0, 0),
        "region": (np.int16, 0, 0),  # the publisher's region (static), -1 international
        "latest_first_seen": (np.int64, 0, 0),
        "n_originals": (np.int32, 0, 0),
        "live": (bool, False, 0),  # False once the story was rebuilt (the row is dead)
    }
    story: np.ndarray
    publisher: np.ndarray
    region: np.ndarray
    latest_first_seen: np.ndarray
    n_originals: np.ndarray
    live: np.ndarray


class MentionTable(Table):
    """Story x region place mentions: articles naming a place of the region, ``local_count`` a sub-national one
    (row_of: (story row, region index) -> row)."""

    COLUMNS = {
        "story": (np.int32, 0, 0),
        "region": (np.int16, 0, 0),
        "count": (np.int32, 0, 0),
        "local_count": (np.int32, 0, 0),
        "live": (bool, False, 0),
    }
    story: np.ndarray
    region: np.ndarray
    count: np.ndarray
    local_count: np.ndarray
    live: np.ndarray
