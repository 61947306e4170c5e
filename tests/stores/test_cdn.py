"""The purge interface (stores/cdn.py): which public paths a pointer's page is served at, and the embedded queue."""

import pytest

from stores import StoreConfig
from stores.cdn import NullPurger, QueuedPurger, open_purger, public_paths


def test_a_section_pointer_maps_to_its_api_and_web_paths():
    assert public_paths("us-en/world") == ["/v1/editions/us-en/sections/world", "/e/us-en/world"]
    assert "/e/us-en/" in public_paths("us-en/top")


def test_story_and_topic_pointers_map_to_their_pages_and_personal_pointers_to_nothing():
    assert public_paths("story/42") == ["/v1/stories/42", "/stories/42"]
    assert public_paths("topic/us-en/Q123") == ["/v1/topics/Q123"]
    assert public_paths("pool/us-en") == []
    assert public_paths("aliases") == []
    with pytest.raises(ValueError):
        public_paths("nonsense")


def test_the_embedded_purger_queues_deduplicated_requests_in_order(tmp_path):
    purger = open_purger(StoreConfig(data_dir=str(tmp_path)))
    assert isinstance(purger, QueuedPurger)
    first = purger.purge_pointers(["us-en/top", "us-en/top", "pool/us-en"], reason="takedown a1")
    assert first.paths == ("/v1/editions/us-en/sections/top", "/e/us-en/top", "/e/us-en/")
    purger.purge(["/v1/stories/7"], reason="rollback")
    queued = purger.pending()
    assert [r.reason for _, r in queued] == ["takedown a1", "rollback"]
    assert purger.pending(after_id=queued[0][0])[0][1].paths == ("/v1/stories/7",)
    assert purger.purge_pointers(["pool/us-en"], reason="x") is None


def test_a_purge_needs_a_reason_and_query_less_absolute_paths(tmp_path):
    purger = NullPurger()
    with pytest.raises(ValueError):
        purger.purge(["/v1/x"], reason="")
    with pytest.raises(ValueError):
        purger.purge(["/v1/x?limit=3"], reason="r")
    with pytest.raises(ValueError):
        purger.purge(["v1/x"], reason="r")
