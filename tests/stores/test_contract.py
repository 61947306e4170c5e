"""The store contract (stores/base.py), run unchanged against both backends through the ``store_config`` fixture:
embedded (SQLite + directory) and gcp (Bigtable, GCS and Pub/Sub emulators, marked ``emulator``).

Concurrency is part of the contract: for every conditional operation two threads released together by a barrier
race on the same key, several rounds, and exactly one must win.
"""

from __future__ import annotations

import threading
import time

import pytest

from schemas import codec
from schemas.tables import IN_JOB_MESSAGES, TOPICS
from stores import AlreadyExists, MessageBus, NotFound, PointerStore, WriteOutcome, open_store, open_stores


@pytest.fixture
def stores(store_config):
    return open_stores(store_config)


def article(sample_record, aid="a" * 32, version=1, content_hash=None, **kw):
    return sample_record(
        "Article",
        article_id=aid,
        version=version,
        content_hash=content_hash or f"hash-{aid}-{version}",
        title=f"Headline v{version}",
        **kw,
    )


# ---------------------------------------------------------------------------------------------------- articles


def test_article_conditional_create_new_duplicate_update_stale(stores, sample_record):
    arts = stores.articles
    v1 = article(sample_record, version=1)
    r = arts.write(v1)
    assert (r.outcome, r.stored_version, r.stored_content_hash) == (WriteOutcome.NEW, 1, v1["content_hash"])

    again = arts.write(article(sample_record, version=1, content_hash="other-text"))
    assert again.outcome == WriteOutcome.DUPLICATE
    assert (again.stored_version, again.stored_content_hash) == (1, v1["content_hash"])  # the stored one, unchanged
    assert arts.get(v1["article_id"])["content_hash"] == v1["content_hash"]

    v3 = article(sample_record, version=3)
    r = arts.write(v3)
    assert (r.outcome, r.stored_version, r.stored_content_hash) == (WriteOutcome.UPDATE, 3, v3["content_hash"])
    assert arts.get(v1["article_id"])["title"] == "Headline v3"

    stale = arts.write(article(sample_record, version=2))
    assert (stale.outcome, stale.stored_version) == (WriteOutcome.STALE, 3)
    assert stale.stored_content_hash == v3["content_hash"]
    assert arts.get(v1["article_id"])["version"] == 3  # the stale version did not overwrite the latest
    assert arts.get_version(v1["article_id"], 2) is None  # ... and was not recorded either


T0 = 1_767_225_600_000
HOUR = 3_600_000


@pytest.mark.parametrize("stated", [True, False], ids=["modified-stated", "fetch-time-only"])
def test_article_newer_first_then_older_is_stale_and_the_newest_stays(stores, sample_record, stated):
    """Ordering: the newer fetch is processed first; the older one arrives late and must not overwrite it,
    although dedupe gives it the next version number (the store knows nothing of its text)."""
    arts = stores.articles
    aid = ("b" if stated else "c") * 32

    def version(n, title, at):
        made = article(sample_record, aid=aid, version=n, first_seen_at=at, modified_at=at if stated else None)
        return dict(made, title=title)

    newer = version(1, "Quake: four hurt (corrected)", T0 + 2 * HOUR)
    assert arts.write(newer).outcome == WriteOutcome.NEW
    older = version(2, "Quake: forty hurt", T0 + HOUR)
    r = arts.write(older)
    assert (r.outcome, r.stored_version, r.newer_stored) == (WriteOutcome.STALE, 1, True)
    assert r.stored_content_hash == newer["content_hash"]
    assert arts.get(aid)["title"] == "Quake: four hurt (corrected)"  # the newest stays
    assert arts.get_version(aid, 2) is None
    # an explicit order (dedupe passes the incoming version's own) decides the same way
    assert arts.write(older, order=(0 if not stated else T0 + HOUR, T0 + HOUR)).outcome == WriteOutcome.STALE
    # a still newer version goes through
    newest = version(2, "Quake: five hurt", T0 + 3 * HOUR)
    assert arts.write(newest).outcome == WriteOutcome.UPDATE
    assert arts.get(aid)["title"] == "Quake: five hurt"


def test_article_get_and_version_history(stores, sample_record):
    arts = stores.articles
    aid = "b" * 32
    assert arts.get(aid) is None
    assert arts.get_version(aid, 1) is None
    records = {v: article(sample_record, aid=aid, version=v) for v in (1, 2, 5)}
    for rec in records.values():
        arts.write(rec)
    for v, rec in records.items():
        assert arts.get_version(aid, v) == codec.check("Article", rec)
    assert arts.get_version(aid, 3) is None
    assert arts.get(aid) == codec.check("Article", records[5])
    other = article(sample_record, aid="c" * 32, version=1)
    arts.write(other)
    assert arts.get("c" * 32)["title"] == "Headline v1" and arts.get(aid)["version"] == 5  # rows are independent


def test_claim_content_first_claimer_owns(stores):
    arts = stores.articles
    assert arts.claim_content("h1", "first") == "first"
    assert arts.claim_content("h1", "second") == "first"
    assert arts.claim_content("h1", "first") == "first"  # replay of the winner
    assert arts.claim_content("h2", "second") == "second"


def test_article_write_rejects_invalid_record(stores, sample_record):
    bad = article(sample_record)
    del bad["title"]
    with pytest.raises(codec.CodecError, match="title"):
        stores.articles.write(bad)
    assert stores.articles.get(bad["article_id"]) is None


# ----------------------------------------------------------------------------------------------------- stories


def test_story_rows_members_links(stores):
    st = stores.stories
    sid = 7_394_201_113_445_597_184  # a real-looking 64-bit id
    assert st.get_story(sid) is None
    st.put_story(sid, {"language": "en", "version": 1}, [0.25, -0.5, 0.125])
    st.add_members(sid, {"art1": {"publisher_id": "p1", "is_copy": False}, "art2": {"publisher_id": "p2"}})
    st.add_members(sid, {"art3": {"publisher_id": "p3", "is_copy": True}})
    st.add_members(sid, {"art2": {"publisher_id": "p2", "is_copy": True}})  # overwrite
    st.remove_members(sid, ["art1", "never-there"])
    st.add_link(sid, 42, {"score": 0.875})
    got = st.get_story(sid)
    assert got["story_id"] == sid
    assert got["meta"] == {"language": "en", "version": 1}
    assert got["centroid"] == pytest.approx([0.25, -0.5, 0.125])
    assert got["members"] == {
        "art2": {"publisher_id": "p2", "is_copy": True},
        "art3": {"publisher_id": "p3", "is_copy": True},
    }
    assert got["links"] == {42: {"score": 0.875}}
    assert got["alias_of"] is None

    st.put_story(sid, {"language": "en", "version": 2})  # no centroid given: the stored one stays
    got = st.get_story(sid)
    assert got["meta"]["version"] == 2 and got["centroid"] == pytest.approx([0.25, -0.5, 0.125])
    st.put_story(sid, {"language": "en", "version": 3}, [1.0, 0.5])
    assert st.get_story(sid)["centroid"] == pytest.approx([1.0, 0.5])


def test_alias_chains_resolve_in_one_hop(stores):
    st = stores.stories
    a, b, c, d = 101, 102, 103, 104
    for s in (a, b, c, d):
        st.put_story(s, {"n": s})
    assert st.resolve(a) == a and st.resolve(999) == 999
    st.set_alias(a, b)
    assert st.resolve(a) == b
    st.set_alias(b, c)  # b merged on: a must now point at c directly
    assert (st.resolve(a), st.resolve(b), st.resolve(c)) == (c, c, c)
    assert st.get_story(a)["alias_of"] == c and st.get_story(b)["alias_of"] == c
    st.set_alias(d, a)  # merging into an alias lands on the end of its chain
    assert st.resolve(d) == c and st.get_story(d)["alias_of"] == c
    st.set_alias(c, 105)  # the survivor of three merges is merged too: all of them move in one hop
    assert {s: st.resolve(s) for s in (a, b, c, d)} == {a: 105, b: 105, c: 105, d: 105}
    with pytest.raises(ValueError):
        st.set_alias(105, a)  # a resolves to 105: a cycle
    with pytest.raises(ValueError):
        st.set_alias(106, 106)


def test_live_set_per_language(stores):
    st = stores.stories
    ids = [10, 9, 2**40 + 1, 255, 256]
    for s in ids:
        st.set_live("en", s, True)
    st.set_live("fr", 9, True)
    st.set_live("en", 255, True)  # idempotent
    assert st.live_stories("en") == sorted(ids)
    st.set_live("en", 9, False)
    st.set_live("en", 12345, False)  # never live: no-op
    assert st.live_stories("en") == [10, 255, 256, 2**40 + 1]
    assert st.live_stories("fr") == [9]
    assert st.live_stories("de") == []


def test_story_ids_scan_every_story_in_pages(stores):
    st = stores.stories
    ids = [3, 17, 255, 256, 2**40 + 1]
    for s in ids:
        st.put_story(s, {"language": "en"})
    st.set_alias(17, 3)  # aliases are stored stories too: the scan lists them, readers skip them
    assert st.story_ids() == ids
    assert st.story_ids(after=17, limit=2) == [255, 256]
    assert st.story_ids(after=256) == [2**40 + 1]
    assert st.story_ids(after=2**40 + 1) == []
    # Paging with the last id seen covers every story once.
    seen, after = [], -1
    while page := st.story_ids(after=after, limit=2):
        seen += page
        after = page[-1]
    assert seen == ids


def test_mark_change_is_create_if_absent(stores):
    st = stores.stories
    assert st.mark_change("en-000001-NEW_STORY") is True
    assert st.mark_change("en-000001-NEW_STORY") is False
    assert st.mark_change("en-000002-ASSIGN") is True


def test_writer_seq_per_language(stores):
    st = stores.stories
    assert st.writer_seq("en") == 0
    st.set_writer_seq("en", 5)
    st.set_writer_seq("fr", 2**40)
    assert (st.writer_seq("en"), st.writer_seq("fr")) == (5, 2**40)
    st.set_writer_seq("en", 6)
    assert st.writer_seq("en") == 6


# ---------------------------------------------------------------------------------------------------- pointers


def test_pointer_compare_and_set_win_and_lose(stores):
    p = stores.pointers
    name = "en-us/top"
    assert p.get(name) is None
    assert p.compare_and_set(name, 1, 2) is False  # expected a version, pointer absent
    assert p.compare_and_set(name, None, 1, reason="first") is True
    assert p.compare_and_set(name, None, 5) is False  # expected absent, pointer exists
    assert p.compare_and_set(name, 1, 2) is True
    assert p.compare_and_set(name, 1, 3) is False  # lost: someone moved it from 1 already
    assert p.get(name) == 2
    assert p.compare_and_set(name, 2, 1, reason="back") is True  # back to an earlier value (ABA) ...
    assert p.compare_and_set(name, 1, 4) is True  # ... and the counter still tells the moves apart
    assert p.get(name) == 4
    hist = p.history(name)
    assert [(h["version"], h["previous"], h["reason"]) for h in hist] == [
        (1, None, "first"),
        (2, 1, ""),
        (1, 2, "back"),
        (4, 1, ""),
    ]
    assert all(isinstance(h["at"], int) and h["at"] > 1_600_000_000_000 for h in hist)
    assert p.history("en-us/none") == []


def test_pointer_names_by_prefix(stores):
    p = stores.pointers
    for n in ("en-us/top", "en-us/world", "en-gb/top", "pool/en-us"):
        assert p.compare_and_set(n, None, 1)
    assert p.names() == ["en-gb/top", "en-us/top", "en-us/world", "pool/en-us"]
    assert p.names("en-us/") == ["en-us/top", "en-us/world"]
    assert p.names("pool/") == ["pool/en-us"]
    assert p.names("zz") == []


def test_pointer_rollback(stores):
    p = stores.pointers
    name = "en-us/world"
    with pytest.raises(NotFound):
        p.rollback(name)
    for expected, new in ((None, 1), (1, 2), (2, 3)):
        assert p.compare_and_set(name, expected, new)
    assert p.rollback(name) == 2  # to the version live before the current one
    assert p.get(name) == 2
    assert p.history(name)[-1] == {**p.history(name)[-1], "version": 2, "previous": 3, "reason": "rollback"}
    assert p.rollback(name, to_version=1) == 1  # to a given version that was live
    assert p.get(name) == 1
    with pytest.raises(ValueError, match="never live"):
        p.rollback(name, to_version=7)
    assert p.get(name) == 1
    with pytest.raises(ValueError):
        p.rollback(name)  # nothing earlier than v1
    assert p.rollback(name, to_version=3) == 3  # forward again to a version that was live


def test_pointer_versions_in_one_call(stores):
    p = stores.pointers
    assert p.versions() == {} and p.versions("en-us/") == {}
    moves = {"en-us/top": [1, 2, 3], "en-us/world": [5], "en-gb/top": [1, 7], "pool/en-us": [4, 9], "story/42": [1]}
    for name, versions in moves.items():
        previous = None
        for v in versions:
            assert p.compare_and_set(name, previous, v)
            previous = v
    p.rollback("en-gb/top")  # back to 1: versions() reports the live version, not the newest or the highest
    live = {"en-gb/top": 1, "en-us/top": 3, "en-us/world": 5, "pool/en-us": 9, "story/42": 1}
    got = p.versions()
    assert got == live and list(got) == sorted(live)  # in name order
    assert p.versions("en-us/") == {"en-us/top": 3, "en-us/world": 5}
    assert p.versions("en-us/world") == {"en-us/world": 5}  # a full name is a prefix of itself
    assert p.versions("story/") == {"story/42": 1}
    assert p.versions("zz") == {} and p.versions("en-us/top/") == {}
    assert p.versions() == {n: p.get(n) for n in p.names()}  # the definition
    assert PointerStore.versions(p, "en-") == p.versions("en-")  # the interface's default agrees with the override


def test_pointer_versions_of_many_pointers(stores):
    p = stores.pointers
    expected = {}
    for i in range(150):
        name = f"story/{i:05d}"
        assert p.compare_and_set(name, None, 1)
        if i % 3 == 0:
            assert p.compare_and_set(name, 1, i + 2)
        expected[name] = p.get(name)
    assert p.compare_and_set("en-us/top", None, 8)
    assert p.versions("story/") == expected
    assert p.versions() == {**expected, "en-us/top": 8}


def test_pointer_retire_is_a_conditional_delete_with_a_tombstone(stores):
    """Story pointers are retired, so listings and the origin's memory stop growing. History stays;
    a late writer replaying an old version cannot bring the pointer back; a genuinely newer version can."""
    p = stores.pointers
    name = "story/77"
    assert p.retire(name, 1) is False  # nothing to retire
    for expected, new in ((None, 1), (1, 2)):
        assert p.compare_and_set(name, expected, new)
    assert p.compare_and_set("story/78", None, 1)
    assert p.retire(name, 1) is False  # not the live version
    assert p.get(name) == 2
    assert p.retire(name, 2) is True
    assert p.get(name) is None
    assert p.retire(name, 2) is False  # already retired
    assert name not in p.names() and name not in p.names("story/")
    assert p.versions("story/") == {"story/78": 1} and p.versions() == {"story/78": 1}
    assert [(h["version"], h["previous"], h["reason"]) for h in p.history(name)] == [
        (1, None, ""),
        (2, 1, ""),
        (None, 2, "retired"),
    ]
    assert p.compare_and_set(name, 2, 3) is False  # from the version it had: gone
    assert p.compare_and_set(name, None, 2) is False  # a replay of the retired version: tombstone
    assert p.compare_and_set(name, None, 1) is False  # ... or of an older one
    assert p.get(name) is None and p.versions("story/") == {"story/78": 1}
    with pytest.raises(NotFound):
        p.rollback(name)
    assert p.compare_and_set(name, None, 3, reason="revived") is True  # newer than the tombstone: a real move
    assert p.versions("story/") == {"story/77": 3, "story/78": 1}
    assert p.rollback(name) == 2  # history with a retirement in it still rolls back
    assert p.retire(name, 2) is True and p.get(name) is None


def test_pointer_revive_brings_a_retired_pointer_back_to_its_last_version(stores):
    """A retired story pointer whose story a storyline page links again is brought back to the version it was
    retired from (its object is still there), once; a live or never-retired pointer is left alone."""
    p = stores.pointers
    name = "story/79"
    assert p.revive(name) is None  # never existed
    for expected, new in ((None, 1), (1, 2)):
        assert p.compare_and_set(name, expected, new)
    assert p.revive(name) is None and p.get(name) == 2  # live: nothing to revive
    assert p.retire(name, 2) is True
    assert p.revive(name) == 2
    assert p.get(name) == 2 and p.versions("story/") == {name: 2}
    assert p.revive(name) is None  # live again
    assert [(h["version"], h["previous"], h["reason"]) for h in p.history(name)][-2:] == [
        (None, 2, "retired"),
        (2, None, "revived"),
    ]
    assert p.compare_and_set(name, 2, 3) is True  # moves on as usual
    assert p.retire(name, 3) is True and p.compare_and_set(name, None, 3) is False  # a new tombstone holds
    assert p.revive(name) == 3


def test_race_pointer_revive_against_revive(stores):
    p = stores.pointers
    for rnd in range(ROUNDS):
        assert p.compare_and_set(f"story/v{rnd}", None, 4) and p.retire(f"story/v{rnd}", 4)

    for rnd, results in enumerate(race(lambda i, rnd: p.revive(f"story/v{rnd}"))):
        assert sorted(results, key=str) == [4, None], results
        assert p.get(f"story/v{rnd}") == 4


def test_race_pointer_retire_against_move(stores):
    """A retirer and a mover racing from the same live version: exactly one wins, and the outcome is consistent."""
    p = stores.pointers
    for rnd in range(ROUNDS):
        assert p.compare_and_set(f"story/r{rnd}", None, 1)

    def op(i, rnd):
        name = f"story/r{rnd}"
        return p.retire(name, 1) if i == 0 else p.compare_and_set(name, 1, 2)

    for rnd, results in enumerate(race(op)):
        assert sorted(results) == [False, True], results
        assert p.get(f"story/r{rnd}") == (None if results[0] else 2)


# --------------------------------------------------------------------------------------------------- snapshots


def test_snapshots_are_immutable(stores):
    snaps = stores.snapshots
    path = "pages/en-us/top/v1.json"
    assert not snaps.exists(path)
    with pytest.raises(NotFound):
        snaps.get(path)
    snaps.put(path, b'{"v": 1}')
    assert snaps.exists(path) and snaps.get(path) == b'{"v": 1}'
    with pytest.raises(AlreadyExists):
        snaps.put(path, b'{"v": "overwritten"}')
    with pytest.raises(AlreadyExists):
        snaps.put(path, b'{"v": 1}')  # even the same bytes: a name is written once
    assert snaps.get(path) == b'{"v": 1}'


def test_snapshot_list(stores):
    snaps = stores.snapshots
    paths = ["pages/en-us/top/v2.json", "pages/en-us/top/v1.json", "pages/en-gb/top/v1.json", "pools/en-us/v1.json"]
    for i, p in enumerate(paths):
        snaps.put(p, str(i).encode())
    assert snaps.list() == sorted(paths)
    assert snaps.list("pages/en-us/") == ["pages/en-us/top/v1.json", "pages/en-us/top/v2.json"]
    assert snaps.list("pools/") == ["pools/en-us/v1.json"]
    assert snaps.list("stories/") == []
    assert snaps.get("pools/en-us/v1.json") == b"3"


# --------------------------------------------------------------------------------------------------------- bus


def test_topics_cover_every_message_schema():
    """Every contract either has a topic or is declared in-job (with where it flows); never both, never neither."""
    assert not set(TOPICS.values()) & set(IN_JOB_MESSAGES)
    assert sorted(set(TOPICS.values()) | set(IN_JOB_MESSAGES)) == sorted(codec.MESSAGES)


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_bus_round_trip_of_every_schema(stores, sample_record, topic):
    bus = stores.bus
    name = TOPICS[topic]
    sub = f"{topic}-contract"
    bus.ensure_subscription(topic, sub)
    bus.ensure_subscription(topic, sub)  # idempotent
    record = sample_record(name)
    mid = bus.publish_record(topic, record)
    assert isinstance(mid, str) and mid
    got = []
    deadline = time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        got = bus.pull(sub, max_messages=10, timeout=2.0)
    assert len(got) == 1, f"expected one message on {sub}, got {len(got)}"
    msg = got[0]
    assert msg.message_id == mid
    assert msg.attributes == codec.attributes(name)
    assert bus.decode(topic, msg) == codec.check(name, record)
    bus.ack(sub, [msg.ack_id])
    assert bus.pull(sub, timeout=0.5) == []  # acked: not redelivered


def test_bus_fans_out_to_every_subscription_and_preserves_bytes(stores):
    bus = stores.bus
    bus.ensure_subscription("dead-letter", "dl-one")
    bus.ensure_subscription("dead-letter", "dl-two")
    payloads = [bytes([i]) * (i + 1) for i in range(5)]
    for i, data in enumerate(payloads):
        bus.publish("dead-letter", data, {"n": i})
    for sub in ("dl-one", "dl-two"):
        seen = {}
        deadline = time.monotonic() + 15
        while len(seen) < len(payloads) and time.monotonic() < deadline:
            msgs = bus.pull(sub, max_messages=10, timeout=1.0)
            seen.update({m.attributes["n"]: m.data for m in msgs})
            bus.ack(sub, [m.ack_id for m in msgs])
        assert seen == {str(i): d for i, d in enumerate(payloads)}  # attribute values travel as strings


def pull_all(bus, sub, n, within=15.0):
    got = {}
    deadline = time.monotonic() + within
    while len(got) < n and time.monotonic() < deadline:
        msgs = bus.pull(sub, max_messages=100, timeout=1.0)
        got.update({m.message_id: m for m in msgs})
        bus.ack(sub, [m.ack_id for m in msgs])
    return got


@pytest.mark.parametrize("impl", ["backend", "interface-default"])
def test_bus_publish_many(stores, sample_record, impl):
    bus = stores.bus
    publish_many = bus.publish_many if impl == "backend" else lambda *a: MessageBus.publish_many(bus, *a)
    bus.ensure_subscription("story-changes", "many-a")
    bus.ensure_subscription("story-changes", "many-b")
    records = [sample_record("StoryChange", change_id=f"en-{i:012d}-ASSIGN", seq=i) for i in range(25)]
    attrs = codec.attributes("StoryChange")
    items = [(codec.encode("StoryChange", r), {"n": i, **attrs}) for i, r in enumerate(records)]
    ids = publish_many("story-changes", items)
    assert len(ids) == len(items) and len(set(ids)) == len(items) and all(isinstance(i, str) and i for i in ids)
    for sub in ("many-a", "many-b"):
        got = pull_all(bus, sub, len(items))
        assert set(got) == set(ids), sub
        for i, mid in enumerate(ids):  # the i-th id is the i-th item's
            msg = got[mid]
            assert msg.attributes["n"] == str(i)
            assert bus.decode("story-changes", msg) == codec.check("StoryChange", records[i])
    assert publish_many("story-changes", []) == []
    assert bus.pull("many-a", timeout=0.3) == []  # nothing was published by the empty call


def test_bus_publish_with_ordering_key(stores, sample_record):
    """items-raw is published with an ordering key per URL (ordering): every message is delivered, in
    publish order on the embedded bus (which keeps the key as an attribute)."""
    bus = stores.bus
    bus.ensure_subscription("items-raw", "ordered-raw")
    records = [sample_record("RawItem", fetched_at=T0 + i) for i in range(5)]
    ids = [bus.publish_record("items-raw", r, ordering_key="https://dailyherald.test/news/a") for r in records]
    got = pull_all(bus, "ordered-raw", len(ids))
    assert set(got) == set(ids)
    assert [bus.decode("items-raw", got[m])["fetched_at"] for m in ids] == [T0 + i for i in range(5)]
    if not hasattr(bus, "subscriber"):  # embedded
        assert all(got[m].attributes["ordering_key"] == "https://dailyherald.test/news/a" for m in ids)
        assert sorted(got, key=int) == ids


def test_bus_publish_many_to_unknown_topic_is_not_found(stores):
    with pytest.raises(NotFound):
        stores.bus.publish_many("no-such-topic", [(b"x", {}), (b"y", {"k": "v"})])


def test_bus_publish_to_unknown_topic_is_not_found(stores):
    with pytest.raises(NotFound):
        stores.bus.publish("no-such-topic", b"x")


def test_bus_pull_on_empty_subscription_returns_within_timeout(stores):
    stores.bus.ensure_subscription("read-events", "empty-sub")
    t = time.monotonic()
    assert stores.bus.pull("empty-sub", timeout=0.5) == []
    assert time.monotonic() - t < 10  # bounded (generous: the machine is shared)


def test_bus_redelivers_unacked_messages_after_the_ack_deadline(embedded_store_config):
    # Embedded only: Pub/Sub's minimum ack deadline is 10 s, too slow for the default suite.
    bus = open_store("bus", embedded_store_config)
    bus.ensure_subscription("fetch-requests", "redeliver", ack_deadline_s=1)
    mid = bus.publish("fetch-requests", b"payload")
    first = bus.pull("redeliver", timeout=1.0)
    assert [m.message_id for m in first] == [mid]
    assert bus.pull("redeliver", timeout=0.2) == []  # leased: not handed out again before the deadline
    time.sleep(1.1)
    again = bus.pull("redeliver", timeout=1.0)
    assert [m.message_id for m in again] == [mid] and again[0].data == b"payload"
    bus.ack("redeliver", [again[0].ack_id])
    time.sleep(1.1)
    assert bus.pull("redeliver", timeout=0.2) == []  # acked: gone for good


# ------------------------------------------------------------------------------------------------------- races

ROUNDS = 5


def race(op, rounds=ROUNDS):
    """Run ``op(thread_index, round)`` in two threads released together; return the results of every round."""
    out = []
    for rnd in range(rounds):
        barrier = threading.Barrier(2)
        results: list = [None, None]
        errors: list = []

        def run(i):
            try:
                barrier.wait(timeout=30)
                results[i] = op(i, rnd)
            except BaseException as exc:  # noqa: BLE001 - surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        out.append(results)
    return out


def test_race_article_create(stores, sample_record):
    arts = stores.articles

    def op(i, rnd):
        return arts.write(article(sample_record, aid=f"race-create-{rnd}", version=1, content_hash=f"writer-{i}"))

    for rnd, results in enumerate(race(op)):
        outcomes = sorted(r.outcome.value for r in results)
        assert outcomes == ["duplicate", "new"], outcomes
        winner = next(i for i, r in enumerate(results) if r.outcome == WriteOutcome.NEW)
        assert arts.get(f"race-create-{rnd}")["content_hash"] == f"writer-{winner}"
        assert results[1 - winner].stored_content_hash == f"writer-{winner}"


def test_race_article_update_to_same_version(stores, sample_record):
    arts = stores.articles
    for rnd in range(ROUNDS):
        arts.write(article(sample_record, aid=f"race-update-{rnd}", version=1))

    def op(i, rnd):
        return arts.write(article(sample_record, aid=f"race-update-{rnd}", version=2, content_hash=f"writer-{i}"))

    for rnd, results in enumerate(race(op)):
        assert sorted(r.outcome.value for r in results) == ["duplicate", "update"]
        winner = next(i for i, r in enumerate(results) if r.outcome == WriteOutcome.UPDATE)
        stored = arts.get(f"race-update-{rnd}")
        assert (stored["version"], stored["content_hash"]) == (2, f"writer-{winner}")


def test_race_pointer_compare_and_set(stores):
    p = stores.pointers
    for rnd in range(ROUNDS):
        assert p.compare_and_set(f"race/{rnd}", None, 1)

    def op(i, rnd):
        return p.compare_and_set(f"race/{rnd}", 1, 10 + i, reason=f"writer-{i}")

    for rnd, results in enumerate(race(op)):
        assert sorted(results) == [False, True]
        winner = results.index(True)
        assert p.get(f"race/{rnd}") == 10 + winner
        assert [h["reason"] for h in p.history(f"race/{rnd}")] == ["", f"writer-{winner}"]


def test_race_pointer_first_move(stores):
    p = stores.pointers
    for rnd, results in enumerate(race(lambda i, rnd: p.compare_and_set(f"first/{rnd}", None, 1 + i))):
        assert sorted(results) == [False, True]
        assert p.get(f"first/{rnd}") == 1 + results.index(True)
        assert len(p.history(f"first/{rnd}")) == 1


def test_race_snapshot_put(stores):
    snaps = stores.snapshots

    def op(i, rnd):
        try:
            snaps.put(f"pages/race/s/v{rnd}.json", f"writer-{i}".encode())
            return True
        except AlreadyExists:
            return False

    for rnd, results in enumerate(race(op)):
        assert sorted(results) == [False, True]
        assert snaps.get(f"pages/race/s/v{rnd}.json") == f"writer-{results.index(True)}".encode()


def test_race_claim_content(stores):
    arts = stores.articles
    for rnd, results in enumerate(race(lambda i, rnd: arts.claim_content(f"race-hash-{rnd}", f"writer-{i}"))):
        assert results[0] == results[1] and results[0] in ("writer-0", "writer-1")
        assert arts.claim_content(f"race-hash-{rnd}", "late") == results[0]


def test_race_mark_change(stores):
    st = stores.stories
    for results in race(lambda i, rnd: st.mark_change(f"race-change-{rnd}")):
        assert sorted(results) == [False, True]
