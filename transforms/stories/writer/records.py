"""The records the story writer emits: a story's meta row and the ``StoryChange`` of a decision.

Reads a :class:`transforms.stories.writer.state.Story` or a decision's fields; writes dicts of the story store's meta
(read back by :mod:`transforms.stories.writer.restore`) and of schemas/avro/story_change.avsc (from a :class:`Change`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transforms.stories.vocabulary import ids as idmod
from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer.state import Story


def story_meta(s: Story, language: str, model: str, writer_minted: int) -> dict:
    """The story's meta row: counters, representative and title, and the centroid's sum and time (restorable)."""
    rep = s.representative()
    return {
        "language": language,
        "model": model,
        "first_at": int(s.first_at),
        "last_at": int(s.last_at),
        "articles": len(s.members),
        "originals": s.n,
        "sources": len(s.source_count),
        "representative": rep,
        "title": s.members[rep].title,
        "centroid_t": int(s.ct),
        "centroid_sum": np.asarray(s.csum, dtype=np.float64).tolist(),  # tolist: the same floats, one C call
        "last_repair_at": s.last_repair_at,
        "writer_minted": int(writer_minted),
    }


@dataclass(frozen=True)
class Change:
    """What one decision did, before the writer numbers it: a ``StoryChange`` less its language and seq, which
    :func:`change_record` adds (the writer owns both). ``article`` is the arrival (NEW_STORY, ASSIGN); ``other`` the
    second story of a SPLIT (the receiving one) or a MERGE (the absorbed one); ``article_ids`` what a SPLIT moved."""

    kind: str  # NEW_STORY, ASSIGN, SPLIT, MERGE or EXPIRE
    story_id: int
    at: int
    article: ArticleFeatures | None = None
    score: float | None = None
    centroid: np.ndarray | None = None
    other: int | None = None
    is_copy: bool = False
    article_ids: Sequence[str] = ()


def change_record(language: str, seq: int, change: Change) -> dict:
    """The ``StoryChange`` record of ``change``, the writer's change number ``seq`` in ``language``."""
    c = change
    return {
        "schema_version": 1,
        "change_id": idmod.change_id(language, seq, c.kind),
        "language": language,
        "seq": seq,
        "kind": c.kind,
        "story_id": int(c.story_id),
        "other_story_id": None if c.other is None else int(c.other),
        "article_id": c.article.article_id if c.article is not None else None,
        "article_ids": list(c.article_ids),
        "is_copy": bool(c.is_copy),
        "score": None if c.score is None else float(c.score),
        "at": int(c.at),
        "centroid": np.asarray(c.centroid, dtype=np.float64).tolist() if c.centroid is not None else [],
        "article": c.article.record if c.article is not None else None,
    }
