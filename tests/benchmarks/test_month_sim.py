"""The simulated-history generator (benchmarks/history_gen.py) and a tiny month_sim run (benchmarks/month_sim.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from benchmarks.history_gen import LANGUAGES, History

ROOT = Path(__file__).resolve().parents[2]


def test_history_is_deterministic_time_ordered_and_has_every_feature():
    a = list(History(days=4, per_day=400, seed=3).articles())
    b = list(History(days=4, per_day=400, seed=3).articles())
    assert a == b
    assert [r["published_at"] for r in a] == sorted(r["published_at"] for r in a)
    assert a[-1]["published_at"] < "2026-01-05T00:00:00Z"
    assert {r["language"] for r in a} == set(LANGUAGES)
    assert len({r["id"] for r in a}) == len(a)
    sizes = Counter(r["story_id"] for r in a)
    assert max(sizes.values()) >= 10 * sorted(sizes.values())[len(sizes) // 2]  # a long tail
    copies = defaultdict(set)
    for r in a:
        copies[(r["title"], r["text"])].add(r["publisher"])
    assert any(len(p) > 1 for p in copies.values())  # wire copies: same text, another publisher


def test_follow_ups_days_later_share_the_subjects_entities():
    h = History(days=6, per_day=300, seed=1)
    list(h.articles())
    assert h.counts.follow_ups > 0 and h.counts.merges + h.counts.splits > 0
    by_entities = defaultdict(list)
    for s in h.subjects:
        by_entities[tuple(s.entities)].append(s.born_s)
    spans = [max(t) - min(t) for t in by_entities.values() if len(t) > 1]
    assert spans and max(spans) >= 86_400  # a storyline: the same entities a day or more apart


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        History(days=0, per_day=10)


@pytest.mark.slow
def test_a_tiny_month_sim_prints_a_row_per_day_and_loses_nothing(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "month_sim.py"),
            "--days=2",
            "--per_day=15",
            "--editions=us-en",
            "--warmup=1",
        ]
        + ["--no_origin", f"--dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout
    m = re.search(r"accounting: generated (\d+), assigned once (\d+), lost 0, twice 0", out)
    assert m and m.group(1) == m.group(2) and int(m.group(1)) > 0, out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*[12] +\d", line)]
    assert [r[0] for r in rows] == ["1", "2"], out
    assert "writer us/article" in out and "rank ms/cycle" in out and "day 2 / day 1" in out


def test_a_steady_history_has_the_same_articles_every_day_and_no_burst():
    rows = list(History(days=5, per_day=200, seed=2, spread=0.0, max_story=20).articles())
    per_day = Counter(r["published_at"][:10] for r in rows)
    assert len(per_day) == 5 and all(180 <= n <= 240 for n in per_day.values()), per_day
    assert max(Counter(r["story_id"] for r in rows).values()) <= 40  # 20 articles, each with at most one wire copy
    with pytest.raises(ValueError):
        History(days=1, per_day=10, spread=1.0)


def test_state_sizes_are_printed_per_live_story_beside_the_raw_figures():
    from benchmarks.month_sim import DAY_MS, Probe, day_rows, kind_of

    p = Probe(0)
    for day, live, size in ((0, 10, 1000), (1, 40, 4000)):
        p.held("live stories", "en", day, live)
        p.held("live stories", "en", day, 999)  # the first measure of the day stands
        p.held("live articles", "en", day, live * 3)
        p.state[("writer stories", day)]["en"] = size * live
        p.held("storyline stories", "all", day, live * 2)
        p.state[("storylines", day)]["all"] = 50 * live * 2
    rows = day_rows(p, {0: 30, 1: 120}, 2)
    assert [r["live stories"] for r in rows] == [10, 40]
    assert [r["writer stories B/live story"] for r in rows] == [1000, 4000]
    assert [round(r["writer stories B/live article"], 1) for r in rows] == [333.3, 1333.3]
    assert [r["storylines B/indexed story"] for r in rows] == [50, 50]
    assert kind_of("writer stories B/key") == "follows" and kind_of("storylines B/indexed story") == "flat"
    assert kind_of("writer stories B/fit") == "flat" and kind_of("live articles/live story") == "info"
    assert kind_of("writer stories B/live article") == "info"  # a quiet day of small stories is no growth: fit_live
    assert kind_of("links us/article") == "run" and p.day(DAY_MS + 5) == 1


def _live_days(n=40):
    """Days -9..30 whose live stories and their sizes swing (a burst, quiet days of small stories)."""
    rows = []
    for i in range(n):
        stories = 30 + (i * 7) % 25
        articles = stories * (2 + (i * 5) % 7)
        rows.append({"day": i - 9, "live stories": stories, "live articles": articles})
    return rows


def test_a_state_following_the_live_window_fits_flat_and_one_growing_with_history_does_not():
    from benchmarks.month_sim import fit_live, kind_of

    rows = _live_days()
    for r in rows:
        r["writer stories B/key"] = 9000 * r["live stories"] + 3000 * r["live articles"]  # per story, per member
        r["writer state B/key"] = r["writer stories B/key"] + 500_000  # arrays of its own besides
        r["rank memory B/key"] = 100 * r["live stories"] * (1 + max(r["day"], 0) / 30)  # grows with history
    fit_live(rows, "writer stories B/key", False)
    fit_live(rows, "writer state B/key", True)
    fit_live(rows, "rank memory B/key", False)
    day1, day30 = rows[9], rows[-1]
    for name in ("writer stories B/fit", "writer state B/fit"):
        assert all(abs(r[name] - 1) < 1e-6 for r in rows), name
        assert kind_of(name) == "flat"
    per_article = [r["writer stories B/key"] / r["live articles"] for r in rows]
    assert max(per_article) / min(per_article) > 1.3  # what dividing by one count read as growth
    assert day30["rank memory B/fit"] / day1["rank memory B/fit"] > 1.3  # history growth still shows


def test_the_warm_up_is_printed_but_day_1_is_the_baseline_and_log_follows_the_rankers_live_articles(capsys):
    from benchmarks.month_sim import DAY_MS, Probe, day_rows, print_table

    p = Probe(2 * DAY_MS, warmup=2)  # two warm-up days before day 1
    assert (p.day(-5), p.day(0), p.day(2 * DAY_MS - 1), p.day(2 * DAY_MS)) == (-2, -2, -1, 0)
    for day, live in ((-2, 1), (-1, 20), (0, 30), (1, 33)):
        p.held("live stories", "en", day, live)
        p.calls[("rank", day)] = 2
        p.ranker[day] = [6 * live, 600 * live, 2 * live, 3 * live]  # LOG events and bytes, live stories, articles
    rows = day_rows(p, {-2: 10, -1: 60, 0: 60, 1: 66}, 2)
    assert [r["day"] for r in rows] == [-1, 0, 1, 2]
    assert [r["rank log events/live article"] for r in rows] == [2.0] * 4
    assert [r["rank log B/live article"] for r in rows] == [200.0] * 4 and rows[2]["rank live stories"] == 30
    print_table(rows)
    out = capsys.readouterr().out
    ratio = re.search(r"^\s+live stories\s+(\S+)x", out, re.M)
    assert "day 2 / day 1" in out and ratio and ratio.group(1) == "1.10"  # 33 / 30, not against the empty start


def test_a_collection_that_starts_inside_a_stage_is_charged_to_the_collector_not_the_stage():
    import time

    from benchmarks.month_sim import Probe

    p = Probe(0)

    def stage(_):
        p.on_gc("start", {"generation": 2})  # what gc.callbacks does around a collection
        t = time.process_time()
        while time.process_time() - t < 0.05:
            pass
        p.on_gc("stop", {"generation": 2})

    p.timed("repair", lambda a: 0)(stage)(None)
    assert p.gc_cpu[0] >= 0.05 and p.gc_full[0] == 1
    assert p.cpu[("repair", 0)] < 0.01 and p.calls[("repair", 0)] == 1


def test_a_saga_gets_an_episode_every_50_hours_for_the_whole_history_and_leaves_the_rest_alone():
    plain = list(History(days=9, per_day=60, seed=4).articles())
    h = History(days=9, per_day=60, seed=4, sagas=2)
    rows = list(h.articles())
    episodes = defaultdict(list)
    for r in rows:
        if r["story_id"].startswith("truth-saga"):
            episodes[r["story_id"]].append(r)
    assert h.counts.saga_episodes == len(episodes) == 2 * 5  # 216 h: an episode at 0, 50, ..., 200 h of each saga
    for j in range(2):
        mine = [v for k, v in episodes.items() if k.startswith(f"truth-saga{j}e")]
        starts = sorted(v[0]["published_at"] for v in mine)
        assert starts[0] < "2026-01-01T02" and starts[-1] > "2026-01-09T08"  # first day to last
        for v in mine:  # a story of its own: four publishers, the saga's entities
            assert len({r["publisher"] for r in v}) == 4 and all(f"Saga{j}b" in r["text"] for r in v)
    assert [r["published_at"] for r in rows] == sorted(r["published_at"] for r in rows)
    rest = [(r["title"], r["text"], r["published_at"], r["publisher"]) for r in rows if "saga" not in r["story_id"]]
    assert rest == [(r["title"], r["text"], r["published_at"], r["publisher"]) for r in plain]
    with pytest.raises(ValueError):
        History(days=1, per_day=10, sagas=-1)


def test_the_default_warm_up_covers_the_storyline_horizon():
    """Day 1 must find the storyline stage's index full: its cost per decision follows the stories of its horizon,
    which fill for HORIZON_MS (22.2 days) from an empty start (benchmarks/month_sim.py docstring)."""
    from benchmarks.month_sim import DAY_MS, WARMUP_DAYS
    from transforms.stories.storylines.storyline import HORIZON_MS

    assert (WARMUP_DAYS - 1) * DAY_MS < HORIZON_MS <= WARMUP_DAYS * DAY_MS
