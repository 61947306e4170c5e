"""Table layouts: row keys, column families and qualifiers of every table, for both store backends.

Used by :mod:`stores.gcp` (Bigtable) and :mod:`stores.embedded` (SQLite mirrors the same keys), and by
``newsroom stack up`` / Terraform to create the tables with their GC rules.

articles  (one row per article, plus content-hash index rows)
    a#{article_id}          m:version      zero-padded decimal (10 digits); the conditional write's predicate
                            m:content_hash sha256 hex of normalised title + body
                            m:first_seen   ms since epoch, decimal
                            d:record       Avro ``Article`` (latest version)
                            v:{version:010d} Avro ``Article`` of each version (history; GC: max 20 versions kept)
    h#{content_hash}        m:owner        article_id that first claimed this text (create-if-absent)

stories   (one row per story, plus alias, change-marker and writer rows)
    s#{story_id:016x}       m:meta         JSON: language, created_at, updated_at, version, state, representative
                            m:centroid     float32 little-endian vector
                            m:alias_of     survivor id (decimal) when merged; always the end of the chain
                            mem:{article_id} JSON member record (first_seen_at, publisher_id, is_copy)
                            lnk:{story_id} JSON cross-language link (score)
    l#{language}#{story_id:016x}  m:live   "1" while the story is live (rebuild scans this prefix)
    c#{change_id}           m:applied      "1" once a StoryChange was applied (idempotency marker)
    w#{language}            m:seq          the writer's last durable sequence number (zero-padded)

pointers  (one row per page pointer; name is "{edition}/{section}" or "pool/{edition}")
    p#{name}                p:version      current version, zero-padded decimal; CAS predicate
                            h:{seq:010d}   JSON {version, previous, at, reason}: the move history, for rollback

feeds     (one row per feed; the ingest job's durable registry and schedule checkpoint)
    f#{sha256(feed_url)[:32]}  r:config    JSON registry entry: url, publisher_id, tier, kind (rss|atom|sitemap)
                               s:state     JSON schedule state: next_poll, etag, last_modified, guids, rate, lease

profiles  (one row per reader; never read by a shared page)
    r#{reader_id}           p:profile      JSON: follows, hidden_sources, interest vector, paused
                            e:{at:013d}    JSON read event (last 200 kept; GC: max age 30 days)

Every read and every CheckAndMutate predicate carries a "latest cell only" filter: the Bigtable emulator keeps
old cell versions (LOCAL_STACK.md), and production GC is asynchronous, so correctness never depends on GC.
"""

from __future__ import annotations

import hashlib

# table -> family -> max versions kept (GC rule; None = 1 version, the default for state families)
TABLES: dict[str, dict[str, int]] = {
    "articles": {"m": 1, "d": 1, "v": 1},
    "stories": {"m": 1, "mem": 1, "lnk": 1},
    "pointers": {"p": 1, "h": 1},
    "feeds": {"r": 1, "s": 1},
    "profiles": {"p": 1, "e": 1},
}

VERSION_WIDTH = 10


def pad(n: int, width: int = VERSION_WIDTH) -> bytes:
    if n < 0:
        raise ValueError(f"negative counter {n}")
    return str(n).zfill(width).encode()


def article_key(article_id: str) -> bytes:
    return f"a#{article_id}".encode()


def content_key(content_hash: str) -> bytes:
    return f"h#{content_hash}".encode()


def story_key(story_id: int) -> bytes:
    return f"s#{story_id:016x}".encode()


def live_key(language: str, story_id: int) -> bytes:
    return f"l#{language}#{story_id:016x}".encode()


def live_prefix(language: str) -> bytes:
    return f"l#{language}#".encode()


def change_key(change_id: str) -> bytes:
    return f"c#{change_id}".encode()


def writer_key(language: str) -> bytes:
    return f"w#{language}".encode()


def pointer_key(name: str) -> bytes:
    return f"p#{name}".encode()


def feed_key(feed_url: str) -> bytes:
    return f"f#{hashlib.sha256(feed_url.encode()).hexdigest()[:32]}".encode()


def profile_key(reader_id: str) -> bytes:
    return f"r#{reader_id}".encode()


# Pub/Sub topics (and the SQLite queue names of the embedded bus). Each carries one Avro message type.
TOPICS: dict[str, str] = {
    "items-raw": "RawItem",
    "articles": "Article",
    "story-changes": "StoryChange",
    "fetch-requests": "FetchRequest",
    "read-events": "ReadEvent",
    "dead-letter": "DeadLetter",
}
