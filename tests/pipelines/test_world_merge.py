"""The sample world's merge, end to end: its two reports of one event (``MERGED_PAIR``, devtools/world/content.py)
go through the stories job (a bounded run on the embedded stores, with the embedders ``newsroom run`` uses, not the
tests' hash embedder: the pair is written against all-MiniLM-L6-v2's scores), the writer keeps them as two stories,
the repair merges them, and the origin built on the job's stores answers the merged id with a 301 to the survivor,
which ``newsroom run``'s page watcher lists (what it prints for a reader to try).

Before the pair existed a local run made no merge at all, so the merged-story 301 could not be tried.
"""

from __future__ import annotations

import json
import sqlite3

from devtools.world.content import ARTICLES, MERGED_PAIR
from stores import StoreConfig, open_stores
from tests.pipelines.test_stories_job import store_argv, world_items


def test_the_world_pair_is_merged_by_the_repair_and_the_old_id_answers_301(tmp_path):
    from devtools.run import PageWatcher
    from pipelines.stories import run
    from schemas.pages import story_path
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app

    config = StoreConfig(data_dir=str(tmp_path / "newsroom"))
    stores = open_stores(config)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    items = [i for i in world_items(1_709_294_400_000) if i["entry"]["language"] == "en"]  # the pair's writer
    assert {i["fetched_url"].rsplit("/", 1)[-1] for i in items} >= set(MERGED_PAIR)
    for item in items:
        stores.bus.publish_record("items-raw", item)
    run(store_argv(config) + ["--editions_only=us-en"])  # --embedder auto, as newsroom run

    with sqlite3.connect(config.embedded_db) as db:
        aliases = dict(db.execute("SELECT story_id, alias_of FROM stories WHERE alias_of IS NOT NULL").fetchall())
        metas = {k: json.loads(m) for k, m in db.execute("SELECT story_id, meta FROM stories").fetchall()}
    headline = {a["id"]: a.get("headline") for a in ARTICLES}
    second = headline[MERGED_PAIR[1]]
    # the writer kept the second report as a story of its own, and the repair merged it into the first's story
    (gone,) = [k for k in aliases if metas[k]["title"] == second]
    survivor = aliases[gone]
    assert metas[survivor]["originals"] >= 2  # the first report's story, both now (its coverage below)
    watcher = PageWatcher(stores)
    watcher.poll()
    assert watcher.new_merges() == [(str(gone), str(survivor))] and watcher.new_merges() == []
    assert stores.pointers.get(f"story/{survivor}") is not None
    cov = json.loads(stores.snapshots.get(story_path(str(survivor), stores.pointers.get(f"story/{survivor}"))))
    assert {c["url"].rsplit("/", 1)[-1] for c in cov["articles"]} >= set(MERGED_PAIR)

    app = make_app(stores, open_profile_store(StoreConfig(data_dir=config.data_dir)))
    try:
        client = app.test_client()
        r = client.get(f"/v1/stories/{gone}?edition=us-en")
        assert r.status_code == 301 and r.headers["Location"] == f"/v1/stories/{survivor}?edition=us-en"
        assert client.get(r.headers["Location"]).status_code == 200
        web = client.get(f"/stories/{gone}")
        assert web.status_code == 301 and web.headers["Location"].endswith(f"/stories/{survivor}")
    finally:
        app.extensions["newsroom"].close()
