"""Helpers of the origin tests: a small published world, the app factory call, constants, shared URLs."""

from __future__ import annotations

import contextlib

from devtools import samples
from serving import create_app

TOKEN_SECRET = "test-token-secret"
CURSOR_SECRET = "test-cursor-secret"
EDITION = "us-en"
STORY = samples.story_id(0)
MERGED = samples.story_id(900)
MERGED_CHAIN = samples.story_id(901)
# No stale directive: Cloud CDN's serve-while-stale policy (an hour) applies only to responses without one
# (serving/http/conventions.py, terraform/modules/origin).
PAGE_CC = "public, s-maxage=60"
STORY_CC = "public, s-maxage=30"


def publish(stores, doc):
    return samples.publish(stores.pointers, stores.snapshots, doc)


def publish_world(stores, pool_size: int = 300):
    publish(stores, samples.edition_page(EDITION, "top", 1, n_stories=30))
    publish(stores, samples.edition_page(EDITION, "tech", 1, n_stories=12, first_story=100))
    publish(stores, samples.edition_page("gb-en", "top", 1, n_stories=10, first_story=200))
    publish(stores, samples.candidate_pool(EDITION, 1, n=pool_size))
    publish(stores, samples.story_coverage(STORY, 1, samples.coverage_articles(STORY, 45)))
    publish(stores, samples.story_coverage(samples.story_id(1), 1, samples.coverage_articles(samples.story_id(1), 3)))
    # A chain on purpose: the origin must still answer in one hop.
    publish(stores, samples.aliases(1, {MERGED: STORY, MERGED_CHAIN: MERGED}))


def publish_topic_pages(stores, followed: dict, mutate=None, max_pages: int = 40) -> dict:
    """As the editions stage does (transforms/editions/overlays/topics.py): the edition pool's topic pages, then the pool
    listing them, published at the pool's next version. Returns the topic documents by id."""
    import orjson

    from schemas.pages import pool_path
    from transforms.editions.overlays.topics import topic_items

    version = stores.pointers.get(f"pool/{EDITION}")
    doc = orjson.loads(stores.snapshots.get(pool_path(EDITION, version)))
    doc["version"] = version + 1
    docs = {}
    for it in topic_items(doc, followed, max_pages):
        topic_doc = orjson.loads(orjson.dumps(it["doc"]))
        if mutate is not None:
            mutate(topic_doc)
        publish(stores, topic_doc)
        docs[topic_doc["topic"]] = topic_doc
    publish(stores, orjson.loads(orjson.dumps(doc)))
    return docs


def make_app(stores, profiles, **extra):
    config = {
        "TESTING": True,
        "NEWSROOM_STORES": stores,
        "NEWSROOM_PROFILE_STORE": profiles,
        "NEWSROOM_BACKGROUND": False,
        "NEWSROOM_TOKEN_SECRET": TOKEN_SECRET,
        "NEWSROOM_CURSOR_SECRET": CURSOR_SECRET,
        # Anything else opened from config (serving/api/push.py's feed store) lands next to the test's stores.
        "NEWSROOM_DATA_DIR": stores.config.data_dir,
    }
    config.update(extra)
    app = create_app(config)
    app.extensions["newsroom"].watcher.poll_once()
    return app


def shared_urls() -> list[str]:
    return [
        f"/v1/editions/{EDITION}/sections/top",
        f"/v1/editions/{EDITION}/sections/top?limit=5",
        f"/v1/editions/{EDITION}/sections/tech",
        f"/v1/editions/{EDITION}/version",
        f"/v1/stories/{STORY}",
        f"/v1/stories/{STORY}?edition={EDITION}",
    ]


def http_get(port: int, path: str, timeout: float):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, dict(r.headers), r.read()


@contextlib.contextmanager
def running_origin(data_dir, workers: int = 1, threads: int = 2, env: dict | None = None, access_log=None):
    """A real ``newsroom serve`` (devtools/local_origin.py: gunicorn with serving/worker/gunicorn.conf.py's worker) over
    ``data_dir`` on a free port until the block ends; yields the port."""
    from pathlib import Path

    from devtools import local_origin

    log = Path(data_dir).parent / f"origin-{local_origin.free_port()}.log"
    proc, port = local_origin.start_origin(
        data_dir, log, workers=workers, threads=threads, env=env, access_log=access_log
    )
    try:
        yield port
    finally:
        local_origin.stop(proc)
