"""The feed registry: which feeds the ingest job polls.

Reads one of
- ``"default"``: the feeds of the packaged publisher registry (transforms/data/publishers.json, the sample world);
- a JSON file path (local; any Beam filesystem such as ``gs://`` when the caller passes ``read``, as the Beam
  layer does with :func:`transforms.ingest.beam.read_beam_file`): either a publisher registry
  (``{"publishers": [{..., "feeds": [{"url", "kind"}]}]}``), ``{"feeds": [...]}``, or a bare list of feed entries
  ``{"url", "publisher_id"?, "tier"?, "kind"?, "enabled"?}``;
- ``"table"``: the ``feeds`` table (stores.feeds.FeedStore.list_feeds), which operators edit while the job runs.

Writes normalised entries ``{url, publisher_id, tier, kind, enabled}``. A feed without publisher_id gets the
publisher of its host (transforms.publishers), whose tier sets the poll floor. The job re-reads the source every
``--registry_reload_s``: edits reach running feeds without a restart. To stop a feed, set ``"enabled": false``
(the local driver also stops feeds that disappear from the registry; on Dataflow a removed entry keeps its last
schedule until it is disabled, since a keyed state cannot see that nobody mentions it any more).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from transforms.common import MAX_URL_CHARS, url_too_long
from transforms.publishers import PublisherRegistry, default_registry

KINDS = ("rss", "atom", "sitemap", "front", "auto")  # front: an HTML section front (transforms.ingest.fronts)


def read_local(path: str) -> str:
    """The text of a local file; a remote path (``gs://...``) needs the Beam reader (this module has no Beam)."""
    if "://" in path:
        raise ValueError(f"feed registry {path!r}: a remote path is read through transforms.ingest.beam.read_beam_file")
    with open(path, encoding="utf-8") as f:
        return f.read()


def normalise(entry: dict, registry: PublisherRegistry) -> dict:
    url = str(entry["url"]).strip()
    if url_too_long(url):
        raise ValueError(f"feed url over {MAX_URL_CHARS} characters ({len(url)}): {url[:100]!r}...")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"feed url must be http(s): {url!r}")
    pub = registry.get(entry["publisher_id"]) if entry.get("publisher_id") else None
    if pub is None:
        from urllib.parse import urlsplit

        pub = registry.for_host(urlsplit(url).hostname or "")
    kind = entry.get("kind") or "auto"
    if kind not in KINDS:
        raise ValueError(f"feed {url}: kind must be one of {KINDS}, got {kind!r}")
    return {
        "url": url,
        "publisher_id": entry.get("publisher_id") or pub.publisher_id,
        "tier": entry.get("tier") or pub.tier,
        "kind": kind,
        "enabled": bool(entry.get("enabled", True)),
    }


def entries_from_document(doc, registry: PublisherRegistry) -> list[dict]:
    if isinstance(doc, dict) and "publishers" in doc:
        reg = PublisherRegistry.from_dicts(doc["publishers"])
        raw = [dict(f, publisher_id=p.publisher_id, tier=p.tier) for p in reg for f in p.feeds]
        registry = reg
    elif isinstance(doc, dict) and "feeds" in doc:
        raw = doc["feeds"]
    elif isinstance(doc, list):
        raw = doc
    else:
        raise ValueError("feed registry: expected {'publishers': [...]}, {'feeds': [...]} or a list")
    return [normalise(e, registry) for e in raw]


def load_feeds(
    source: str = "default",
    store=None,
    registry: PublisherRegistry | None = None,
    read: Callable[[str], str] = read_local,
) -> list[dict]:
    """The normalised entries of ``source`` (see the module docstring); ``read`` returns a file path's text."""
    registry = registry or default_registry()
    if source == "default":
        return [
            normalise(dict(f, publisher_id=p.publisher_id, tier=p.tier), registry) for p in registry for f in p.feeds
        ]
    if source == "table":
        if store is None:
            raise ValueError("--feeds=table needs a feed store")
        return [normalise(e, registry) for e in store.list_feeds()]
    return entries_from_document(json.loads(read(source)), registry)


# A BURST request names a publisher (the stories job knows publishers, not the ingest job's feeds): it reaches at
# most this many of the publisher's enabled feeds, the first by url. With bursts.fetch_max_publishers (50) that
# bounds one burst pulse to 200 feeds in the 1-minute lane (transforms/editions/bursts/coverage.py).
BURST_FEEDS_PER_PUBLISHER = 4


def feeds_by_publisher(entries) -> dict[str, list[str]]:
    """publisher id -> the urls of its enabled feeds, sorted: the index :func:`request_targets` reads. ``entries``:
    normalised registry entries (dicts) or FeedConfig-like objects."""
    out: dict[str, list[str]] = {}
    for e in entries:
        d = e if isinstance(e, dict) else e.to_dict()
        if d.get("enabled", True) and d.get("publisher_id"):
            out.setdefault(d["publisher_id"], []).append(d["url"])
    return {p: sorted(set(urls)) for p, urls in out.items()}


def request_targets(request: dict, index: dict[str, list[str]]) -> list[tuple[str, dict]]:
    """The ``(feed url, request)`` inputs of one FetchRequest: the feed it names; else, for a request naming only a
    publisher (BURST), one copy per feed of that publisher (at most BURST_FEEDS_PER_PUBLISHER, each with its
    ``feed_url`` set); else none (the caller dead-letters it as ``no_feed``)."""
    if request.get("feed_url"):
        return [(request["feed_url"], request)]
    urls = index.get(request.get("publisher_id") or "", [])[:BURST_FEEDS_PER_PUBLISHER]
    return [(u, dict(request, feed_url=u)) for u in urls]
