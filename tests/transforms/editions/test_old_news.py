"""Only news on top: a page published long before it was first seen (a 2010 page discovered today) is kept in its
story but never ranks as fresh, never makes a story live, Breaking or developing, and is never its first report
(transforms.common.is_stale; book.py, representatives.py, bursts.py). One test feeds real old pages of
../shared/data through the normaliser (skipped when it is absent); the generated ones always run."""

from __future__ import annotations

import gzip
import json

import pytest

from transforms.common import DAY_MS, HOUR_MS, is_stale
from transforms.editions.book.storybook import compact_change
from transforms.editions.bursts import bursts
from transforms.editions.cycle.representatives import labels_for
from transforms.publishers import default_registry


def test_is_stale_is_published_more_than_the_window_before_first_seen():
    assert is_stale(0, 48 * HOUR_MS + 1) and not is_stale(0, 48 * HOUR_MS)
    assert not is_stale(None, 10**13) and not is_stale(5, None)
    assert is_stale(0, 2 * HOUR_MS, window_ms=HOUR_MS)


def _old_story(world, story_id, publishers, now, years=3):
    return world.story(story_id, publishers, now - 30 * world.MIN, published_at=now - years * 365 * DAY_MS)


def test_a_story_of_old_pages_discovered_today_is_not_on_any_page(world, make_ranker):
    T = world.T0
    _old_story(world, 1, world.AUTHORITATIVE_EN, T)  # six strong publishers, all years old
    world.story(2, ["springfield-gazette"], T - 20 * world.MIN, title="Council approves the new library budget")
    r = make_ranker(world)
    r.breaking(1, T - world.MIN)  # even a pulse cannot pin a story that is not news
    out = r.cycle(T)
    assert r.ids(out) == [2]
    assert all(int(s["story_id"]) != 1 for s in out.pool["stories"])
    row = r.book.stories.row_of[1]
    assert int(r.book.stories.n_articles[row]) == 6 and int(r.book.stories.n_originals[row]) == 0  # kept, not news


def test_old_pages_add_no_coverage_freshness_or_first_report_to_a_live_story(world, make_ranker):
    T, MIN = world.T0, world.MIN
    old = _old_story(world, 1, world.AUTHORITATIVE_EN[:3], T)
    new = world.add(1, world.article("springfield-gazette", T - 10 * MIN))
    r = make_ranker(world)
    r.cycle(T)
    book = r.book
    row = book.stories.row_of[1]
    assert int(book.stories.n_originals[row]) == 1 and int(book.stories.first_seen[row]) == T - 10 * MIN
    arts = [book.articles.row_of[c["article_id"]] for c in old + [new]]
    labels = labels_for(book, arts, None)
    assert all("first_report" not in lab for lab in labels[:3]) and "first_report" not in labels[3]  # only one report
    assert bool(book.articles.is_stale[arts[0]]) and not bool(book.articles.is_stale[arts[3]])


def test_old_pages_never_count_towards_a_burst(world):
    T = world.T0
    old = _old_story(world, 1, world.AUTHORITATIVE_EN, T)
    fresh = world.story(2, world.AUTHORITATIVE_EN, T)
    registry = default_registry()
    assert [o for c in old for o in bursts.originals_of(c, registry, {})] == []
    assert len([o for c in fresh for o in bursts.originals_of(c, registry, {})]) == len(fresh)


def _real_old_pages(shared_data, now):
    """Normalise the benchmark's real pages as if discovered at ``now``: (article, stated year) of each."""
    from transforms.articles.normalize import Normalizer
    from transforms.articles.page import Rejected

    root = shared_data / "pages" / "extraction-benchmark"
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    norm = Normalizer(clock=lambda: now)
    out = []
    for path in sorted((root / "html").glob("*.html.gz"))[:40]:
        key = path.name.split(".")[0]
        raw = {
            "item_id": key,
            "fetched_url": truth.get(key, {}).get("url") or f"https://pages.example.test/{key}",
            "http_status": 200,
            "headers": {},
            "body": gzip.decompress(path.read_bytes()),
            "fetched_at": now,
            "first_seen_at": now,
            "entry": None,
        }
        try:
            out.append(norm.normalize(raw))
        except Rejected:
            continue
    return out


def test_real_pages_from_2010_to_2019_discovered_today_never_rank(shared_data, world, make_ranker):
    T = world.T0  # 2024-03-01: every benchmark page states a date years before
    arts = [a for a in _real_old_pages(shared_data, T) if a["language"] == "en"]
    assert len(arts) >= 20
    assert all(a["published_at"] == a["stated_published_at"] < T - 365 * DAY_MS for a in arts)  # min(stated, seen)
    for i, a in enumerate(arts):  # every real page its own story, as the clusterer would mostly decide
        art = world.article(a["publisher_id"], T - 20 * world.MIN + i, title=a["title"], published_at=a["published_at"])
        world.add(10 + i, art)
    world.story(2, ["springfield-gazette"], T - 5 * world.MIN, title="Council approves the new library budget")
    r = make_ranker(world)
    out = r.cycle(T)
    assert r.ids(out) == [2]
    assert all(not list(bursts.originals_of(c, default_registry(), {})) for c in world.changes[:-1])
    assert all(compact_change(c)["article"]["published_at"] < T - DAY_MS for c in world.changes[:-1])


@pytest.mark.parametrize("years", [0, 3])
def test_a_fresh_story_still_ranks_and_an_old_one_does_not(world, make_ranker, years):
    T = world.T0
    world.story(1, world.AUTHORITATIVE_EN[:3], T - 30 * world.MIN, published_at=T - years * 365 * DAY_MS - 40 * 60_000)
    r = make_ranker(world)
    assert (r.ids(r.cycle(T)) == [1]) == (years == 0)
