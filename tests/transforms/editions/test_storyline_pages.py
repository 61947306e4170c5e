"""Storyline pages written by the ranker and completed by the publisher: a storyline's archive keeps the episodes
that left the ranker's book (the live set), merges and splits move episodes, a story page names its storyline."""

from __future__ import annotations

import json

import pytest

from schemas.pages import storyline_path, validate_page
from stores import StoreConfig, open_stores
from transforms.editions.book.storylines import compact_storyline
from transforms.editions.overlays.storyline_pages import merged_document, storyline_items
from transforms.editions.publish.snapshots import PointerRetention, SnapshotPublisher

DAY = 24 * 60 * 60 * 1000


def sl_event(seq, kind, at, storyline_id, story_id=None, other=None, story_ids=()):
    change = {"change_id": f"sl-{seq}", "kind": kind, "seq": seq, "at": at, "storyline_id": storyline_id}
    change.update(story_id=story_id, other_storyline_id=other, story_ids=list(story_ids), language="en")
    return compact_storyline(change)


@pytest.fixture
def stores(tmp_path):
    return open_stores(StoreConfig(data_dir=str(tmp_path / "data")))


def run(ranker, now, publisher):
    """One ranker cycle, its storyline items published; returns (cycle output, items)."""
    out = ranker.cycle(now)
    items = storyline_items(ranker.book, out, ranker.params, now)
    for it in items:
        assert publisher.publish(it)["outcome"] in ("published", "unchanged", "stale"), it["pointer"]
    return out, items


def live(stores, language, storyline_id):
    pointer = f"storyline/{language}/{storyline_id}"
    version = stores.pointers.get(pointer)
    if version is None:
        return None
    doc = json.loads(stores.snapshots.get(storyline_path(language, storyline_id, version)))
    validate_page("storyline", doc)
    return doc


def test_a_storyline_page_keeps_episodes_long_out_of_the_live_set(stores, make_ranker):
    from tests.transforms.editions.conftest import World

    publisher = SnapshotPublisher(stores, languages=("en",))
    T, MIN = World.T0, World.MIN
    launch = World()
    launch.story(1, ["paper-a", "paper-b", "paper-c"], T - 20 * DAY, title="Probe launched toward the moon")
    r1 = make_ranker(launch)
    r1.pulses.append(sl_event(1, "NEW_STORYLINE", T - 20 * DAY + 10 * MIN, 70, story_id=1))
    out, items = run(r1, T - 20 * DAY + 30 * MIN, publisher)
    assert [it["pointer"] for it in items] == ["storyline/en/70"]
    assert "storyline_id" not in next(c for c in out.coverage if c["story_id"] == "1")  # one episode: no link
    first = live(stores, "en", 70)
    assert [e["story_id"] for e in first["episodes"]] == ["1"]

    # Weeks later: a new book (the launch story left the live set and the compacted log); a landing story joins.
    landing = World()
    landing.story(2, ["paper-a", "paper-d"], T, title="Probe lands on the moon")
    r2 = make_ranker(landing)
    r2.pulses.append(sl_event(2, "ATTACH", T + 10 * MIN, 70, story_id=2))
    out, _ = run(r2, T + 30 * MIN, publisher)
    doc = live(stores, "en", 70)
    assert [e["story_id"] for e in doc["episodes"]] == ["2", "1"]  # newest first, the archived one kept
    assert doc["title"] == "Probe lands on the moon"
    ep1 = doc["episodes"][1]
    assert (ep1["title"], ep1["article_count"], ep1["publisher_count"]) == ("Probe launched toward the moon", 3, 3)
    assert next(c for c in out.coverage if c["story_id"] == "2")["storyline_id"] == "70"


def test_merge_and_split_move_archived_episodes(stores):
    def read(docs):
        return lambda pointer: docs.get(pointer)

    def ep(sid, day):
        t = f"2026-01-{day:02d}T00:00:00Z"
        return {
            "story_id": sid,
            "title": f"t{sid}",
            "first_at": t,
            "last_at": t,
            "article_count": 1,
            "publisher_count": 1,
        }

    def doc(sl, eps, **kw):
        return {"schema": "newsroom.storyline/v1", "storyline_id": sl, "language": "en", "version": 9, "title": "",
                "updated_at": "2026-01-01T00:00:00Z", "episodes": eps, **kw}  # fmt: skip

    held = {"storyline/en/1": doc("1", [ep("10", 1), ep("11", 2)]), "storyline/en/2": doc("2", [ep("20", 3)])}
    # MERGE 2 into 1: the survivor takes all of 2's archive; 2 keeps its episodes and points to 1
    merged = merged_document({"pointer": "storyline/en/1", "doc": doc("1", [ep("12", 5)]), "sources": [[2, None]]},
                             read(held))  # fmt: skip
    assert [e["story_id"] for e in merged["episodes"]] == ["12", "20", "11", "10"]
    redirect = merged_document({"pointer": "storyline/en/2", "doc": doc("2", [], merged_into="1")}, read(held))
    assert redirect["merged_into"] == "1" and len(redirect["episodes"]) == 1
    assert merged_document({"pointer": "storyline/en/3", "doc": doc("3", [], merged_into="1")}, read(held)) is None
    # a merge routed to an edition of another language: no episode there, nothing written
    assert merged_document({"pointer": "storyline/pl/1", "doc": doc("1", []), "sources": [[2, None]]}, read({})) is None
    # SPLIT: story 10 (archived) moves from 1 to 4
    new = merged_document({"pointer": "storyline/en/4", "doc": doc("4", []), "sources": [[1, [10]]]}, read(held))
    kept = merged_document({"pointer": "storyline/en/1", "doc": doc("1", []), "left": [10]}, read(held))
    assert [e["story_id"] for e in new["episodes"]] == ["10"]
    assert [e["story_id"] for e in kept["episodes"]] == ["11"]


def test_one_episode_storylines_are_retired_long_after_their_last_version_the_archive_stays(stores):
    """Every story founds a storyline, so without retirement the pointer listing every origin polls grows by a
    storyline per story for ever; a one-episode storyline past the storyline stage's horizon can change no more and
    nothing links it, a storyline of several episodes (the archive) and a merge's redirect stay."""
    from transforms.editions.overlays import storyline_pages as sp

    def doc(sl, n, version, **kw):
        eps = [{"story_id": str(sl * 10 + k), "title": "t", "first_at": "2026-01-01T00:00:00Z",
                "last_at": "2026-01-01T00:00:00Z", "article_count": 1, "publisher_count": 1} for k in range(n)]  # fmt: skip
        return {"schema": "newsroom.storyline/v1", "storyline_id": str(sl), "language": "en", "version": version,
                "title": "t", "updated_at": "2026-01-01T00:00:00Z", "episodes": eps, **kw}  # fmt: skip

    def item(d):
        return {"kind": "storyline", "pointer": f"storyline/en/{d['storyline_id']}", "version": d["version"],
                "path": storyline_path("en", d["storyline_id"], d["version"]), "doc": d, "min_stories": 0}  # fmt: skip

    clock = [1000.0]
    retention = PointerRetention(retire_every_s=0)
    publisher = SnapshotPublisher(stores, languages=("en",), clock=lambda: clock[0], retention=retention)
    v0 = 29_000_000
    for d in (doc(1, 1, v0), doc(2, 3, v0), doc(3, 0, v0, merged_into="2"), doc(4, 1, v0 + 10)):
        stores.snapshots.put(item(d)["path"], json.dumps(d).encode())
        assert stores.pointers.compare_and_set(item(d)["pointer"], None, d["version"])
    later = v0 + sp.RETIRE_SINGLE_MS // (60 * 1000) + 5  # a storyline written 30 days (and 5 minutes) on
    assert publisher.publish(item(doc(5, 1, later)))["outcome"] == "published"
    clock[0] += 1
    assert publisher.maybe_retire() == ["storyline/en/1"]  # 4 is 10 minutes younger: not yet
    names = set(stores.pointers.versions("storyline/"))
    assert names == {"storyline/en/2", "storyline/en/3", "storyline/en/4", "storyline/en/5"}
    reads = []
    real = stores.snapshots.get
    stores.snapshots.get = lambda path: reads.append(path) or real(path)
    clock[0] += 1
    assert publisher.maybe_retire() == [] and reads == []  # what stays is read once per process


def test_archived_episodes_are_read_back_within_a_budget_and_forgotten_with_their_storyline():
    from transforms.editions.overlays.storyline_pages import ArchivedEpisodes

    def doc(n, **kw):
        eps = [{"story_id": str(k)} for k in range(n)]
        return {"episodes": eps, **kw}

    held = {"storyline/en/1": doc(2), "storyline/en/2": doc(1), "storyline/en/3": doc(1, merged_into="1")}
    reads, kept = [], set()

    def read(name, version):
        reads.append(name)
        return held[name]

    archive = ArchivedEpisodes()
    listed = dict.fromkeys(held, 5)
    known, got = archive.refresh(listed, read, kept, budget=2)
    assert not known and len(got) == 2  # a third storyline unread: the caller retires no story yet
    assert archive.refresh(listed, read, kept, budget=2)[0] and len(reads) == 3  # each version read once
    assert archive.story_pointers() == {"story/0", "story/1"} and kept == {"storyline/en/1", "storyline/en/3"}
    assert archive.refresh({"storyline/en/2": 5, "storyline/en/3": 5}, read, kept)[0]
    assert archive.story_pointers() == {"story/0"}  # the redirect's episode; storyline 1 retired or gone


def test_an_unreadable_storyline_holds_no_episode_and_does_not_stop_the_read_back():
    from transforms.editions.overlays.storyline_pages import ArchivedEpisodes

    held = {"storyline/en/1": None, "storyline/en/2": {"episodes": [{"story_id": "7"}, {"story_id": "8"}]}}
    archive, kept = ArchivedEpisodes(), set()
    known, got = archive.refresh(dict.fromkeys(held, 5), lambda name, version: held[name], kept)
    assert known and list(got) == [("storyline/en/2", 5)]
    assert archive.story_pointers() == {"story/7", "story/8"} and kept == {"storyline/en/2"}


def test_retired_episodes_of_a_storyline_read_back_as_kept_are_revived_within_a_budget(stores):
    """A restarted publisher learns a kept storyline by reading it back; the episodes whose pointers retired
    before it became kept come back at their last version, at most ``budget`` per pass; listed ones cost nothing."""
    from transforms.editions.overlays.storyline_pages import ArchivedEpisodes

    p = stores.pointers
    for sid in ("1", "2", "3", "4"):
        assert p.compare_and_set(f"story/{sid}", None, 7)
    for sid in ("1", "2", "3"):
        assert p.retire(f"story/{sid}", 7)
    held = {"storyline/en/9": {"episodes": [{"story_id": s} for s in ("1", "2", "3", "4", "5")]}}
    archive = ArchivedEpisodes()
    assert archive.refresh(dict.fromkeys(held, 5), lambda name, version: held[name], set())[0]
    assert archive.revive(p.versions("story/"), p, budget=2) == ["story/1", "story/2"]
    assert archive.revive(p.versions("story/"), p, budget=2) == ["story/3"]  # story/5 never published: None
    assert p.versions("story/") == dict.fromkeys(["story/1", "story/2", "story/3", "story/4"], 7)
    assert not archive.unchecked and archive.revive(p.versions("story/"), p) == []  # each checked once
