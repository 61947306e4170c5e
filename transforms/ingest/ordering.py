"""The ordering key of an ``items-raw`` message: one key per article URL, so that Pub/Sub delivers the fetches of
one article in the order they were published (message ordering, enabled on the items-raw subscription in
Terraform).

Why a key per *URL*, and which URL: the versions that must not overtake each other are the fetches of one article,
i.e. one canonical URL. But the canonical URL is only known after normalisation (it comes from the page's own
rel=canonical / og:url / JSON-LD, read by transforms/articles), and ingest publishes before that. So the key is
computed from the fetched URL, normalised the way canonical URLs are (transforms.articles.urls.clean: courlan's
normalisation plus tracking-parameter removal, then no scheme, no leading ``www.``, no trailing slash, AMP paths
mapped to the main page). Two fetches of the same article through the same link (a feed entry and its update, a
ping, a WebSub push) get the same key; fetches of one article through unrelated URLs may not, and for those the
article store's version order (stores.base.version_order) is what keeps the newest: the key narrows the window,
the store closes it.

Keys are hashed (sha256, 32 hex chars): Pub/Sub limits an ordering key to 1 KB, and URLs can be longer. Cost of
ordering: Pub/Sub delivers one key's messages one at a time per subscriber, which for one URL is at most a handful
of messages, so throughput is not affected.
"""

from __future__ import annotations

import hashlib


def ordering_key(url: str | None) -> str:
    """The ordering key for a fetched URL ("" for none: publish unordered)."""
    if not url:
        return ""
    from transforms.articles.urls import amp_to_main, clean, is_amp_url

    norm = clean(url) or url.strip()
    if is_amp_url(norm):
        norm = amp_to_main(norm)
    norm = norm.split("://", 1)[-1]
    if norm.startswith("www."):
        norm = norm[4:]
    if "?" not in norm:
        norm = norm.rstrip("/")
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:32]


def raw_item_key(record: dict) -> str:
    """The ordering key of a RawItem record (its fetched URL)."""
    return ordering_key(record.get("fetched_url") or record.get("final_url"))
