"""Exact deduplication and versions: one conditional write per normalised article decides what goes downstream.

Reads: normalised ``Article`` dicts (version 1, from :mod:`transforms.articles.normalize`) and the ArticleStore
(stores/base.py: ``get``, ``get_version``, ``write`` = conditional write, ``claim_content`` = create-if-absent on the
content-hash index). Writes: the article row (every version kept by the store) and the content index; returns a
:class:`Decision` saying what to emit.

Outcomes:
- ``new``: first time this canonical URL is seen and its text belongs to nobody else: stored as version 1, emitted.
- ``update``: the canonical URL is known and the title or body changed (a different content hash): stored as
  version n+1, emitted. ``published_at`` and ``first_seen_at`` keep the earliest values of all versions.
- ``duplicate``: same URL, same content hash (a replay, a redelivery, the same article from a feed and a sitemap,
  the AMP and canonical URLs mapped to one canonical): nothing is written or emitted.
- ``stale``: same URL, and the text is one of its *older* versions (a replayed or late raw item), or the stored
  version is newer by :func:`stores.base.version_order` (modified time, fetch time): a fetch that is older than
  what is stored arrived late (Pub/Sub delivers out of order; retries reorder). Nothing happens, so neither a
  replay nor a late older fetch rolls an article back. (The price: a headline reverted to an earlier wording is
  ignored.)
- ``content_duplicate``: a new URL whose exact text (title + body) another article already owns, e.g. an AMP or
  print copy without a canonical link: nothing is written or emitted; ``owner`` names the article that has it.

Concurrency: racing writers of the same article are settled by the store's conditional write (exactly one wins);
the loser re-reads and re-decides, so the decision converges to duplicate or the next version. Store errors are
transient (:class:`stores.StoreError`): they propagate so the bundle is retried, which is safe because every step
is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

from stores.base import ArticleStore, StoreError, WriteOutcome, version_order

NEW, UPDATE, DUPLICATE, STALE, CONTENT_DUPLICATE = "new", "update", "duplicate", "stale", "content_duplicate"
OUTCOMES = (NEW, UPDATE, DUPLICATE, STALE, CONTENT_DUPLICATE)
MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class Decision:
    outcome: str
    article: dict | None = None  # what to emit downstream (new and update only)
    owner: str | None = None  # content_duplicate: the article that owns the text

    @property
    def emit(self) -> bool:
        return self.article is not None


def _seen_before(store: ArticleStore, article_id: str, latest: int, content_hash: str) -> bool:
    for v in range(latest - 1, 0, -1):
        old = store.get_version(article_id, v)
        if old is not None and old.get("content_hash") == content_hash:
            return True
    return False


def decide(store: ArticleStore, article: dict) -> Decision:
    """Store ``article`` if it is new or a new version; say what happened."""
    aid, chash = article["article_id"], article["content_hash"]
    order = version_order(article)  # of this version, before first_seen_at becomes the earliest of all versions
    for _ in range(MAX_ATTEMPTS):
        current = store.get(aid)
        if current is None:
            owner = store.claim_content(chash, aid)
            if owner != aid:
                return Decision(CONTENT_DUPLICATE, owner=owner)
            record = dict(article, version=1, copy_of=None, syndication_group=None)
            result = store.write(record, order)
            if result.outcome == WriteOutcome.NEW:
                return Decision(NEW, record)
            if result.stored_content_hash == chash:
                return Decision(DUPLICATE)
            continue  # another writer stored different text first: decide again against it
        if current.get("content_hash") == chash:
            return Decision(DUPLICATE)
        if _seen_before(store, aid, int(current["version"]), chash):
            return Decision(STALE)
        owner = store.claim_content(chash, aid)
        if owner != aid:
            return Decision(CONTENT_DUPLICATE, owner=owner)
        record = dict(
            article,
            version=int(current["version"]) + 1,
            first_seen_at=min(int(current["first_seen_at"]), int(article["first_seen_at"])),
            published_at=min(int(current["published_at"]), int(article["published_at"])),
            copy_of=None,
            syndication_group=None,
        )
        result = store.write(record, order)
        if result.outcome == WriteOutcome.UPDATE:
            return Decision(UPDATE, record)
        if result.newer_stored:
            return Decision(STALE)
        if result.stored_content_hash == chash:
            return Decision(DUPLICATE)
    raise StoreError(f"article {aid}: version contention did not settle after {MAX_ATTEMPTS} attempts")
