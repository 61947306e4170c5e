"""The records the story writer emits: a story's meta row and the ``StoryChange`` of a decision.

Reads a :class:`transforms.stories.state.Story` or a decision's fields; writes dicts of the story store's meta
(read back by :mod:`transforms.stories.restore`) and of schemas/avro/story_change.avsc.
"""

from __future__ import annotations

import numpy as np

from transforms.stories import ids as idmod
from transforms.stories.features import ArticleFeatures
from transforms.stories.state import Story


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
        "centroid_sum": [float(x) for x in s.csum],
        "last_repair_at": s.last_repair_at,
        "writer_minted": int(writer_minted),
    }


def change_record(
    language: str,
    seq: int,
    kind: str,
    story_id: int,
    at: int,
    article: ArticleFeatures | None = None,
    score: float | None = None,
    centroid: np.ndarray | None = None,
    other: int | None = None,
    is_copy: bool = False,
    article_ids: list[str] | None = None,
) -> dict:
    """A ``StoryChange`` record (kind: NEW_STORY, ASSIGN, SPLIT, MERGE or EXPIRE)."""
    return {
        "schema_version": 1,
        "change_id": idmod.change_id(language, seq, kind),
        "language": language,
        "seq": seq,
        "kind": kind,
        "story_id": int(story_id),
        "other_story_id": None if other is None else int(other),
        "article_id": article.article_id if article is not None else None,
        "article_ids": list(article_ids or []),
        "is_copy": bool(is_copy),
        "score": None if score is None else float(score),
        "at": int(at),
        "centroid": [float(x) for x in centroid] if centroid is not None else [],
        "article": article.record if article is not None else None,
    }
