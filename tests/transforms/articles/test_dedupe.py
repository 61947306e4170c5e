"""Exact dedupe against the ArticleStore: one article per canonical URL, versions, replays, content-hash index."""

from __future__ import annotations

import pytest

from transforms.articles.dedupe import CONTENT_DUPLICATE, DUPLICATE, NEW, STALE, UPDATE, decide

CANONICAL = "https://dailyherald.test/world/2025/12/31/earthquake-coast"
TITLE = "Earthquake shakes coast, no deaths reported"


@pytest.fixture
def pages(kit):
    """The same article under three URLs, plus an AMP copy without any canonical link."""
    tracked = kit.make_raw(
        CANONICAL + "?utm_source=twitter&utm_medium=social&fbclid=IwAR2x",
        kit.make_html(TITLE, kit.WIRE_REPORT, canonical=CANONICAL),
        fetched_at=kit.T0,
    )
    amp = kit.make_raw(
        CANONICAL + "/amp",
        kit.make_html(TITLE, kit.WIRE_REPORT, canonical=CANONICAL, amp=True),
        fetched_at=kit.T0 + 60_000,
        first_seen_at=kit.T0 + 30_000,
    )
    direct = kit.make_raw(
        CANONICAL, kit.make_html(TITLE, kit.WIRE_REPORT, canonical=CANONICAL), fetched_at=kit.T0 + 120_000
    )
    amp_no_canonical = kit.make_raw(
        "https://dailyherald.test/m/article-view?id=98765",
        kit.make_html(TITLE, kit.WIRE_REPORT),
        fetched_at=kit.T0 + 180_000,
    )
    return tracked, amp, direct, amp_no_canonical


def test_same_article_via_three_urls_is_stored_once(normalizer, article_store, pages):
    tracked, amp, direct, _ = pages
    arts = [normalizer.normalize(r) for r in (tracked, amp, direct)]
    assert {a["canonical_url"] for a in arts} == {CANONICAL}
    assert {a["article_id"] for a in arts} == {arts[0]["article_id"]}
    outcomes = [decide(article_store, a).outcome for a in arts]
    assert outcomes == [NEW, DUPLICATE, DUPLICATE]
    stored = article_store.get(arts[0]["article_id"])
    assert stored["version"] == 1 and stored["canonical_url"] == CANONICAL
    assert article_store.get_version(arts[0]["article_id"], 2) is None


def test_copy_without_canonical_is_caught_by_the_content_hash(normalizer, article_store, pages):
    tracked, _, _, amp_no_canonical = pages
    first = normalizer.normalize(tracked)
    copy = normalizer.normalize(amp_no_canonical)
    assert copy["article_id"] != first["article_id"]  # a different URL: a different id
    assert decide(article_store, first).outcome == NEW
    d = decide(article_store, copy)
    assert (d.outcome, d.owner, d.article) == (CONTENT_DUPLICATE, first["article_id"], None)
    assert article_store.get(copy["article_id"]) is None


def test_corrected_headline_is_version_2_of_the_same_article(normalizer, article_store, kit, pages):
    tracked = pages[0]
    v1 = normalizer.normalize(tracked)
    assert decide(article_store, v1).outcome == NEW
    corrected = kit.make_raw(
        CANONICAL,
        kit.make_html("Earthquake shakes coast, four injured", kit.WIRE_REPORT, canonical=CANONICAL),
        fetched_at=kit.T0 + 3_600_000,
    )
    v2 = normalizer.normalize(corrected)
    assert v2["article_id"] == v1["article_id"]
    d = decide(article_store, v2)
    assert d.outcome == UPDATE and d.article["version"] == 2
    # first seen / published stay those of version 1
    assert d.article["first_seen_at"] == v1["first_seen_at"]
    assert d.article["published_at"] == v1["published_at"]
    stored = article_store.get(v1["article_id"])
    assert (stored["version"], stored["title"]) == (2, "Earthquake shakes coast, four injured")
    assert article_store.get_version(v1["article_id"], 1)["title"] == TITLE


def test_replayed_raw_item_changes_nothing(normalizer, article_store, kit, pages):
    tracked = pages[0]
    first = decide(article_store, normalizer.normalize(tracked))
    assert first.outcome == NEW
    before = article_store.get(first.article["article_id"])
    again = decide(article_store, normalizer.normalize(dict(tracked)))  # the same message redelivered
    assert (again.outcome, again.article) == (DUPLICATE, None)
    assert article_store.get(first.article["article_id"]) == before


def test_late_replay_of_an_old_version_does_not_roll_back(normalizer, article_store, kit, pages):
    tracked = pages[0]
    v1 = normalizer.normalize(tracked)
    decide(article_store, v1)
    v2 = normalizer.normalize(
        kit.make_raw(
            CANONICAL,
            kit.make_html("Earthquake shakes coast, four injured", kit.WIRE_REPORT, canonical=CANONICAL),
            fetched_at=kit.T0 + 3_600_000,
        )
    )
    assert decide(article_store, v2).outcome == UPDATE
    replay = decide(article_store, normalizer.normalize(tracked))
    assert (replay.outcome, replay.article) == (STALE, None)
    assert article_store.get(v1["article_id"])["version"] == 2
    assert article_store.get_version(v1["article_id"], 3) is None


class _StaleFirstRead:
    """A store whose first get() misses: what a worker sees when another one writes between its read and write."""

    def __init__(self, store):
        self.store, self.reads = store, 0

    def get(self, article_id):
        self.reads += 1
        return None if self.reads == 1 else self.store.get(article_id)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_racing_writer_of_the_same_text_ends_as_duplicate(normalizer, article_store, pages):
    art = normalizer.normalize(pages[0])
    article_store.claim_content(art["content_hash"], art["article_id"])
    article_store.write(dict(art, version=1))  # the other worker won
    racing = _StaleFirstRead(article_store)
    assert decide(racing, art).outcome == DUPLICATE
    assert racing.reads == 1  # settled by the conditional write's answer, without another read


def test_racing_writer_of_other_text_makes_us_decide_again(normalizer, article_store, kit, pages):
    art = normalizer.normalize(pages[0])
    other = normalizer.normalize(
        kit.make_raw(
            CANONICAL, kit.make_html("Earthquake shakes coast, four injured", kit.WIRE_REPORT, canonical=CANONICAL)
        )
    )
    article_store.claim_content(other["content_hash"], other["article_id"])
    article_store.write(dict(other, version=1))  # the other worker stored a different text first
    d = decide(_StaleFirstRead(article_store), art)
    assert d.outcome == UPDATE and d.article["version"] == 2


def test_dedupe_decisions_on_every_backend(normalizer, kit, store_config, pages):
    """The same decisions against the embedded store and against Bigtable (emulator): the conditional write and the
    content claim are the store's; dedupe only reads their answers."""
    from stores import open_store

    store = open_store("articles", store_config)
    tracked, amp, direct, amp_no_canonical = pages
    outcomes = [decide(store, normalizer.normalize(r)).outcome for r in (tracked, amp, direct, amp_no_canonical)]
    assert outcomes == [NEW, DUPLICATE, DUPLICATE, CONTENT_DUPLICATE]
    corrected = kit.make_raw(
        CANONICAL,
        kit.make_html("Earthquake shakes coast, four injured", kit.WIRE_REPORT, canonical=CANONICAL),
        fetched_at=kit.T0 + 3_600_000,
    )
    d = decide(store, normalizer.normalize(corrected))
    assert (d.outcome, d.article["version"]) == (UPDATE, 2)
    assert decide(store, normalizer.normalize(tracked)).outcome == STALE
