"""Table layouts: row keys, column families and qualifiers of every table, for both store backends.

Used by :mod:`stores.gcp` (Bigtable), :mod:`stores.profiles` and :mod:`stores.feeds` (their Bigtable backends),
by :mod:`stores.embedded` (SQLite mirrors the same keys), and by ``newsroom stack up`` (``stores.gcp.provision``)
and Terraform (terraform/environments/*/main.tf ``tables``: tests/deploy/test_terraform.py checks its max versions
against :data:`TABLES`; its ages mirror :data:`MAX_AGE_DAYS`) to create the tables with their GC rules. Numbers
written "pad" are zero-padded decimal ASCII (:func:`pad`, 10 digits unless stated), so byte order is numeric order.

articles  (stores.gcp.BigtableArticleStore: one row per article, plus content-hash index rows)
    a#{article_id}          m:version       pad(version); the predicate of the conditional write (create-if-absent:
                                            "cell exists", false branch writes; update: "stored >= mine", false
                                            branch writes)
                            m:content_hash  sha256 hex of normalised title + body (of the latest version)
                            m:first_seen    ms since epoch, decimal; written by the creating write only
                            d:record        Avro ``Article`` (latest version)
                            v:{pad(version)} Avro ``Article`` of each version. Every version is kept: one qualifier
                                            per version, the GC rule keeps one cell per qualifier, nothing trims them
    h#{content_hash}        m:owner         article_id that first claimed this text (create-if-absent)

stories   (stores.gcp.BigtableStoryStore: one row per story, plus live, change-marker and writer rows)
    s#{story_id:016x}       m:meta          JSON object given by the story writer (put_story; e.g. language,
                                            created_at, updated_at, version, state, representative)
                            m:centroid      float32 little-endian vector
                            m:alias_of      survivor id (decimal) when merged; always the end of the chain
                            m:merged:{story_id}  "1" on a survivor's row for each story merged into it (decimal id):
                                            the reverse index that lets a later merge of the survivor re-point its
                                            aliases in one hop without scanning the table
                            mem:{article_id} JSON member record given by the writer (e.g. first_seen_at,
                                            publisher_id, is_copy)
                            lnk:{story_id}  JSON cross-language link (e.g. score); qualifier is the other story's id
                                            in decimal
    l#{language}#{story_id:016x}  m:live    "1" while the story is live (live_stories scans this prefix; the row is
                                            deleted when the story stops being live)
    c#{change_id}           m:applied       "1" once a StoryChange was applied (create-if-absent idempotency marker)
    w#{language}            m:seq           the writer's last durable sequence number, zero-padded to 20 digits

pointers  (stores.gcp.BigtablePointerStore: one row per pointer; names like "{edition}/{section}",
          "pool/{edition}", "story/{id}", "aliases")
    p#{name}                p:version       pad(live version)
                            p:seq           pad(number of moves so far): the compare-and-set predicate (first move:
                                            "p:seq exists", false branch writes; later moves: "p:seq == the seq I
                                            read", true branch writes). A counter, not the version, so a pointer
                                            moved away and back (ABA) is still told apart
                            h:{pad(seq)}    JSON {version, previous, at, reason} of move number seq: the history
                                            that rollback reads. The last 10,000 moves are kept: the move that writes
                                            h:{seq} deletes h:{seq - 10000} in the same mutation
    One move = one CheckAndMutateRow writing p:version, p:seq and h:{seq} together. ``versions(prefix)`` is one
    row-range scan of ``p#{prefix}`` with a latest-cell filter on p:version.

feeds     (stores.feeds.BigtableFeedStore: the ingest job's registry, schedule checkpoints, seen-URL claims and
          WebSub subscriptions)
    f#{sha256(feed_url)[:32]}    r:config   JSON registry entry {url, publisher_id, tier, kind, enabled}
                                 s:state    JSON schedule checkpoint (transforms.ingest.schedule.FeedState.to_dict:
                                            next/last poll, etag and last_modified as the server sent them, guids,
                                            decayed rates per hour of the week, WebSub lease and hub, the
                                            feed's hints hint_ttl_min / hint_skip_hours / hint_skip_days,
                                            counters)
    u#{sha256(claim_key)[:32]}   s:claim    JSON {key, owner, at}: the page was (or is being) fetched by owner
                                            (create-if-absent; the same owner is granted it again on a replay)
    w#{sub_id}                   s:sub      JSON WebSub subscription {sub_id, topic, hub, secret, callback, state,
                                            requested_at, lease_seconds, lease_expires_ms}

profiles  (stores.gcp.profiles.BigtableProfileStore: one row per reader; never read by a shared page)
    r#{reader_id}           p:profile       JSON (sorted keys): follows {topics, sources, places, entities},
                                            hidden_sources, fewer, interest {vector (64-d), mass, at}, paused,
                                            revision, updated_at.
                                            Updated by compare-and-set: the predicate is the stored document's
                                            revision/updated_at tail ("no p:profile cell" for a new reader)
                            e:{at:013d}     JSON read (story_id, article_id, at, kind), keyed by its event time in
                                            ms; the store keeps the newest 200 (trimmed on append). GC: max age 30
                                            days (MAX_AGE_DAYS), so a reader's history also fades when unused

follows   (stores.gcp.profiles.BigtableProfileStore: follower counts, aggregated; no reader id, so the editions stage
           reads them without access to profiles)
    t#{topic_id}            c:followers     64-bit big-endian counter: readers following the topic id (incremented
                                            and decremented by the origin on follow changes; read by the editions
                                            stage for its topic pages, transforms/editions/overlays/topics.py)

covisit   (stores.covisit.BigtableCovisitStore: one row per story, written whole by the co-visitation job)
    v#{story_id:016x}       m:at            ms (decimal) the counts are as of; readers decay them from it
                            n:{story_id}    decayed "read together" count (decimal text) of one neighbour story
                                            (decimal id); at most stores.covisit.MAX_NEIGHBOURS cells, the largest.
                                            A write deletes family n and sets the new cells in one MutateRow

userclusters (stores.userclusters.BigtableUserClusterStore: MinHash user clusters, For you's "readers like you")
    u#{reader_id}           u:clusters      the reader's cluster ids (decimal, comma-separated), replaced by each
                                            daily run of the user-cluster job; deleted with the reader's profile
                            u:at            ms (decimal) of the run that wrote them; the origin ignores older than
                                            stores.userclusters.MEMBERSHIP_MAX_AGE_MS
    k#{cluster_id:016x}     m:at, m:total   ms the counts are as of; the cluster's decayed total of clicks
                            n:{story_id}    decayed clicks of the cluster's members on one story (at most
                                            stores.userclusters.MAX_STORIES, the largest), written whole by the
                                            co-visitation job (no reader id in these rows)
    c#{reader_id}           c:{at:013d}#{story_id}  (empty) one accepted read of the reader (the click log the
                                            co-visitation job appends and the daily user-cluster job reads in
                                            key-range splits); GC max age 180 days; deleted with the membership

audit     (stores.audit.BigtableAuditLog: the operators' append-only trail; no GC by age, nothing deletes it)
    a#{at:013d}#{nonce}     m:entry         JSON {at, action, target, who, why, detail} of one operator action
                                            (takedown, control, rollback); key order is time order

controls  (stores.controls.BigtableControlStore: editorial controls, next to the page pointers they steer; read
          by the stories job's editions stage every cycle, written by ``newsroom control``)
    c#{edition}/{section}#{kind}#{story_id}  c:control  JSON stores.controls.Control {kind, edition, section,
                                            set_at, expires_at, who, why, story_id, position, factor, label,
                                            version}; kind pin, demote, label (story_id decimal) or hold (story_id
                                            empty: one hold per page). An edition's controls are one prefix scan
                                            of c#{edition}/. Readers ignore expired records; GC: max age 30 days
                                            (MAX_AGE_DAYS; a control expires within 7 days of being set)

takedowns (stores.takedowns.BigtableTakedownStore: tombstones of articles and stories never to be served; read by
          the origin on every poll when the generation moved, by the editions stage every cycle and by the
          backfill; written by ``newsroom takedown`` and by ingest on a publisher's 404/410)
    t#{kind}#{id}           t:tombstone     JSON stores.takedowns.Tombstone {kind (article|story), id, reason, who,
                                            at, url}; an undo deletes the row. No GC rule: a takedown lasts until
                                            it is undone
    g                       t:generation    64-bit counter (ReadModifyWrite increment) moved by every set and
                                            clear: readers re-read the t# rows only when it changed

GC rules: :data:`TABLES` gives the max versions per family (1 everywhere: every history entry has its own
qualifier), :data:`MAX_AGE_DAYS` the ages, unioned with it (a cell goes when either rule says so).
``stores.gcp.provision`` creates both, and brings existing families to them; the Bigtable emulator accepts and
reports the rules but does not enforce GC (LOCAL_STACK.md).

Every read and every CheckAndMutate predicate carries a "latest cell only" filter: the Bigtable emulator keeps
old cell versions, and production GC is asynchronous, so correctness never depends on GC.
"""

from __future__ import annotations

import hashlib

# table -> family -> max cell versions kept (GC rule)
TABLES: dict[str, dict[str, int]] = {
    "articles": {"m": 1, "d": 1, "v": 1},
    "stories": {"m": 1, "mem": 1, "lnk": 1},
    "pointers": {"p": 1, "h": 1},
    "feeds": {"r": 1, "s": 1},
    "profiles": {"p": 1, "e": 1},
    "covisit": {"m": 1, "n": 1},
    "userclusters": {"u": 1, "m": 1, "n": 1, "c": 1},
    "audit": {"m": 1},
    "controls": {"c": 1},
    "takedowns": {"t": 1},
    "follows": {"c": 1},
}

# table -> family -> max cell age in days (GC rule, unioned with the max-versions rule of TABLES). Read events are
# personal data that only the recent trend needs.
MAX_AGE_DAYS: dict[str, dict[str, int]] = {
    "profiles": {"e": 30},
    "controls": {"c": 30},
    # memberships are rewritten daily; a cluster idle a week fades; the click log is kept for months
    "userclusters": {"u": 3, "m": 7, "n": 7, "c": 180},
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


def covisit_key(story_id: int) -> bytes:
    return f"v#{story_id:016x}".encode()


def membership_key(reader_id: str) -> bytes:
    return f"u#{reader_id}".encode()


def click_log_key(reader_id: str) -> bytes:
    return f"c#{reader_id}".encode()


def cluster_key(cluster_id: int) -> bytes:
    return f"k#{cluster_id:016x}".encode()


def audit_key(at_ms: int, nonce: str) -> bytes:
    return f"a#{int(at_ms):013d}#{nonce}".encode()


def control_prefix(edition: str) -> bytes:
    return f"c#{edition}/".encode()


def control_key(edition: str, section: str, kind: str, story_id: str = "") -> bytes:
    return f"c#{edition}/{section}#{kind}#{story_id}".encode()


TAKEDOWN_GENERATION_KEY = b"g"


def takedown_key(kind: str, id_: str) -> bytes:
    return f"t#{kind}#{id_}".encode()


# Pub/Sub topics (and the SQLite queue names of the embedded bus). Each carries one Avro message type.
TOPICS: dict[str, str] = {
    "items-raw": "RawItem",
    "articles": "Article",
    "story-changes": "StoryChange",
    "fetch-requests": "FetchRequest",
    "read-events": "ReadEvent",
    "dead-letter": "DeadLetter",
    "breaking": "Breaking",
}

# Contracts that never cross a job boundary, so they have no topic: each with where it flows. They keep an Avro
# schema all the same, because the backfill writes them out (storyline_changes.jsonl) and a replay reads them back.
IN_JOB_MESSAGES: dict[str, str] = {
    "StorylineChange": "stories job: the storyline stage to the ranker (pipelines/stories.py)",
}
