"""The snapshot publisher retires story pointers of stories that left every live set long ago,
so the pointer listing every origin polls stays bounded; live or recently moved stories keep theirs."""

from __future__ import annotations

from devtools import samples
from stores import StoreConfig, open_stores
from transforms.editions.publish.snapshots import PointerRetention, SnapshotPublisher

HOUR = 3600.0


def coverage_item(sid: str, version: int) -> dict:
    doc = samples.story_coverage(sid, version, samples.coverage_articles(sid, 3))
    return {"kind": "story_coverage", "pointer": f"story/{sid}", "version": version, "doc": doc, "min_stories": 0}


def test_expired_story_pointers_are_retired_and_live_ones_kept(tmp_path):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    now = [1_000_000.0]
    counts = {}
    pub = SnapshotPublisher(
        stores,
        count=lambda name, n: counts.__setitem__(name, counts.get(name, 0) + n),
        languages=("en",),
        retention=PointerRetention(retain_s=48 * HOUR, retire_every_s=600),
        clock=lambda: now[0],
    )
    old, live, fresh = (samples.story_id(k) for k in (1, 2, 3))
    for sid in (old, live):
        assert pub.publish(coverage_item(sid, 1))["outcome"] == "published"
    stores.stories.set_live("en", int(live), True)
    now[0] += 47 * HOUR
    assert pub.publish(coverage_item(fresh, 1))["outcome"] == "published"
    assert pub.maybe_retire() == []  # nothing older than 48 h yet
    now[0] += 2 * HOUR
    assert pub.maybe_retire() == [f"story/{old}"]
    listed = stores.pointers.versions("story/")
    assert f"story/{old}" not in listed and f"story/{live}" in listed and f"story/{fresh}" in listed
    assert counts["story_retired"] == 1
    # a replay of the retired story's old coverage cannot bring the pointer back; a newer version can
    assert pub.publish(coverage_item(old, 1))["outcome"] != "published"
    assert pub.publish(coverage_item(old, 2))["outcome"] == "published"


def test_retirement_is_checked_at_most_every_interval(tmp_path):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    now = [0.0]
    pub = SnapshotPublisher(
        stores, languages=("en",), retention=PointerRetention(retain_s=1.0, retire_every_s=600), clock=lambda: now[0]
    )
    pub.publish(coverage_item(samples.story_id(7), 1))
    now[0] += 10
    assert pub.maybe_retire() == []  # the first check is one interval after start
    now[0] += 300
    assert pub.maybe_retire() == []  # still inside the interval
    now[0] += 300
    assert pub.maybe_retire() == [f"story/{samples.story_id(7)}"]
