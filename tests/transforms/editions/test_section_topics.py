"""A story on a section's page is about that section: its pool entry's ``topics`` name the section, so the topic
page ``topic:{section}`` (and a reader's follow of it) holds every pool story the section page shows. The World
section picks stories by domestic relevance, not only by label: its topic page showed 1 story where the section
showed 3. Checked on what RankEditionsFn publishes (transforms/editions/ranker/rank.py)."""

from __future__ import annotations

import orjson

from serving.api.topics import render
from serving.state.catalog import PreparedPool
from tests.transforms.editions.test_rank_fn import State, feed, fire, new_fn
from transforms.editions.book.storybook import compact_change


def _published(world) -> list[dict]:
    """The snapshot items of the last cycle RankEditionsFn ran over the world's changes."""
    MIN = world.MIN
    st, fn = State(), new_fn()
    by_minute: dict[int, list] = {}
    for e in sorted((compact_change(c) for c in world.changes), key=lambda e: e["at"]):
        by_minute.setdefault(e["at"] // MIN, []).append(e)
    last, minute = [], min(by_minute)
    while minute <= max(by_minute) + 1:
        for e in by_minute.get(minute, []):
            feed(fn, st, e)
        while st.timer.at is not None and st.timer.at <= (minute + 1) * MIN:
            items = [it for it in fire(fn, st, st.timer.at) if isinstance(it, dict)]  # not the tagged purges
            if any(it["pointer"].startswith("pool/") for it in items):
                last = items
        minute += 1
    return last


def test_every_section_pages_pool_stories_are_on_its_topic_page(world):
    world.randomise(seed=5, stories=60, start=world.T0 - 40 * world.MIN, end=world.T0)
    items = _published(world)
    pool_doc = next(it["doc"] for it in items if it["pointer"].startswith("pool/"))
    pages = {it["doc"]["section"]: it["doc"] for it in items if it.get("kind") == "edition_page"}
    in_pool = {s["story_id"]: s for s in pool_doc["stories"]}
    pool = PreparedPool.build(orjson.loads(orjson.dumps(pool_doc)))
    checked = 0
    for section, page in pages.items():
        if section == "top":
            continue
        shown = [s["story_id"] for s in page["stories"] if s["story_id"] in in_pool]
        for sid in shown:
            assert section in in_pool[sid]["topics"], (section, sid, in_pool[sid]["topics"])
        found = render(pool, f"topic:{section}", 100)
        listed = set() if found is None else {s["story_id"] for s in orjson.loads(found[0])["stories"]}
        assert set(shown) <= listed, (section, set(shown) - listed)
        checked += len(shown)
    assert checked and pages.get("world", {}).get("stories"), sorted(pages)
