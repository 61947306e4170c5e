"""Beam transforms of the co-visitation stage: DecodeReadEvents -> CovisitNeighbours (pairs per reader, then the
bounded, decayed neighbour list per story, written to the CovisitStore).

The logic is transforms/covisit/counts.py (plain Python); this module only keys, keeps state and arms timers.

DecodeReadEventFn: ``(data, attributes)`` bus messages -> ReadEvent dicts; heartbeats dropped; undecodable
messages to the ``dead_letter`` output (counted).

ReaderPairsFn (keyed by reader_id)
- State ``READER``: the reader's :class:`~transforms.covisit.counts.ReaderState` (recent reads within the window,
  event ids seen, recent arrivals, pairs added in the last window of arrival, the abnormal-rate mark). The rate
  check and the per-reader pair cap go by arrival: the event's ``received_at`` (DecodeReadEventFn copies the
  origin's message attribute onto it), else the element timestamp (Pub/Sub publish time), else ``at``. Each event goes through :func:`~transforms.covisit.counts.reader_step`;
  its pair increments go out keyed by story (both directions). Counters: one per outcome (paired, duplicate,
  late, reread, abnormal, capped, not_a_read).
- Timer ``EXPIRE`` (event time): re-armed at each event to its timestamp + the window; when the watermark passes it
  no read of the reader is recent any more, so the state is cleared (a firing twice clears twice: harmless).

StoryNeighboursFn (keyed by story_id)
- State ``NEIGHBOURS``: the story's :class:`~transforms.covisit.counts.Neighbours` (decayed counts, bounded).
  ``NEXT``: the armed flush time, if any.
- Timer ``FLUSH`` (event time): armed ``flush_ms`` after the first increment since the last flush; when it fires
  the bounded list replaces the story's row in the store (one write per story per flush interval, whatever the
  read rate) and goes out as ``(story_id, [(neighbour, count)], at)``. Before it, the counts follow merges
  (transforms/covisit/survivors.py: absorbed neighbours renamed to their survivors, a survivor takes in the rows of
  the stories absorbed into it; an absorbed story not written yet is looked for at up to INHERIT_TRIES more
  flushes, a timer ``flush_ms`` apart). A write is the whole list, so a repeated
  firing or a retried bundle writes the same row again. Store errors are raised: the bundle is retried.

Runners: BundleBasedDirectRunner (streaming: Pub/Sub, TestStream) and FnApiRunner (bounded: the embedded bus;
timers fire when the input ends). Element timestamps are what the source gives (Pub/Sub publish time, TestStream's);
pairs and their decay use the events' own ``at``; who is abnormal and how often a reader adds a pair, the arrival.
"""

from __future__ import annotations

import functools
import typing

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer

from stores.beam_io import StoreDoFn
from transforms.common import DEAD_LETTER, SECOND_MS
from transforms.common import dead_letter as dead_letter_record
from transforms.covisit.counts import Increment, Neighbours, Params, ReaderState, reader_step
from transforms.covisit.survivors import follow_merges, hand_over, open_survivors
from transforms.timers import arm, at, to_ms

STAGE = "covisit"
OUTCOMES = ("paired", "duplicate", "late", "reread", "abnormal", "capped", "not_a_read")
ACCEPTED = ("paired", "capped")  # a new read of the story by a normal reader: a click of its user clusters
CLICKS = "clicks"
RECEIVED_AT = "received_at"  # message attribute: the origin's receive time (serving/personal/readers.py)
FLUSH_MS = 10 * SECOND_MS
INHERIT_TRIES = 3  # flushes of a survivor that look again for an absorbed story's row not written yet


def DecodeReadEventFn() -> beam.DoFn:  # noqa: N802 - reads as the DoFn it returns
    """(data, attributes) bus messages -> ReadEvent dicts; heartbeats dropped; undecodable ones dead-lettered."""
    from stores.beam_io import DecodeBusFn

    bad = functools.partial(dead_letter_record, STAGE, "undecodable_read_event")
    return DecodeBusFn("ReadEvent", STAGE, "read_events", bad, DEAD_LETTER, stamp=RECEIVED_AT)


def _arrival_ms(ts) -> int | None:
    """The element timestamp as the fallback arrival time (Pub/Sub publish time); None for the embedded bus's
    bounded read, whose elements all carry the Impulse's minimum timestamp."""
    from apache_beam.utils.timestamp import MIN_TIMESTAMP

    return None if ts is None or ts <= MIN_TIMESTAMP else to_ms(ts)


class ReaderPairsFn(beam.DoFn):
    """(reader_id, ReadEvent) -> (story_id, (neighbour, at, weight)) pair increments; see the module docstring."""

    READER = ReadModifyWriteStateSpec("reader", PickleCoder())
    EXPIRE = TimerSpec("expire", TimeDomain.WATERMARK)

    def __init__(self, params: Params, clicks: bool = False):
        self.params, self.clicks = params, clicks
        self.outcomes = {o: Metrics.counter(STAGE, f"events_{o}") for o in OUTCOMES}

    def process(
        self,
        element,
        ts=beam.DoFn.TimestampParam,
        reader=beam.DoFn.StateParam(READER),
        expire=beam.DoFn.TimerParam(EXPIRE),
    ):
        _, event = element
        state = reader.read() or ReaderState()
        increments, outcome = reader_step(state, event, self.params, arrived=_arrival_ms(ts))
        self.outcomes[outcome].inc()
        if outcome == "not_a_read":
            return
        reader.write(state)
        expire.set(at(to_ms(ts) + self.params.window_ms))
        if self.clicks and outcome in ACCEPTED:
            yield beam.pvalue.TaggedOutput(CLICKS, (str(event["reader_id"]), int(event["story_id"]), int(event["at"])))
        for inc in increments:
            yield inc.story, (inc.neighbour, inc.at, inc.weight)

    @on_timer(EXPIRE)
    def on_expire(self, reader=beam.DoFn.StateParam(READER)):
        reader.clear()


class StoryNeighboursFn(StoreDoFn):
    """(story_id, increment) -> store writes of the story's bounded list, yielded as (story_id, list, at)."""

    NEIGHBOURS = ReadModifyWriteStateSpec("neighbours", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    FLUSH = TimerSpec("flush", TimeDomain.WATERMARK)

    def __init__(self, store_config, params: Params, flush_ms: int = FLUSH_MS):
        super().__init__(store_config)
        self.params, self.flush_ms = params, int(flush_ms)
        self.increments = Metrics.counter(STAGE, "pair_increments")
        self.writes = Metrics.counter(STAGE, "neighbour_lists_written")

    def open_store(self):
        from stores.covisit import open_covisit_store

        return open_covisit_store(self.store_config)

    def setup(self):
        super().setup()
        self.survivors = open_survivors(self.store_config)

    def process(
        self,
        element,
        ts=beam.DoFn.TimestampParam,
        neighbours=beam.DoFn.StateParam(NEIGHBOURS),
        nxt=beam.DoFn.StateParam(NEXT),
        flush=beam.DoFn.TimerParam(FLUSH),
    ):
        story, (other, when, weight) = element
        n = neighbours.read() or Neighbours()
        n.add(Increment(int(story), int(other), int(when), float(weight)), self.params)
        neighbours.write(n)
        self.increments.inc()
        if nxt.read() is None:
            arm(flush, nxt, to_ms(ts) + self.flush_ms)

    @on_timer(FLUSH)
    def on_flush(
        self,
        key=beam.DoFn.KeyParam,
        ts=beam.DoFn.TimestampParam,
        neighbours=beam.DoFn.StateParam(NEIGHBOURS),
        nxt=beam.DoFn.StateParam(NEXT),
        flush=beam.DoFn.TimerParam(FLUSH),
    ):
        nxt.clear()
        n = neighbours.read()
        if n is None:
            return
        story = int(key)
        missing = follow_merges(n, story, self.survivors.get(), self.store, self.params)
        tries = getattr(n, "tries", 0)
        n.tries = tries + 1 if missing and tries < INHERIT_TRIES else 0
        if n.tries:  # an absorbed story's row is not written yet: look again a flush later
            arm(flush, nxt, to_ms(ts) + self.flush_ms)
        top = n.top(self.params)
        hand_over(n, story, self.survivors.get())
        neighbours.write(n)
        self.store.put(story, top, n.ref_at)
        self.writes.inc()
        yield story, top, n.ref_at


class CovisitNeighbours(beam.PTransform):
    """ReadEvent dicts -> ``(story_id, [(neighbour, count)], at)`` for every neighbour list written to the store.

    With ``clusters``, also the per-cluster click counts of the user clusters (transforms/userclusters/beam.py
    ClusterCountsOnline, same decay and flush), and the accepted reads appended to the click log the daily
    user-cluster job reads (LogClicksFn): the result is then ``{"written": ..., "clusters": ...}``."""

    def __init__(self, store_config, params: Params | None = None, flush_ms: int = FLUSH_MS, clusters: bool = False):
        super().__init__()
        self.store_config, self.params, self.flush_ms = store_config, params or Params(), flush_ms
        self.clusters = clusters

    def expand(self, events):
        keyed = events | "KeyByReader" >> beam.Map(lambda e: (str(e["reader_id"]), e)).with_output_types(
            tuple[str, typing.Any]
        )
        pairs_fn = ReaderPairsFn(self.params, clicks=self.clusters)
        if not self.clusters:
            pairs = keyed | "PairsPerReader" >> beam.ParDo(pairs_fn).with_output_types(tuple[int, typing.Any])
            return pairs | "NeighboursPerStory" >> beam.ParDo(
                StoryNeighboursFn(self.store_config, self.params, self.flush_ms)
            )
        from transforms.userclusters.beam import ClusterCountsOnline, LogClicksFn

        out = keyed | "PairsPerReader" >> beam.ParDo(pairs_fn).with_output_types(tuple[int, typing.Any]).with_outputs(
            CLICKS, main="pairs"
        )
        written = out.pairs | "NeighboursPerStory" >> beam.ParDo(
            StoryNeighboursFn(self.store_config, self.params, self.flush_ms)
        )
        clusters = out[CLICKS] | "ClusterCounts" >> ClusterCountsOnline(self.store_config, self.params, self.flush_ms)
        out[CLICKS] | "LogClicks" >> beam.ParDo(LogClicksFn(self.store_config))  # the daily job's months of clicks
        return {"written": written, "clusters": clusters}
