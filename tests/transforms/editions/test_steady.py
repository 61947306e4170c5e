"""The change-only replay (transforms/editions/ranker/steady.py) driven directly: RankEditionsFn in replay mode with and
without ``change_only`` over the same random world, each publishing into its own store, with a takedown and a
page hold that ends mid-run; the stored objects and pointer moves must be byte-identical, and most minutes steady."""

from __future__ import annotations

from stores import StoreConfig
from stores.controls import Control, open_control_store
from stores.takedowns import Tombstone, open_takedown_store
from tests.transforms.editions.replay_driver import replay


def _replay(world, root, change_only: bool) -> tuple[dict, dict, dict]:
    T, MIN = world.T0, world.MIN
    config = StoreConfig(data_dir=str(root))
    hold = dict(edition="us-en", set_at=T - 60 * MIN, expires_at=T + 40 * MIN, who="t", why="test")
    open_control_store(config).set(Control(kind="hold", section="world", version=1, **hold))
    open_takedown_store(config).set(Tombstone(kind="story", id="1003", reason="test", who="t", at=T))
    objects, moves, tally, _ = replay(world, root, change_only, controls=True)
    return objects, moves, tally


def test_change_only_minutes_publish_what_every_minute_publishes(world, tmp_path):
    T, MIN = world.T0, world.MIN
    world.randomise(seed=11, stories=8, start=T - 40 * MIN, end=T)
    ids = sorted(world.centroids)
    world.merge(ids[0], ids[1], T + 20 * MIN)
    for sid in ids[2:6]:
        world.expire(sid, T + 70 * MIN)  # the pages shrink: proposals the publisher may reject, then confirm
    world.story(5000, ["daily-herald", "capital-post"], T + 6 * 60 * MIN)  # a quiet gap, then a new chain
    every, every_moves, every_tally = _replay(world, tmp_path / "every", change_only=False)
    change, change_moves, change_tally = _replay(world, tmp_path / "change", change_only=True)
    assert len([k for k in every if "/us-en/top/" in k]) >= 3
    assert every.keys() == change.keys()
    assert [k for k in every if every[k] != change[k]] == []
    assert every_moves == change_moves and any(r == "publish" for m in every_moves.values() for _, _, r in m)
    assert every_tally["cycles"] == change_tally["cycles"] and every_tally["cycles_steady"] == 0
    assert change_tally["cycles_steady"] > 0, change_tally  # the busy world leaves few quiet minutes


def test_a_page_that_repeats_the_last_proposed_is_not_proposed_again():
    """SteadyWatch.unproposed: a full minute's page or pool with the content and minimum last proposed for its
    pointer is left out; a new minimum, a shrinking page (below half its most stories) and any control keep it."""
    from types import SimpleNamespace

    from transforms.editions.ranker.steady import SteadyWatch

    def page(minute: int, stories: int, minimum: int = 3) -> dict:
        entries = [{"story_id": str(s), "rank": s + 1, "score": 1.0 / (minute + s + 1)} for s in range(stories)]
        doc = {"edition": "us-en", "section": "world", "version": minute, "cycle": str(minute), "stories": entries}
        return {"kind": "edition_page", "pointer": "us-en/world", "doc": doc, "min_stories": minimum}

    def cover(minute: int) -> dict:
        return {"kind": "story_coverage", "pointer": "story/1", "doc": {"version": minute}, "min_stories": 0}

    watch, memory = SteadyWatch(), SimpleNamespace(page_max={"world": 2})

    def unproposed(items: list, controls: tuple = ()) -> list:  # the items left, without the digest they carry
        return [{k: v for k, v in i.items() if k != "digest"} for i in watch.unproposed(items, memory, controls)]

    assert unproposed([page(1, 2), cover(1)]) == [page(1, 2), cover(1)]
    assert unproposed([page(2, 2), cover(2)]) == [cover(2)]  # new scores and minute only
    assert unproposed([page(3, 2, minimum=2)]) == [page(3, 2, minimum=2)]
    assert unproposed([page(4, 3, minimum=2)]) == [page(4, 3, minimum=2)]
    memory.page_max["world"] = 7  # 3 stories where 7 stood once: each proposal counts towards the shrink
    assert unproposed([page(5, 3, minimum=2)]) == [page(5, 3, minimum=2)]
    memory.page_max["world"] = 3
    assert unproposed([page(6, 3, minimum=2)]) == []
    assert unproposed([page(7, 3, minimum=2)], ("a control",)) == [page(7, 3, minimum=2)]
    assert unproposed([page(8, 3, minimum=2)]) == [page(8, 3, minimum=2)]  # the map restarted


def test_a_proposed_page_carries_its_digest_and_the_publisher_uses_it(tmp_path, monkeypatch):
    """SteadyWatch.unproposed hands the content digest it computed to the publisher (not computed twice); the
    publisher trusts it only for the document it was computed on (a merged document gets its own)."""
    from types import SimpleNamespace

    from stores import StoreConfig, open_stores
    from transforms.editions.publish.snapshots import SnapshotPublisher
    from transforms.editions.ranker.steady import SteadyWatch
    from transforms.editions.vocabulary import documents as docs

    doc = {"edition": "us-en", "section": "world", "version": 1, "cycle": "1", "stories": []}
    item = {"kind": "edition_page", "pointer": "us-en/world", "version": 1, "doc": doc, "min_stories": 3}
    item["path"] = "pages/us-en/world/v1.json"
    (out,) = SteadyWatch().unproposed([item], SimpleNamespace(page_max={}), ())
    assert out["digest"] == docs.content_digest(doc)
    computed = []
    real = docs.content_digest
    monkeypatch.setattr(docs, "content_digest", lambda d: computed.append(d) or real(d))
    publisher = SnapshotPublisher(open_stores(StoreConfig(data_dir=str(tmp_path))))
    assert publisher.publish(out)["outcome"] == "rejected"  # no story: too few, as without the digest
    assert computed == []
    assert publisher.publish({k: v for k, v in out.items() if k != "digest"})["outcome"] == "rejected"
    assert computed == [doc]
