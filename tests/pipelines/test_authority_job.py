"""`newsroom authority` end to end on both backends (embedded; Bigtable + GCS emulators): a small world of stories
and articles in the stores -> the job -> authority/v1.json and the ``authority`` pointer -> the editions stage's
book loads the computed authority (and falls back to the hand-set file before the job ran)."""

from __future__ import annotations

import time

import pytest

from stores import open_stores
from tests.pipelines.test_stories_job import store_argv
from transforms import authority as au
from transforms.editions.book.storybook import StoryBook
from transforms.editions.vocabulary.config import load_config
from transforms.publishers import UNKNOWN_AUTHORITY, default_registry

N = 30  # stories
NEW = "newsite.test"  # a publisher the hand-set file does not know: prior 0.1
COPIER = "springfield-gazette"  # hand-set 0.35; only copies in this world


def build_world(stores, sample_record, now_ms: int) -> None:
    """N stories: NEW reports first (original, business), the Gazette copies it; plus an alias and an empty story."""
    for i in range(N):
        sid, at = 1000 + i, now_ms - 3_600_000 + i * 1000
        orig, copy = f"{i:04d}" + "a" * 28, f"{i:04d}" + "c" * 28
        for aid, pub, copy_of, t in ((orig, NEW, None, at), (copy, COPIER, orig, at + 60_000)):
            stores.articles.write(
                sample_record(
                    "Article", article_id=aid, publisher_id=pub, content_hash=f"h{aid}", copy_of=copy_of,
                    section="business", topics=[], first_seen_at=t, published_at=t,
                )
            )  # fmt: skip
        stores.stories.put_story(sid, {"language": "en"})
        stores.stories.add_members(
            sid,
            {
                orig: {"at": at, "source": NEW, "is_copy": False},
                copy: {"at": at + 60_000, "source": COPIER, "is_copy": True, "copy_of": orig},
            },
        )
    stores.stories.put_story(5000, {"language": "en"})  # no members: skipped
    stores.stories.put_story(5001, {"language": "en"})
    stores.stories.add_members(5001, {"x" * 32: {"at": now_ms, "source": NEW, "is_copy": False}})
    stores.stories.set_alias(5001, 1000)  # an alias: its members are the survivor's, skipped


def book_authority(config, publisher_id: str) -> tuple[float, float]:
    """(general, business) authority of a publisher in a fresh editions book, as RankEditionsFn.setup loads it."""
    book = StoryBook(load_config(), au.current_registry(None, config), "en")
    i = book.publisher(publisher_id)
    return float(book.publishers.authority[i, 0]), float(
        book.publishers.authority[i, 1 + book.section_index["business"]]
    )


def burst_authority(config, sample_record, publisher_id: str) -> float:
    """The authority the editions stage's burst counter stamps on an original of ``publisher_id`` (business)."""
    from transforms.editions.beam.detection import ExtractOriginalsFn

    fn = ExtractOriginalsFn(default_registry(), {"business": "business"}, config)
    fn.setup()
    change = sample_record("StoryChange")
    change["article"] = dict(change["article"], publisher_id=publisher_id, section="business", copy_of=None)
    [(_story, obs)] = [tv.value for tv in fn.process(change)]
    assert obs["publisher_id"] == publisher_id
    return obs["authority"]


def test_the_job_computes_publishes_and_the_book_loads_it(store_config, sample_record):
    from pipelines.authority import run

    stores = open_stores(store_config)
    build_world(stores, sample_record, int(time.time() * 1000))
    assert book_authority(store_config, NEW) == (UNKNOWN_AUTHORITY, UNKNOWN_AUTHORITY)  # before: the file's default
    run(store_argv(store_config) + ["--prior_weight=20", "--page_size=7"])

    doc = au.load(stores)
    assert doc["version"] == 1 and doc["stories"] == N
    new, copier = doc["publishers"][NEW], doc["publishers"][COPIER]
    assert new["evidence"] == {"articles": N, "originals": N, "stories": N, "first": N, "picked_up": N, "corrected": 0,
                               "redated": 0, "self_copies": 0}  # fmt: skip
    # First on every story, always picked up: evidence 1.0, shrunk toward 0.1 with 20 pseudo-articles.
    want_new = (20 * UNKNOWN_AUTHORITY + N * 1.0) / (20 + N)
    assert new["authority"] == pytest.approx(want_new, abs=1e-6) and want_new > 0.5  # now a strong publisher
    assert new["topic_authority"]["business"] == pytest.approx((20 * want_new + N) / (20 + N), abs=1e-5)
    # Only copies: evidence 0, pulled down from its hand-set 0.35.
    assert copier["authority"] == pytest.approx(20 * 0.35 / (20 + N), abs=1e-6)
    assert doc["publishers"]["wirepress"]["authority"] == 0.95  # no evidence: the prior

    general, business = book_authority(store_config, NEW)
    assert general == pytest.approx(want_new, abs=1e-6) and business == pytest.approx(
        new["topic_authority"]["business"], abs=1e-6
    )
    assert book_authority(store_config, COPIER)[0] == pytest.approx(copier["authority"], abs=1e-6)

    # The burst counter's registry: NEW is now a strong publisher (> 0.5) for Breaking, in its section.
    assert burst_authority(store_config, sample_record, NEW) == pytest.approx(business, abs=1e-6)
    assert burst_authority(None, sample_record, NEW) == UNKNOWN_AUTHORITY  # no stores: the hand-set file

    run(store_argv(store_config) + ["--prior_weight=20"])  # a second run: the next version, same numbers
    assert au.load(stores)["version"] == 2
    assert au.load(stores)["publishers"][NEW] == new


def test_window_and_cli(embedded_store_config, sample_record):
    """`newsroom authority` through the CLI; stories older than the window are left out."""
    from pipelines.cli import main

    stores = open_stores(embedded_store_config)
    build_world(stores, sample_record, int(time.time() * 1000) - 10 * 86_400_000)  # ten days old
    assert main(["authority", *store_argv(embedded_store_config), "--window_days=7"]) == 0
    doc = au.load(stores)
    assert doc["stories"] == 0 and doc["publishers"][COPIER]["authority"] == 0.35
    assert main(["authority", *store_argv(embedded_store_config), "--window_days=0"]) == 0
    assert au.load(stores)["stories"] == N
    assert default_registry().get(COPIER).authority == 0.35  # the hand-set file is never written


def test_bad_flags_are_refused_naming_the_flag(embedded_store_config):
    from pipelines.authority import run

    with pytest.raises(ValueError, match="--prior_weight"):
        run(store_argv(embedded_store_config) + ["--prior_weight=-1"])


def test_an_ownership_group_is_one_voice(embedded_store_config, sample_record, tmp_path):
    """With NEW and the Gazette under one owner (--publishers), the Gazette's copies are the group's one voice:
    not pickups by others, and not copies held against the Gazette."""
    import json

    from pipelines.authority import run
    from transforms.publishers import PublisherRegistry

    rows = [dict(p.__dict__) for p in default_registry()]
    for r in rows:
        r["hosts"], r["feeds"] = list(r["hosts"]), list(r["feeds"])
        if r["publisher_id"] == COPIER:
            r["owner"] = "one-group"
    rows.append({"publisher_id": NEW, "name": "New Site", "hosts": [NEW], "region": "us", "language": "en",
                 "authority": 0.1, "owner": "one-group"})  # fmt: skip
    path = tmp_path / "publishers.json"
    path.write_text(json.dumps({"publishers": rows}))
    assert PublisherRegistry.load(str(path)).get(COPIER).group == "one-group"

    stores = open_stores(embedded_store_config)
    build_world(stores, sample_record, int(time.time() * 1000))
    run(store_argv(embedded_store_config) + ["--prior_weight=20", f"--publishers={path}"])
    doc = au.load(stores)["publishers"]
    assert doc[NEW]["evidence"]["picked_up"] == 0 and doc[NEW]["evidence"]["first"] == N
    assert doc[NEW]["authority"] == pytest.approx((20 * 0.1 + N * 0.7) / (20 + N), abs=1e-6)
    assert doc[COPIER]["evidence"]["articles"] == 0 and doc[COPIER]["authority"] == 0.35
