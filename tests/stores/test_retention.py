"""stores/retention.py: which story pointers the publisher retires, and retiring them on a real store."""

from __future__ import annotations

from stores import StoreConfig, open_store
from stores.retention import StoryRetention, expired_story_pointers, retire, story_id_of

DAY = 86_400.0


def test_expired_story_pointers_rule():
    pointers = {
        "story/1": (3, 0.0),  # old, not live: expires
        "story/2": (1, 0.0),  # old but live: stays
        "story/3": (2, 2.5 * DAY),  # active within keep_s: stays
        "us-en/top": (9, 0.0),  # not a story pointer: never
        "pool/us-en": (4, 0.0),
    }
    assert expired_story_pointers(pointers, [2], now=3 * DAY, keep_s=2 * DAY) == {"story/1": 3}
    assert expired_story_pointers(pointers, ["1", "2"], now=3 * DAY, keep_s=2 * DAY) == {}
    assert story_id_of("story/42") == "42" and story_id_of("us-en/top") is None


def test_tracker_and_retire_on_the_store(tmp_path):
    p = open_store("pointers", StoreConfig(data_dir=str(tmp_path)))
    for sid in (1, 2, 3):
        assert p.compare_and_set(f"story/{sid}", None, 1)
    assert p.compare_and_set("us-en/top", None, 1)
    tracker = StoryRetention(keep_s=2 * DAY)
    listed = p.versions("story/")
    assert tracker.expired(listed, [1], now=0.0) == {}  # first sighting starts every clock (a restart is never early)
    tracker.seen([1], now=1 * DAY)
    tracker.moved("story/2", 2, now=1.5 * DAY)
    assert p.compare_and_set("story/2", 1, 2)
    expired = tracker.expired(p.versions("story/"), [], now=2.6 * DAY)
    assert expired == {"story/3": 1}
    assert p.compare_and_set("story/3", 1, 2)  # moved after the listing: the conditional retire leaves it
    assert retire(p, expired) == []
    assert retire(p, tracker.expired(p.versions("story/"), [], now=3.6 * DAY)) == ["story/1", "story/2", "story/3"]
    assert p.versions() == {"us-en/top": 1}
    assert tracker.expired(p.versions("story/"), [], now=4 * DAY) == {} and tracker.last_active == {}
