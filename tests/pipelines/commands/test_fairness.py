"""``newsroom fairness``: a day of an edition's snapshots, published through PublishSnapshotFn
into the embedded store's local files, gives a per-publisher report in JSON and HTML: impressions by position and
minutes live, headline wins, and the close calls lost with their reason (a copy, older, paywalled, less central)."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_rollback import store_flags
from transforms.editions.beam.publishing import PublishSnapshotFn
from transforms.editions.cycle.fairness import position_weight
from transforms.editions.ranker.rank import snapshot_items
from transforms.editions.vocabulary.documents import iso

TITLE = "Council approves the new transit budget after a long debate"


def publish(store_config, out, config) -> None:
    fn = PublishSnapshotFn(store_config)
    fn.setup()
    for item in snapshot_items(out, config):
        res = list(fn.process(item))[0]
        assert res["outcome"] in ("published", "unchanged") or item["kind"] == "edition_page", res  # short pages


def test_the_report_counts_impressions_wins_and_why_close_calls_were_lost(store_config, world, make_ranker, tmp_path):
    T, MIN = world.T0, world.MIN
    wire = world.article("wirepress", T - 30 * MIN, title=TITLE)
    world.add(1, wire)
    world.add(1, world.article("daily-herald", T - 29 * MIN, title=TITLE, copy_of=wire["article_id"]))  # a copy
    paid = world.article("pacific-times", T - 20 * MIN, title=TITLE)
    paid["accessible_for_free"] = False
    world.add(1, paid)
    world.add(1, world.article("capital-post", T - 40 * MIN, title="Transit budget: what it means for riders"))
    world.story(2, ["london-chronicle", "toronto-ledger"], T - 60 * MIN)
    for s in range(3, 25):  # enough stories for every page's minimum
        world.story(s, [f"paper-{s}", "mumbai-daily"], T - (60 + s) * MIN)
    r = make_ranker(world)
    first = r.cycle(T)
    publish(store_config, first, r.config)
    publish(store_config, r.cycle(T + 10 * MIN), r.config)

    day = iso(T)[:10]
    code = newsroom(
        ["fairness", "--edition", "us-en", "--day", day, "--out", str(tmp_path), *store_flags(store_config)]
    )
    assert code == 0
    report = json.loads((tmp_path / f"fairness-us-en-{day}.json").read_text())
    assert "<table>" in (tmp_path / f"fairness-us-en-{day}.html").read_text()
    pubs = report["publishers"]
    rep1 = next(s for s in first.pages["top"]["stories"] if s["story_id"] == "1")["representative"]["publisher_id"]
    assert rep1 == "wirepress"
    assert pubs["wirepress"]["headline_wins"] == 1
    assert pubs["daily-herald"]["lost_because"]["copy"] == 1
    assert pubs["pacific-times"]["lost_because"]["paywalled"] == 1
    assert pubs["capital-post"]["lost_because"]["older"] == 1
    assert "wirepress" not in {ex["winner"] for ex in pubs["wirepress"]["examples"]}  # a winner loses nothing
    # impressions: the position weight of each slot times the minutes the version was live (to the day's end)
    top = first.pages["top"]
    rank = next(s["rank"] for s in top["stories"] if s["story_id"] == "1")
    per_top_page = position_weight(rank) * (24 * 60 - (T % 86_400_000) // MIN)
    assert pubs["wirepress"]["impressions"] >= per_top_page - 1e-3
    assert 0 < report["concentration"] <= 1
    assert newsroom(["fairness", "--edition", "us-en", "--day", "2020-01-01", *store_flags(store_config)]) == 1
    assert newsroom(["fairness", "--edition", "us-en", "--day", "yesterday", *store_flags(store_config)]) == 2
