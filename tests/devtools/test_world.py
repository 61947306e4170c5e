"""The sample world as ``newsroom run`` drives it: it keeps releasing news (generated events, follow-ups,
corrections; deterministic from a seed) for as long as it runs, and a rerun over the same data dir resumes its
clock, so the ingest job fetches nothing twice (devtools/world/server.py, devtools/world/generated.py)."""

from __future__ import annotations

import json
import time
import types

import pytest

from devtools.world import generated
from devtools.world.content import ARTICLES
from devtools.world.server import SampleWorld, world_state


def _ingest(tmp_path, world, seconds: float) -> tuple[dict, set[str]]:
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions

    feeds = tmp_path / "feeds.json"
    feeds.write_text(json.dumps({"feeds": world.feeds()}))
    before = len(world.requests_for())
    opts = IngestOptions(
        [
            f"--data_dir={tmp_path / 'data'}",
            "--min_host_delay_s=0",
            "--fetch_workers=2",
            f"--feeds={feeds}",
            f"--schedule_scale={1.0 / world.clock.speed}",
            "--poll_max_s=300",
        ]
    )
    ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
    try:
        stats = ingest.run(max_run_s=seconds)
    finally:
        ingest.stop()
    pages = {r["path"] for r in world.requests_for()[before:] if r["path"].startswith(("/news/", "/amp/", "/go/"))}
    return stats, pages


def test_a_rerun_of_newsroom_runs_world_fetches_nothing_twice(tmp_path):
    """On main a second run started a new clock: every released item was re-dated, so ingest took each one for a
    correction and fetched its page again (6 in 8 s here, 17 in a full `make run`)."""
    from devtools import run

    args = types.SimpleNamespace(speed=10.0)
    said: list[str] = []
    first = run._start_world(args, str(tmp_path / "data"), "http://127.0.0.1:9", {}, said.append)
    try:
        stats1, pages1 = _ingest(tmp_path, first, 6.0)
    finally:
        first.stop()
    assert stats1["pages_fetched"] >= 15 and len(pages1) >= 15
    second = run._start_world(args, str(tmp_path / "data"), "http://127.0.0.1:9", {}, said.append)
    try:
        assert second.clock.start_s == first.clock.start_s and "resumed" in said[-1]
        stats2, pages2 = _ingest(tmp_path, second, 5.0)
    finally:
        second.stop()
    assert not pages1 & pages2, sorted(pages1 & pages2)
    assert stats2.get("updates", 0) == 0


def test_world_state_is_kept_and_a_bad_file_is_named(tmp_path):
    path = tmp_path / "world.json"
    made = world_state(path, 10.0, 7)
    assert world_state(path, None, 1) == made  # a rerun keeps the first run's clock, speed and seed
    assert world_state(path, 10.0, 1) == made
    path.write_text("{not json")
    with pytest.raises(ValueError, match="world.json"):
        world_state(path, 10.0, 7)


def _world(virtual_s: float, seed: int | None = 1, speed: float = 10.0, start_s: float | None = None) -> SampleWorld:
    """A world (not started: no server thread needed) ``virtual_s`` virtual seconds into its run."""
    return SampleWorld(speed=speed, seed=seed, start_s=start_s or time.time() - virtual_s / speed)


def test_the_world_keeps_releasing_events_follow_ups_and_corrections():
    hours = 4
    world = _world(hours * 3600)
    now = world.clock.now_ms()
    released = world.release_times(now)
    scripted = {a["id"] for a in ARTICLES}
    gen = [a for a in world.articles.values() if a["id"] not in scripted and world.is_public(a, now)]
    events = {a["event"] for a in gen}
    assert len(released) > len(ARTICLES) + 100 and len(events) >= (hours * 3600 - generated.START_S) // 240 - 1
    assert {a["lang"] for a in gen} == {"en", "es", "de", "fr"}
    by_event: dict[int, list[dict]] = {}
    for a in gen:
        by_event.setdefault(a["event"], []).append(a)
    follow_ups = [a for a in gen if a["id"].endswith("-f")]
    assert len(follow_ups) >= len(events) - 8  # the newest events' follow-ups are still to come
    for arts in by_event.values():
        reports = [a for a in arts if not a["id"].endswith("-f")]
        assert len({a["pub"] for a in reports}) == len(reports)  # distinct publishers
        assert len({a["headline"] for a in reports}) == len(reports) or reports[0]["lang"] == "de"
    corrected = [a for a in gen if a.get("correction") and world.clock.release_ms(a["correction"]["at"]) <= now]
    assert corrected
    a = corrected[0]
    pub = world.registry.get(a["pub"])
    body, _, _ = world.render_feed(pub.feeds[0], pub, now)
    assert world.headline(a, now)[0] == a["correction"]["headline"] != a["headline"]
    assert a["correction"]["headline"].encode() in body.replace(b"&#x27;", b"'")


def test_the_world_never_runs_dry():
    """Ten virtual days in, the newest release is still fresh: a new event every few virtual minutes."""
    world = _world(10 * 86400)
    now = world.clock.now_ms()
    newest = max(world.release_times(now).values())
    assert now - newest <= 2 * generated.EVERY_S / world.clock.speed * 1000


def test_generated_news_is_a_function_of_the_seed():
    start = time.time() - 3 * 3600 / 10
    a, b, c = _world(0, 1, start_s=start), _world(0, 1, start_s=start), _world(0, 2, start_s=start)
    now = int(time.time() * 1000)
    feeds = {}
    for w in (a, b, c):
        feeds[id(w)] = [w.render_feed(f, p, now)[0] for p in w.registry for f in p.feeds]
    assert feeds[id(a)] == feeds[id(b)]
    assert feeds[id(a)] != feeds[id(c)]


def test_without_a_seed_the_world_is_the_scripted_one():
    world = _world(10 * 3600, seed=None)
    assert set(world.articles) == {a["id"] for a in ARTICLES}


def test_a_resumed_world_given_another_speed_goes_on_at_it_and_keeps_every_date(tmp_path):
    """On main a resumed world kept the speed of its world.json whatever ``--speed`` said: the soak's settle run
    (``--speed 0.001``, to account what was fetched) went on releasing at x10, so its accounting never closed."""
    path, start = tmp_path / "world.json", time.time() - 2 * 3600 / 10  # two virtual hours in, at x10
    world_state(path, 10.0, 1, now_s=start)
    before = SampleWorld(**_resumed(world_state(path, None, 1)))
    now_ms = int(time.time() * 1000)
    released = before.release_times(now_ms)
    state = world_state(path, 0.001, 1, now_s=now_ms / 1000)
    assert json.loads(path.read_text())["changes"] == state["changes"] and len(state["changes"]) == 1
    after = SampleWorld(**_resumed(world_state(path, None, 1)))  # a later rerun keeps the new pace
    assert after.clock.speed == 0.001
    assert after.release_times(now_ms + 600_000) == released  # ten wall minutes on: nothing new, same dates
    assert after.virtual_now_s() == pytest.approx(before.virtual_now_s(), abs=0.5)
    faster = SampleWorld(**_resumed(world_state(path, 100.0, 1, now_s=now_ms / 1000 + 60)))
    later = faster.release_times(now_ms + 120_000)  # a wall minute at x100: 100 virtual minutes of news
    assert {u: later[u] for u in released} == released and len(later) > len(released) + 20


def _resumed(state: dict) -> dict:
    return {"start_s": state["start_s"], "speed": state["speed"], "seed": state["seed"], "changes": state["changes"]}
