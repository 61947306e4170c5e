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
