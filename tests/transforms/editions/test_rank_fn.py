"""RankEditionsFn driven directly with fake state and timers: a restarted worker (empty cache) ranks exactly like
the uninterrupted one, a timer firing twice neither ranks twice nor breaks the minute chain, events for a later
minute wait, malformed changes are dead-lettered."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.utils.timestamp import Timestamp

from tests.transforms.fakes import Bag, Timer, Value
from transforms.common import DEAD_LETTER
from transforms.editions.beam.ranking import RankEditionsFn, RouteChangeFn
from transforms.editions.book.storybook import compact_change
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.settings import RankSettings


class State:
    def __init__(self):
        self.inbox, self.log, self.memory, self.chain, self.timer = Bag(), Bag(), Value(), Value(), Timer()


def new_fn():
    fn = RankEditionsFn(RankSettings(editions_only=["us-en"], overrides={"idle_cycles": 5}))
    fn.setup()
    return fn


def feed(fn, st, event):
    fn.process(("us-en", event), inbox=st.inbox, chain=st.chain, memory=st.memory, timer=st.timer)


def fire(fn, st, at_ms):
    st.timer.at = None  # the runner deletes a timer when it fires
    return list(
        fn.on_cycle(
            key="us-en",
            ts=Timestamp(micros=at_ms * 1000),
            inbox=st.inbox,
            event_log=st.log,
            memory=st.memory,
            chain=st.chain,
            timer=st.timer,
        )
    )


def tops(items):
    return [
        [(s["story_id"], s["representative"]["article_id"], s["score"]) for s in it["doc"]["stories"]]
        for it in items
        if it["pointer"] == "us-en/top"
    ]


def run(world, restart_at=None, duplicate_at=None):
    MIN = world.MIN
    events = sorted((compact_change(c) for c in world.changes), key=lambda e: e["at"])
    st, fn = State(), new_fn()
    by_minute = {}
    for e in events:
        by_minute.setdefault(e["at"] // MIN, []).append(e)
    out, minute = [], min(by_minute)
    while True:
        for e in by_minute.get(minute, []):
            feed(fn, st, e)
        boundary = (minute + 1) * MIN
        if restart_at is not None and boundary == restart_at:
            fn = new_fn()  # a new worker: same durable state, empty cache
        while st.timer.at is not None and st.timer.at <= boundary:
            t = st.timer.at
            items = fire(fn, st, t)
            out.append((t, tops(items)))
            if duplicate_at is not None and t == duplicate_at:
                assert fire(fn, st, t) == []  # the second firing ranks nothing...
                assert st.timer.at == t + MIN  # ...and re-arms the next cycle
        minute += 1
        if minute > max(by_minute) and st.timer.at is None:
            return out, st


def test_a_restarted_worker_ranks_like_the_uninterrupted_one(world):
    T, MIN = world.T0, world.MIN
    world.randomise(seed=4, stories=40, start=T - 20 * MIN, end=T + 10 * MIN)
    world.merge(sorted(world.centroids)[0], sorted(world.centroids)[1], T + 15 * MIN)
    straight, st = run(world)
    restarted, _ = run(world, restart_at=T + 20 * MIN, duplicate_at=T + 25 * MIN)
    assert len(straight) > 30
    assert restarted == straight
    cycles = [t for t, _ in straight]
    assert cycles == list(range(cycles[0], cycles[-1] + MIN, MIN))  # one cycle per minute, no gaps
    assert len(st.log.items) == len(world.changes)  # every change folded once into the log


def test_events_for_a_later_minute_wait_for_their_cycle(world):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "capital-post"], T)
    world.story(2, ["pacific-times"], T + 5 * MIN)  # arrives early (before the 12:01 cycle) but is for 12:05
    st, fn = State(), new_fn()
    for c in world.changes:
        feed(fn, st, compact_change(c))
    assert st.timer.at == T + MIN
    first = tops(fire(fn, st, T + MIN))[0]
    assert [s for s, _, _ in first] == ["1"]
    for m in range(2, 7):
        page = tops(fire(fn, st, T + m * MIN))[0]
    assert "2" in [s for s, _, _ in page]


def test_malformed_changes_are_dead_lettered(world):
    T = world.T0
    good = world.story(1, ["daily-herald"], T)[0]
    bad = dict(good, change_id="broken")
    del bad["language"]
    fn = RouteChangeFn(load_config())
    out = list(fn.process(bad)) + list(fn.process(good))
    dead = [o.value for o in out if isinstance(o, beam.pvalue.TaggedOutput) and o.tag == DEAD_LETTER]
    routed = [o for o in out if not isinstance(o, beam.pvalue.TaggedOutput)]
    assert len(dead) == 1 and dead[0]["reason"] == "malformed_change" and dead[0]["key"] == "broken"
    from schemas import codec

    codec.check("DeadLetter", dead[0])
    assert len(routed) == len(load_config().editions_for_language("en"))


def test_the_hourly_log_compaction_drops_dead_stories_and_ranks_the_same(world, make_ranker):
    T, MIN = world.T0, world.MIN  # T is 12:00: the compaction runs at that cycle
    for s in range(30):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - 50 * MIN + s * 10_000)
    for s in range(25):
        world.expire(s + 1, T - 30 * MIN)
    for m in range(-28, 12, 3):  # the five live stories keep growing across the hour
        world.add(26 + (m % 5), world.article(f"later-{m}", T + m * MIN))
    out, st = run(world)
    assert len(st.log.items) < len(world.changes) // 2  # dead stories' changes left the log at 12:00
    ref = make_ranker(world, "us-en", idle_cycles=5)
    for t, pages in out:
        expected = [
            (s["story_id"], s["representative"]["article_id"], s["score"]) for s in ref.cycle(t).pages["top"]["stories"]
        ]
        assert pages == [expected], t
    assert any(t > T for t, _ in out)


def coverage(items, story_id: str) -> list[tuple[int, list]]:
    return [
        (it["version"], list(it["doc"]["links"]))
        for it in items
        if it["kind"] == "story_coverage" and it["doc"]["story_id"] == story_id
    ]


def test_a_link_that_arrives_after_its_minute_was_ranked_republishes_the_story_page(world):
    """The linker's LINK comes one timer hop after the writer's changes; its ``at`` (the link tick) can fall in the
    minute of the story's latest article, which the ranker may already have ranked. Folded late, it must still
    reach the story page: with a version above the one already published (the publisher keeps a pointer's
    versions increasing), and the same after a restart rebuilds the book from the log."""
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T + 10_000)
    link = world.link(1, 77, T + 30_000)  # the link tick: the same minute as the article
    st, fn = State(), new_fn()
    feed(fn, st, compact_change(world.changes[0]))
    first = coverage(fire(fn, st, T + MIN), "1")
    assert first and first[-1][1] == []
    feed(fn, st, compact_change(link))  # late: its minute was ranked
    linked = coverage(fire(fn, st, T + 2 * MIN), "1")
    assert linked and linked[-1][1] == ["77"] and linked[-1][0] > first[-1][0]
    fn = new_fn()  # a restarted worker rebuilds the book from the log: nothing new to publish, the same version
    assert coverage(fire(fn, st, T + 3 * MIN), "1") == []
    world2 = type(world)()
    world2.story(1, ["daily-herald"], T + 10_000)
    world2.link(1, 77, T + 30_000)
    st2, fn2 = State(), new_fn()
    for c in world2.changes:  # on time (a backfill): one version, with the link
        feed(fn2, st2, compact_change(c))
    on_time = coverage(fire(fn2, st2, T + MIN), "1")
    assert on_time[-1][1] == ["77"]


def test_a_replay_routes_links_and_storyline_changes_to_the_editions_of_the_inputs_languages(world):
    """LINK and a storyline's MERGE go to every edition, unless a replay names the input's story languages: then
    only to theirs (an edition of another language never holds a story). A story change is routed alike."""
    from transforms.editions.beam.ranking import story_languages

    T = world.T0
    first = world.story(1, ["daily-herald"], T)[0]
    link = dict(world.link(1, 60, T + 1000), language="mul")
    merge = {"change_id": "sl-m", "kind": "MERGE", "seq": 3, "at": T + 2000, "storyline_id": 5, "other_storyline_id": 6}
    config = load_config()
    fn = RouteChangeFn(config)
    english = {e.id for e in config.editions_for_language("en")}
    assert story_languages(first) == ["en"] and story_languages(link) == [] and story_languages(merge) == []
    for change in (link, merge):
        assert {kv.value[0] for kv in fn.process(change)} == {e.id for e in config.editions}
        assert {kv.value[0] for kv in fn.process(change, languages=["en"])} == english
    assert {kv.value[0] for kv in fn.process(first, languages=["en"])} == english
    assert list(fn.process(link, languages=[])) == []
