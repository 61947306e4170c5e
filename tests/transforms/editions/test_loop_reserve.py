"""The per-story loop reference keeps the per-city local reserve as the vectorised cycle does (scoring.py
local_reserve): a world larger than the national pool, so the reserve adds stories. The equivalence test in
test_book.py ranks 150 stories against a pool of 1,000, where the reserve is always empty: it could not see the
loop missing the rule."""

from dataclasses import replace

from tests.transforms.editions.loop_reference import LoopMemory, run_cycle_loop
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle.context import CycleCache, CycleContext
from transforms.editions.cycle.run import EditionMemory, run_cycle
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry


def test_the_loop_reference_keeps_the_local_reserve_as_the_vectorised_cycle_does(world):
    T, HOUR = world.T0, world.HOUR
    world.randomise(seed=3, stories=40, start=T - 6 * HOUR, end=T)
    config, registry = load_config(), default_registry()
    p = replace(RankParams.from_config(config), pool_size=8, local_candidates=2)
    events = sorted((compact_change(c) for c in world.changes), key=event_sort_key)
    ed = config.edition("us-en")
    outs = {}
    for mode, cycle, memory in (("vector", run_cycle, EditionMemory()), ("loop", run_cycle_loop, LoopMemory())):
        book = StoryBook(config, registry, "en")
        for e in events:
            if e["at"] < T:
                book.apply(e)
        outs[mode] = cycle(CycleContext(book, ed, config, p, memory, T, cache=CycleCache()))
    pools = {m: [s["story_id"] for s in out.pool["stories"]] for m, out in outs.items()}
    assert len(pools["vector"]) > p.pool_size  # the reserve added stories local to the region or Springfield
    assert pools["loop"] == pools["vector"]
    for sec in ed.sections:
        v, lp = outs["vector"].pages[sec]["stories"], outs["loop"].pages[sec]["stories"]
        assert [s["story_id"] for s in lp] == [s["story_id"] for s in v], sec
