"""Publishing in Beam: every snapshot item validated, stored and pointed to (:class:`PublishSnapshots`, the plain
:class:`~transforms.editions.publish.SnapshotPublisher`), and the merged-story aliases map (:class:`TrackAliases`,
one key, one map a minute with a new merge)."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV

from stores import StoreConfig, open_stores
from stores.controls import open_control_store
from transforms.common import MINUTE_MS
from transforms.editions.beam.counters import Counters
from transforms.editions.breaking import BREAKING, candidates, hot_candidate
from transforms.editions.publish import SnapshotPublisher, aliases_item, is_merge, merge_event
from transforms.timers import arm, arm_earliest, rearm_pending, to_ms


class PublishSnapshotFn(beam.DoFn):
    """Validate -> put -> compare-and-set, one snapshot item at a time (:class:`~transforms.editions.publish.SnapshotPublisher`)."""

    def __init__(self, store_config: StoreConfig, confirm_shrink_cycles: int = 15):
        self.store_config = store_config
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def setup(self):
        self.stores = open_stores(self.store_config)
        self.publisher = SnapshotPublisher(
            self.stores,
            self.confirm_shrink_cycles,
            Counters("snapshots"),
            controls=open_control_store(self.store_config),
        )

    def process(self, item):
        result = self.publisher.publish(item)
        yield result
        # Breaking stories of a page just published, and a top page's hottest stories (tag "breaking")
        for kv in candidates(item, result) + hot_candidate(item, result):
            yield beam.pvalue.TaggedOutput(BREAKING, kv)

    def finish_bundle(self):
        self.publisher.maybe_retire()  # story pointers of long-expired stories (stores/retention.py)


class PublishSnapshots(beam.PTransform):
    """Snapshot items -> stored objects and moved pointers: ``.results`` (one per item) and ``["breaking"]``
    (``(edition, candidate)`` of :func:`~transforms.editions.breaking.candidates` and :func:`~transforms.editions.breaking.hot_candidate`).

    Args:
        store_config: where the snapshot and pointer stores live (the job passes ``store_config(options)``).
        confirm_shrink_cycles: cycles a > 50 % shrink must persist before it is published.
    """

    def __init__(self, store_config: StoreConfig, confirm_shrink_cycles: int = 15):
        super().__init__()
        self.store_config = store_config
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def expand(self, items):
        fn = PublishSnapshotFn(self.store_config, self.confirm_shrink_cycles)
        return items | "ValidateStoreAndPoint" >> beam.ParDo(fn).with_outputs(BREAKING, main="results")


class TrackAliasesFn(beam.DoFn):
    """Single key: every MERGE; at the minute boundary after a new merge, emit the whole aliases map.

    State: MERGES (bag of merge events), NEXT (cycle the timer is set for), LAST (last cycle ranked),
    EMITTED (how many merges the last emitted map held). Timer: CYCLE (event time).
    """

    MERGES = BagStateSpec("merges", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    LAST = ReadModifyWriteStateSpec("last", VarIntCoder())
    EMITTED = ReadModifyWriteStateSpec("emitted", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def process(
        self,
        element,
        merges=beam.DoFn.StateParam(MERGES),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, m = element
        merges.add(m)
        arm_earliest(timer, nxt, max((int(m["at"]) // MINUTE_MS + 1) * MINUTE_MS, (last.read() or 0) + MINUTE_MS))

    @on_timer(CYCLE)
    def on_cycle(
        self,
        ts=beam.DoFn.TimestampParam,
        merges=beam.DoFn.StateParam(MERGES),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        emitted=beam.DoFn.StateParam(EMITTED),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        if now <= (last.read() or 0):  # a timer that fires twice: keep the one set for the next merge
            rearm_pending(timer, nxt, now)
            return
        item, n_emitted, future = aliases_item(merges.read(), now, emitted.read() or 0)
        if item is not None:
            yield item
            emitted.write(n_emitted)
        last.write(now)
        arm(timer, nxt, (min(m["at"] for m in future) // MINUTE_MS + 1) * MINUTE_MS if future else None)


class TrackAliases(beam.PTransform):
    """StoryChange records -> aliases snapshot items (one per minute with a new merge)."""

    def expand(self, changes):
        return (
            changes
            | "KeepMerges" >> beam.Filter(is_merge)
            | "KeyMergesTogether"
            >> beam.Map(
                lambda c: window.TimestampedValue(("aliases", merge_event(c)), c["at"] / 1000.0)
            ).with_output_types(KV[str, Any])
            | "MergesToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
            | "EmitAliasesMap" >> beam.ParDo(TrackAliasesFn())
        )
