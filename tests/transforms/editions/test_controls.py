"""Editorial controls in the editions stage: pins, demotes and labels change the next cycle's pages and stop at
their expiry (transforms/editions/overlays/controls.py, read by EditionRanker every cycle); a held page's pointer is not
moved by the publisher while the hold lasts, whatever the cycles publish, and moves again after it; a rollback
with --hold survives the next cycles too. On both backends (embedded; Bigtable + GCS emulators)."""

from __future__ import annotations

import json

import pytest
from apache_beam.utils.timestamp import Timestamp

from pipelines.cli import main as newsroom
from schemas.pages import validate_page
from stores import open_stores
from stores.controls import Control, open_control_store
from tests.pipelines.commands.test_rollback import store_flags
from tests.transforms.fakes import Bag, Timer, Value
from transforms.editions.beam.publishing import PublishSnapshotFn
from transforms.editions.beam.ranking import RankEditionsFn
from transforms.editions.book.storybook import compact_change
from transforms.editions.overlays.controls import apply_controls
from transforms.editions.vocabulary import documents as docs
from transforms.editions.vocabulary.settings import RankSettings


def ctl(kind, world, section="top", story="", start=None, end=None, **kw) -> Control:
    T, MIN = world.T0, world.MIN
    return Control(
        kind=kind,
        edition="us-en",
        section=section,
        story_id=str(story),
        set_at=start or T - 60 * MIN,
        expires_at=end or T + 60 * MIN,
        who="tester",
        why="test",
        **kw,
    )


def ids(page) -> list[str]:
    return [s["story_id"] for s in page["stories"]]


@pytest.fixture
def ranked(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    r = make_ranker(world)
    return r, r.cycle(T)


# ------------------------------------------------------------------------------------------- the overlay itself
def test_pin_demote_and_label_reorder_the_page_and_keep_it_valid(ranked, world):
    r, out = ranked
    natural = ids(out.pages["top"])
    last, first, third = natural[-1], natural[0], natural[2]
    controls = [
        ctl("pin", world, story=last, position=2),
        ctl("demote", world, story=first),  # no factor: to the bottom
        ctl("label", world, story=third, label="fact_check"),
    ]
    applied = apply_controls(out, controls, r.book, world.T0)
    page = out.pages["top"]
    order = ids(page)
    assert order[1] == last and order[-1] == first and sorted(order) == sorted(natural)
    assert [s["rank"] for s in page["stories"]] == list(range(1, len(order) + 1))
    assert "fact_check" in next(s for s in page["stories"] if s["story_id"] == third)["labels"]
    assert applied == {"pin": 1, "demote": 1, "label": 1}
    validate_page("edition_page", json.loads(docs.canonical_bytes(page)))


def test_a_demote_by_factor_moves_the_story_below_those_it_now_scores_under(ranked, world):
    r, out = ranked
    page = out.pages["top"]
    scores = {s["story_id"]: s["score"] for s in page["stories"]}
    first = ids(page)[0]
    apply_controls(out, [ctl("demote", world, story=first, factor=0.5)], r.book, world.T0)
    order = ids(out.pages["top"])
    at = order.index(first)
    assert at > 0
    assert scores[order[at - 1]] > scores[first] * 0.5  # just below the last story that outscores the floor
    assert all(scores[s] <= scores[first] * 0.5 for s in order[at + 1 :])


def test_a_pin_brings_a_story_from_another_page_or_the_pool_without_growing_the_page(ranked, world):
    r, out = ranked
    section = next(s for s, p in out.pages.items() if len(p["stories"]) < len(out.pages["top"]["stories"]))
    page = out.pages[section]
    outsider = next(s for s in ids(out.pages["top"]) if s not in ids(page))
    size = len(page["stories"])
    apply_controls(out, [ctl("pin", world, section=section, story=outsider, position=1)], r.book, world.T0)
    assert ids(out.pages[section])[0] == outsider and len(out.pages[section]["stories"]) <= max(size, 1) + (
        size < r.params.page_size
    )
    validate_page("edition_page", json.loads(docs.canonical_bytes(out.pages[section])))
    # only in the pool (on no page): built from its pool entry
    pool_only = out.pool["stories"][-1]["story_id"]
    for p in out.pages.values():
        p["stories"] = [s for s in p["stories"] if s["story_id"] != pool_only]
    apply_controls(out, [ctl("pin", world, story=pool_only, position=1)], r.book, world.T0)
    entry = out.pages["top"]["stories"][0]
    assert entry["story_id"] == pool_only and entry["article_count"] >= 1
    validate_page("edition_page", json.loads(docs.canonical_bytes(out.pages["top"])))


def test_controls_outside_their_time_or_of_stories_not_in_the_pool_change_nothing(ranked, world):
    r, out = ranked
    T, MIN = world.T0, world.MIN
    before = json.loads(docs.canonical_bytes(out.pages["top"]))
    last = ids(out.pages["top"])[-1]
    controls = [
        ctl("pin", world, story=last, position=1, end=T),  # expired at this cycle
        ctl("pin", world, story=last, position=1, start=T + MIN),  # not yet
        ctl("pin", world, story="999999", position=1),  # no such story in the pool
    ]
    assert apply_controls(out, controls, r.book, T) == {}
    assert json.loads(docs.canonical_bytes(out.pages["top"])) == before


# --------------------------------------------------------------------------------------- the stage, cycle by cycle
class Stage:
    """RankEditionsFn (controls read from the stores every cycle) -> PublishSnapshotFn, with fake state/timers."""

    def __init__(self, world, config):
        self.world, self.config = world, config
        self.inbox, self.log, self.memory, self.chain, self.timer = Bag(), Bag(), Value(), Value(), Timer()
        self.fn = RankEditionsFn(RankSettings(editions_only=["us-en"], overrides={"idle_cycles": 120}), config)
        self.fn.setup()
        self.pub = PublishSnapshotFn(config)
        self.pub.setup()
        self.fed = set()

    def cycle(self, at_ms):
        for c in self.world.changes:
            if c["change_id"] not in self.fed:
                self.fed.add(c["change_id"])
                self.fn.process(
                    ("us-en", compact_change(c)),
                    inbox=self.inbox,
                    chain=self.chain,
                    memory=self.memory,
                    timer=self.timer,
                )
        self.timer.at = None
        items = list(
            self.fn.on_cycle(
                key="us-en",
                ts=Timestamp(micros=at_ms * 1000),
                inbox=self.inbox,
                event_log=self.log,
                memory=self.memory,
                chain=self.chain,
                timer=self.timer,
            )
        )
        items = [it for it in items if isinstance(it, dict)]  # not the tagged purge requests
        results = {}
        for it in items:
            for res in self.pub.process(it):
                if isinstance(res, dict):  # not the tagged Breaking / hot-story candidates
                    results[res["pointer"]] = res["outcome"]
        top = next(it["doc"] for it in items if it["pointer"] == "us-en/top")
        return top, results


def busy_world(world, minutes=20):
    """12 stories before T0, then a new, well-covered story every minute: every cycle has a different top page."""
    T, MIN = world.T0, world.MIN
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    for m in range(minutes):
        world.story(100 + m, [f"fresh-{m}", "daily-herald", "pacific-times", "wirepress"], T + m * MIN)


def test_pin_demote_and_label_take_effect_next_cycle_and_expire(embedded_store_config, world):
    T, MIN = world.T0, world.MIN
    busy_world(world)
    stage = Stage(world, embedded_store_config)
    top, _ = stage.cycle(T + MIN)
    pinned = [s for s in ids(top) if int(s) < 100][-1]  # the last of the old stories: never first on its own
    demoted = ids(top)[0]
    store = open_control_store(embedded_store_config)
    window = dict(start=T + 3 * MIN, end=T + 6 * MIN)
    store.set(ctl("pin", world, story=pinned, position=1, **window))
    store.set(ctl("demote", world, story=demoted, **window))
    store.set(ctl("label", world, story=pinned, label="fact_check", **window))
    for m in range(2, 9):
        top, _ = stage.cycle(T + m * MIN)
        order = ids(top)
        active = 3 <= m < 6
        assert (order[0] == pinned) is active, m
        labels = next((s["labels"] for s in top["stories"] if s["story_id"] == pinned), ())
        assert ("fact_check" in labels) is active, m
        if active:
            assert order[-1] == demoted


def test_a_hold_survives_the_next_cycles_and_ends_at_its_expiry(store_config, world, capsys):
    T, MIN = world.T0, world.MIN
    busy_world(world)
    stage = Stage(world, store_config)
    stores = open_stores(store_config)
    versions = []
    for m in range(1, 4):
        stage.cycle(T + m * MIN)
        versions.append(stores.pointers.get("us-en/top"))
    assert len(set(versions)) == 3  # every cycle published a new top page
    held = versions[1]
    flags = store_flags(store_config)
    args = [
        "control",
        "hold",
        "--edition",
        "us-en",
        "--section",
        "top",
        "--version",
        str(held),
        "--expires",
        "2h",
        "--reason",
        "bad ranking",
        "--who",
        "carol",
        *flags,
    ]
    assert newsroom(args) == 0, capsys.readouterr().err
    assert stores.pointers.get("us-en/top") == held  # the hold moved the pointer back to the held version
    for m in range(4, 9):
        _, results = stage.cycle(T + m * MIN)
        assert results["us-en/top"] == "held"
        assert results["pool/us-en"] in ("published", "unchanged")  # the rest of the edition still publishes
        assert stores.pointers.get("us-en/top") == held
    # the hold ends (its expiry, on the cycle clock): the next cycle publishes normally
    store = open_control_store(store_config)
    (hold,) = [c for c in store.edition_controls("us-en") if c.kind == "hold"]
    assert hold.who == "carol" and hold.why == "bad ranking" and hold.version == held
    store.set(ctl("hold", world, version=held, end=T + 10 * MIN))  # the same hold, ending on the cycle clock
    _, results = stage.cycle(T + 9 * MIN)
    assert results["us-en/top"] == "held"
    _, results = stage.cycle(T + 10 * MIN)
    assert results["us-en/top"] == "published" and stores.pointers.get("us-en/top") == (T + 10 * MIN) // MIN


def test_a_rollback_with_hold_survives_the_next_cycles(embedded_store_config, world, capsys):
    T, MIN = world.T0, world.MIN
    busy_world(world)
    stage = Stage(world, embedded_store_config)
    stores = open_stores(embedded_store_config)
    for m in range(1, 4):
        stage.cycle(T + m * MIN)
    live = stores.pointers.get("us-en/top")
    flags = store_flags(embedded_store_config)
    args = ["rollback", "--edition", "us-en", "--section", "top", "--hold", "2h", "--reason", "bad page", *flags]
    assert newsroom(args) == 0, capsys.readouterr().err
    back = stores.pointers.get("us-en/top")
    assert back < live
    for m in range(4, 8):
        _, results = stage.cycle(T + m * MIN)
        assert results["us-en/top"] == "held" and stores.pointers.get("us-en/top") == back
    from stores.audit import open_audit_log

    actions = [e["action"] for e in open_audit_log(embedded_store_config).entries("page:us-en/top")]
    assert actions == ["rollback", "control-hold"]


def test_the_publisher_puts_a_held_pointer_back_when_a_racing_cycle_moved_it(embedded_store_config, world):
    T, MIN = world.T0, world.MIN
    busy_world(world)
    stage = Stage(world, embedded_store_config)
    stores = open_stores(embedded_store_config)
    for m in range(1, 3):
        stage.cycle(T + m * MIN)
    held = stores.pointers.get("us-en/top")
    stage.cycle(T + 3 * MIN)  # published before the hold was seen
    assert stores.pointers.get("us-en/top") > held
    open_control_store(embedded_store_config).set(ctl("hold", world, version=held))
    _, results = stage.cycle(T + 4 * MIN)
    assert results["us-en/top"] == "held" and stores.pointers.get("us-en/top") == held
    assert stores.pointers.history("us-en/top")[-1]["reason"] == "hold"
