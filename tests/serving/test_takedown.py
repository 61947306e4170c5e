"""``newsroom takedown`` end to end on the embedded backend: the tombstone is written, the origin's next poll (one
reload) serves the pages without the article or story, one CDN purge of the pages that showed it is queued, the
audit trail says who and why, and ``--undo`` brings it back the same way. Bad input is refused, nothing written."""

from __future__ import annotations

import orjson
import pytest

from pipelines.cli import main as newsroom
from stores.audit import open_audit_log
from stores.cdn import open_purger
from stores.takedowns import open_takedown_store
from tests.pipelines.commands.test_rollback import store_flags
from tests.serving.helpers import EDITION, STORY

TOP = f"/v1/editions/{EDITION}/sections/top"


def takedown(stores, *args) -> int:
    return newsroom(["takedown", *args, *store_flags(stores.config)])


def ids(client, url=TOP):
    doc = orjson.loads(client.get(url).data)
    return [
        (e["story_id"], e["representative"]["article_id"], [c["article_id"] for c in e["supporting"]])
        for e in doc["stories"]
    ]


def test_an_article_taken_down_leaves_the_served_pages_after_one_reload_and_comes_back_on_undo(app, client, world):
    watcher = app.extensions["newsroom"].watcher
    before = ids(client)
    sid, rep, supporting = before[0]
    assert sid == STORY
    purger = open_purger(world.config)
    queued = len(purger.pending())
    flags = ["--article", rep, "--reason", "court order 2026-114", "--who", "alice"]
    assert takedown(world, *flags) == 0
    assert ids(client) == before  # nothing changes until the watcher polls
    watcher.poll_once()
    after = ids(client)
    assert [s for s, *_ in after] == [s for s, *_ in before]  # the story stays, shown by its next card
    assert after[0][1] == supporting[0] and rep not in after[0][2]
    (entry,) = open_audit_log(world.config).entries(f"article:{rep}")
    assert entry["action"] == "takedown" and entry["who"] == "alice" and entry["why"] == "court order 2026-114"
    assert f"{EDITION}/top" in entry["detail"]["pointers"]
    (request,) = [r for _, r in purger.pending()[queued:]]
    assert TOP in request.paths and f"/e/{EDITION}/" in request.paths and f"/v1/stories/{STORY}" in request.paths
    assert takedown(world, "--article", rep, "--undo", "--reason", "order lifted", "--who", "bob") == 0
    watcher.poll_once()
    assert ids(client) == before
    assert [e["action"] for e in open_audit_log(world.config).entries(f"article:{rep}")] == [
        "takedown",
        "takedown-undo",
    ]
    assert len(purger.pending()) == queued + 2


def test_a_story_taken_down_leaves_every_page_and_its_own_at_once(app, client, world):
    watcher = app.extensions["newsroom"].watcher
    coverage = orjson.loads(client.get(f"/v1/stories/{STORY}").data)
    pool = app.extensions["newsroom"].holder.current.pools[EDITION]
    topic = f"/v1/topics/topic:{pool.topics[pool.index[STORY]][0]}?edition={EDITION}&limit=50"
    assert STORY in [s["story_id"] for s in orjson.loads(client.get(topic).data)["stories"]]  # cached now
    assert client.get(f"/v1/stories/{STORY}").status_code == 200
    assert takedown(world, "--story", STORY, "--reason", "defamation claim") == 0
    watcher.poll_once()
    assert STORY not in [s for s, *_ in ids(client)]
    assert [e["rank"] for e in orjson.loads(client.get(TOP).data)["stories"]] == list(range(1, 30))
    assert client.get(f"/v1/stories/{STORY}").status_code == 404
    assert STORY not in app.extensions["newsroom"].holder.current.pools[EDITION].story_ids
    topic_page = client.get(topic)
    assert topic_page.status_code == 404 or STORY not in [
        s["story_id"] for s in orjson.loads(topic_page.data)["stories"]
    ]
    # an article of the story's coverage, taken down alone, leaves the coverage
    assert takedown(world, "--story", STORY, "--undo", "--reason", "claim withdrawn") == 0
    card = coverage["articles"][0]["article_id"]
    assert takedown(world, "--article", card, "--reason", "copyright") == 1  # not on a live page, not stored
    watcher.poll_once()
    assert client.get(f"/v1/stories/{STORY}").status_code == 200
    assert STORY in [s for s, *_ in ids(client)]
    assert [t.target for t in open_takedown_store(world.config).all()] == []


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--article", "x", "--reason", " "], 2, "--reason"),
        (["--article", "no/such id", "--reason", "r"], 2, "--article"),
        (["--article", "f" * 32, "--reason", "r"], 1, "no article"),
        (["--story", "abc", "--reason", "r"], 2, "--story"),
        (["--story", "12345", "--reason", "r"], 1, "no story 12345"),
        (["--url", "mailto:someone", "--reason", "r"], 2, "--url"),
        (["--url", "https://nowhere.example/a?utm_source=x", "--reason", "r"], 1, "no article"),
        (["--story", "12345", "--undo", "--reason", "r"], 1, "not taken down"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_nothing_written(world, capsys, args, status, message):
    assert takedown(world, *args) == status
    assert message in capsys.readouterr().err
    assert open_takedown_store(world.config).all() == []
    assert open_audit_log(world.config).entries() == []


def test_a_url_is_cleaned_and_hashed_to_its_article_id(world, capsys):
    from transforms.articles.urls import article_id

    url = "https://www.example-news.com/world/2026/01/01/flood?utm_source=tw#top"
    clean = "https://www.example-news.com/world/2026/01/01/flood"
    world.articles.write(
        {**_article(), "article_id": article_id(clean), "canonical_url": clean},
    )
    assert takedown(world, "--url", url, "--reason", "publisher request", "--cdn", "none") == 0
    (t,) = open_takedown_store(world.config).all()
    assert (t.kind, t.id, t.url) == ("article", article_id(clean), clean)
    assert takedown(world, "--list") == 0
    assert f"article:{article_id(clean)}" in capsys.readouterr().out


def _article():
    from tests.conftest import _ARTICLE

    return dict(_ARTICLE)


def test_takedown_through_the_origin_on_both_backends(store_config, capsys):
    """The same path on the emulators (Bigtable tombstones and audit, GCS snapshots): one reload and it is gone."""
    from stores import open_stores
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app, publish_world

    stores = open_stores(store_config)
    publish_world(stores, pool_size=40)
    app = make_app(stores, open_profile_store(store_config))
    try:
        client = app.test_client()
        sid, rep, _ = ids(client)[0]
        assert newsroom(["takedown", "--story", sid, "--reason", "legal", *store_flags(store_config)]) == 0
        assert sid in [s for s, *_ in ids(client)]
        app.extensions["newsroom"].watcher.poll_once()
        assert sid not in [s for s, *_ in ids(client)]
        assert client.get(f"/v1/stories/{sid}").status_code == 404
        (entry,) = open_audit_log(store_config).entries(f"story:{sid}")
        assert entry["action"] == "takedown" and f"story/{sid}" in entry["detail"]["pointers"]
        if store_config.backend == "gcp":
            assert "not purged" in capsys.readouterr().err  # no Cloud CDN on the emulators
    finally:
        app.extensions["newsroom"].close()


def test_a_merged_story_id_takes_its_survivor_down(world, capsys):
    world.stories.put_story(int(STORY), {"language": "en", "state": "live"})
    world.stories.set_alias(12345, int(STORY))
    assert takedown(world, "--story", "12345", "--reason", "legal", "--cdn", "none") == 0
    assert "merged into" in capsys.readouterr().out
    (t,) = open_takedown_store(world.config).all()
    assert t.target == f"story:{STORY}"
    (entry,) = open_audit_log(world.config).entries(f"story:{STORY}")
    assert f"{EDITION}/top" in entry["detail"]["pointers"] and f"story/{STORY}" in entry["detail"]["pointers"]


def test_a_story_taken_down_leaves_a_pre_built_topic_page_at_once_and_the_page_is_purged(app, client, world):
    """Topic pages pre-built by the editions stage (transforms/editions/overlays/topics.py) are filtered by the origin in the
    same poll as the pages and pools, and the takedown purges them at the edge too."""
    from tests.serving.test_topics import prebuild

    pool = app.extensions["newsroom"].holder.current.pools[EDITION]
    topic_id = f"topic:{pool.topics[pool.index[STORY]][0]}"
    prebuild(app, world, {topic_id: 3})
    assert topic_id in app.extensions["newsroom"].holder.current.pools[EDITION].topic_pages
    url = f"/v1/topics/{topic_id}?edition={EDITION}&limit=100"
    before = orjson.loads(client.get(url).data)
    assert STORY in [s["story_id"] for s in before["stories"]]
    purger = open_purger(world.config)
    queued = len(purger.pending())
    assert takedown(world, "--story", STORY, "--reason", "defamation claim") == 0
    app.extensions["newsroom"].watcher.poll_once()
    held = app.extensions["newsroom"].holder.current.topics[(EDITION, topic_id)]
    assert STORY not in [orjson.loads(item + b"}")["story_id"] for item in held.items]
    after = orjson.loads(client.get(url).data)
    assert STORY not in [s["story_id"] for s in after["stories"]]
    assert after["story_count"] == before["story_count"] - 1
    (request,) = [r for _, r in purger.pending()[queued:]]
    assert f"/v1/topics/{topic_id}" in request.paths


def test_a_pre_built_topic_page_left_without_stories_is_dropped_and_answered_from_the_pool(app, client, world):
    from tests.serving.test_topics import prebuild

    pool = app.extensions["newsroom"].holder.current.pools[EDITION]
    topic_id = f"topic:{pool.topics[pool.index[STORY]][0]}"

    def only_the_story(doc):  # a snapshot holding just the story that will be taken down
        doc["stories"] = [s for s in doc["stories"] if s["story_id"] == STORY]
        doc["story_count"] = 1

    prebuild(app, world, {topic_id: 3}, mutate=only_the_story)
    assert (EDITION, topic_id) in app.extensions["newsroom"].holder.current.topics
    assert takedown(world, "--story", STORY, "--reason", "defamation claim") == 0
    assert app.extensions["newsroom"].watcher.poll_once()
    assert (EDITION, topic_id) not in app.extensions["newsroom"].holder.current.topics
    r = client.get(f"/v1/topics/{topic_id}?edition={EDITION}&limit=100")
    assert r.status_code == 404 or STORY not in [s["story_id"] for s in orjson.loads(r.data)["stories"]]
