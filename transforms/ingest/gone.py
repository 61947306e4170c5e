"""A publisher's 404/410 on a re-fetch takes the article down (the publisher removed it).

When ingest fetches again a page it had fetched before (a feed entry that changed: ``Discovery.is_update``) and
the publisher answers 404 Not Found or 410 Gone, the publisher has removed the article: it is tombstoned the way
``newsroom takedown --url`` does (stores/takedowns.py: kind ``article``, id = the article id of the cleaned URL,
transforms/articles/urls.py), with reason ``publisher_gone_404`` or ``publisher_gone_410`` and who ``ingest``, and
the audit trail records it (action ``takedown``). The origin filters it on its next poll and the next snapshots
omit it, like any takedown. A first fetch answering 404 is only a dead letter (a broken link, nothing was
served). No CDN purge is sent from ingest: the pages' TTLs (60 s, stories 30 s) bound the edge's copy, and an
operator can purge with ``newsroom takedown --url ... --reason`` (a second tombstone of the same article is a
no-op besides its audit entry).

An operator who finds the publisher restored the page lifts it with ``newsroom takedown --url URL --undo``.

Plain Python (no Beam).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict

from stores.takedowns import Tombstone
from transforms.articles.urls import article_id, clean

log = logging.getLogger(__name__)

GONE_STATUSES = (404, 410)
WHO = "ingest"


class PublisherGone:
    """``gone(url, status) -> Tombstone | None``: tombstone and audit the article at ``url``; None when the URL
    is not an article URL or the article is already taken down (nothing written twice)."""

    def __init__(self, takedowns, audit, clock=lambda: int(time.time() * 1000)):
        self.takedowns, self.audit, self.clock = takedowns, audit, clock

    def __call__(self, url: str, status: int) -> Tombstone | None:
        if status not in GONE_STATUSES:
            return None
        cleaned = clean(url)
        if cleaned is None:
            return None
        aid = article_id(cleaned)
        if self.takedowns.get("article", aid) is not None:
            return None
        tombstone = Tombstone("article", aid, f"publisher_gone_{status}", WHO, self.clock(), url=cleaned)
        self.takedowns.set(tombstone)
        self.audit.record("takedown", tombstone.target, tombstone.reason, who=WHO, detail=asdict(tombstone))
        log.info("publisher answered %s on a re-fetch of %s: article %s taken down", status, url, aid)
        return tombstone


def open_publisher_gone(store_config) -> PublisherGone | None:
    """The hook ingest calls on a re-fetch's 404/410, on the stores of ``store_config`` (None: no stores)."""
    if store_config is None:
        return None
    from stores.audit import open_audit_log
    from stores.takedowns import open_takedown_store

    return PublisherGone(open_takedown_store(store_config), open_audit_log(store_config))
