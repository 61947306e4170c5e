"""Plain helpers on the StoryChange records the editions stage reads (no Beam).

- :func:`change_of_output`: the StoryChange of a story writer's output (transforms/stories/writer/cluster.py), with a
  minimal Article record when the writer kept none (a backfill of labelled JSONL);
- :func:`editions_of`: the editions a compact change or pulse is ranked in;
- :func:`change_dead_letter`: the DeadLetter record of a change the ranker cannot read.
"""

from __future__ import annotations

from transforms import common
from transforms.common import LINK, PLACEMENTS

SYNTHETIC_URL = "urn:newsroom:article:{article_id}"
STAGE = "editions"


def change_of_output(out: dict) -> dict:
    """The StoryChange of a writer output. A NEW_STORY/ASSIGN without its Article record (a backfill of labelled
    JSONL: the reader keeps no record) gets a minimal one from the writer's member row -- title, source as the
    publisher, first-seen time, copy flag -- and a ``urn:newsroom:article:{id}`` URL, since no URL was kept."""
    ch = out["change"]
    if ch.get("kind") not in PLACEMENTS or ch.get("article") or not ch.get("article_id"):
        return ch
    row = (out.get("members") or {}).get(ch["article_id"])
    if not row:
        return ch
    aid = ch["article_id"]
    at = int(row.get("at") or ch["at"])
    article = {
        "article_id": aid,
        "version": 1,
        "canonical_url": SYNTHETIC_URL.format(article_id=aid),
        "publisher_id": row.get("source") or "unknown",
        "publisher_name": None,
        "language": ch["language"],
        "title": row.get("title") or "",
        "lede": "",
        "image_url": None,
        "published_at": at,
        "first_seen_at": at,
        "section": None,
        "topics": [],
        "is_opinion": False,
        "is_fact_check": False,
        "copy_of": row.get("copy_of"),
        "entities": [],
    }
    return dict(ch, article=article)


def editions_of(event: dict, config) -> list:
    """The editions a compact change (transforms/editions/book/storybook.py ``compact_change``) or a burst pulse is ranked
    in: those of its language; every edition for a LINK (the link writer's language is "mul": the story may be in
    any edition); a storyline's MERGE, SPLIT or DETACH to every edition, its NEW_STORYLINE or ATTACH to the story's
    language's."""
    if event.get("type") == "change" and event.get("kind") == LINK:
        return list(config.editions)
    if event.get("type") == "storyline" and event.get("kind") not in ("NEW_STORYLINE", "ATTACH"):
        return list(config.editions)  # a merge, split or detach may touch stories of any language
    return list(config.editions_for_language(event.get("language") or ""))


def change_dead_letter(change, exc: Exception) -> dict:
    """The DeadLetter record of an unreadable story change (payload re-encoded as a StoryChange where it can be)."""
    key = change.get("change_id") if isinstance(change, dict) else None
    at = change.get("at") if isinstance(change, dict) and isinstance(change.get("at"), int) else 0
    detail = f"{type(exc).__name__}: {exc}"
    return common.dead_letter(STAGE, "malformed_change", detail, key, change, at, message="StoryChange")
