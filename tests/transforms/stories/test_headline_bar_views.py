"""Leave-one-file-out without a headline-only file: what the headline bar is chosen on, and the views experiment.

With uci-dev (the only headline-only dev file) left out, a fold chooses its headline bar on the body files
(benchmarks/stories_lofo.reference_bars: "else all files"): the body bar (5.25), at which the writer's headline
merges never fire (uci-dev 0.954 / 0.589, 479 stories for 44; docs/stories.md, "Headline-only input out of sample").
The fold now says so (its model's ``headline_bar_chosen_on``, the calibration's printed note). With views
(``stories_calibrate.py --headline-views``, an experiment) such a fold chooses it on the headline-undated views of
the other files whose cuts tell their stories apart (stories_lofo.headline_bar_of_views).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import stories_calibrate as calibrate  # noqa: E402
import stories_lofo as lofo  # noqa: E402

from transforms.stories.embed import embed as embmod  # noqa: E402

ROUTING = embmod.EmbedderRouting("hash:32")
EVENTS = [
    ("Earthquake strikes Chile", "A strong earthquake struck Valparaiso in Chile on Monday, officials said."),
    ("Norway votes in election", "Voters in Oslo and across Norway cast ballots in the general election."),
    ("Wildfire burns near Athens", "A wildfire burned homes near Athens in Greece, firefighters said."),
    ("Court rules on Ottawa tax case", "The supreme court in Ottawa ruled on a tax case brought by a miner."),
]


def records(name: str, titles: str = "own", body: bool = True) -> list[dict]:
    """Three reports of each event; ``titles`` "same": every event's reports carry one title (a view of them cannot
    tell the events apart)."""
    out = []
    for e, (title, text) in enumerate(EVENTS):
        for i in range(3):
            t = "Officials give an update" if titles == "same" else f"{title} ({i})" if i else title
            out.append({"id": f"{name}-{e}-{i}", "story_id": f"{name}-{e}", "language": "en", "title": t})
            out[-1]["text"] = f"{text} Report {i}." if body else ""
    return out


def load(recs: dict) -> dict:
    return {n: calibrate.load_records(n, r, ROUTING, None, False) for n, r in recs.items()}


def dev_files(same_titles: bool = False) -> tuple[dict, dict, dict]:
    recs = {
        "bodies-dev.jsonl": records("bodies"),
        "more-dev.jsonl": records("more", "same" if same_titles else "own"),
        "heads-dev.jsonl": records("heads", body=False),
    }
    data = load(recs)
    rows = {n: lofo.pair_rows(f, g) for n, (f, g, _) in data.items()}
    views = lofo.headline_views(data, rows, lambda n: load({n: lofo.view(recs[n], "headline-undated")})[n])
    return data, rows, views


def test_a_fold_without_a_headline_file_says_its_headline_bar_came_from_bodies():
    data, rows, _ = dev_files()
    model = lofo.fold_model(data, rows, "heads-dev.jsonl")
    assert model.meta["headline_bar_chosen_on"] == ["bodies-dev.jsonl", "more-dev.jsonl"]
    assert model.thresholds["headline"] == model.thresholds["body"]
    assert "chosen on bodies" in calibrate.headline_evidence(model, data)
    with_heads = lofo.fold_model(data, rows, "bodies-dev.jsonl")  # chosen on the headline-only file: no note
    assert "headline_bar_chosen_on" not in with_heads.meta
    assert calibrate.headline_evidence(with_heads, data) == ""


def test_with_views_the_headline_bar_is_chosen_on_views_that_tell_their_stories_apart():
    data, rows, views = dev_files()
    assert sorted(views) == ["bodies-dev.jsonl", "more-dev.jsonl"]  # the headline-only file has no view
    model = lofo.fold_model(data, rows, "heads-dev.jsonl", views=views)
    assert model.meta["headline_bar_chosen_on"] == [
        "bodies-dev.jsonl (headline-undated)",
        "more-dev.jsonl (headline-undated)",
    ]
    assert "(headline-undated)" in calibrate.headline_evidence(model, data)
    vdata = {n: v[0] for n, v in views.items()}
    vrows = {n: v[1] for n, v in views.items()}
    for n in vdata:  # the views' reference at the chosen bar meets their precision bar
        s = lofo._cut(vdata, n, lofo._linkages(vrows, n, model), model.thresholds["headline"])
        assert s["pair_precision"] >= lofo.precision_bar(n)
    held = lofo.fold_model(data, rows, {"heads-dev.jsonl", "bodies-dev.jsonl"}, views=views)
    assert held.meta["headline_bar_chosen_on"] == ["more-dev.jsonl (headline-undated)"]  # never the left-out file's


def test_a_view_that_cannot_tell_its_events_apart_is_no_evidence():
    data, rows, views = dev_files(same_titles=True)
    model = lofo.fold_model(data, rows, "heads-dev.jsonl", views=views)
    assert model.meta["headline_bar_chosen_on"] == ["bodies-dev.jsonl (headline-undated)"]
    alone = {"bodies-dev.jsonl": views["bodies-dev.jsonl"]}
    assert model.thresholds == lofo.fold_model(data, rows, "heads-dev.jsonl", views=alone).thresholds


def test_the_fold_cache_tells_the_rules_apart():
    data, _, _ = dev_files()
    assert lofo.features_digest(data) != lofo.features_digest(data, lofo.HEADLINE_RULE)
