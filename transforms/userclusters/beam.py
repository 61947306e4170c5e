"""Beam stages of the user clusters (the logic is transforms/userclusters/minhash.py; this module keys and writes).

add_daily_clusters (the batch user-cluster job, pipelines/userclusters.py):

    Start -> KeyRanges (the click log cut into ~``splits`` reader-id ranges, UserClusterStore.click_splits)
          -> SpreadRanges (Reshuffle: each range to any worker) -> ReadRanges (per range: the logged clicks of the
          lookback, kept 180 days, with the profiles' recent reads, paused readers left out) -> SpreadReaders
          -> ClustersOfReader (q MinHash cluster ids) -> MembersPerCluster (GroupByKey) -> KeepLargeClusters
          -> with every scanned reader (an empty list too) -> ClustersPerReader (GroupByKey) -> WriteMemberships

  Every scanned reader is written, an empty list included (deleting yesterday's row), so a reader whose clusters
  all fell under ``min_members`` is not left in yesterday's. Readers no longer scanned (profile deleted: the origin
  deletes the row then; every read aged out) keep no membership past MEMBERSHIP_MAX_AGE_MS. A write replaces the
  reader's row, so a retried bundle writes the same row again. Counters: readers, clustered, written.

ClusterCountsOnline (in the co-visitation job, transforms/covisit/beam.py's accepted reads):

- ClusterClicksFn: (reader_id, story_id, at) of every read the co-visitation reader check accepted -> one
  (cluster_id, (story_id, at)) per cluster of the reader (the membership, cached per reader for ``member_ttl_s``,
  600 s: memberships change once a day). A reader without clusters emits nothing.
- ClusterCountsFn (keyed by cluster): state ``COUNTS`` (:class:`ClusterCounts`) and ``NEXT``; timer ``FLUSH``
  (event time, ``flush_ms`` after the first click since the last write) replaces the cluster's row in the store
  (one write per cluster per flush interval), as StoryNeighboursFn writes a story's neighbours; a merged-away
  story's clicks are moved to its survivor first (transforms/covisit/survivors.py).
"""

from __future__ import annotations

import heapq
import time
import typing
from collections import OrderedDict

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer

from stores.beam_io import StoreDoFn
from transforms.covisit.counts import Params as CovisitParams
from transforms.covisit.survivors import follow_merges, open_survivors
from transforms.timers import arm, to_ms
from transforms.userclusters.minhash import ClusterCounts, Params, clusters_of

STAGE = "userclusters"
SPLITS = 64  # reader-id ranges the daily job reads in parallel (fewer when the click log is small)


class UserClusterStoreFn(StoreDoFn):
    """A DoFn holding a user-cluster store client (stores/userclusters.py)."""

    def open_store(self):
        from stores.userclusters import open_user_cluster_store

        return open_user_cluster_store(self.store_config)


class KeyRangesFn(UserClusterStoreFn):
    """``n`` -> the reader-id ranges ``(start, end)`` (None: open) the click log is cut into
    (``UserClusterStore.click_splits``: about equal parts, at most ``n``), read on a worker when the job runs.
    Counter: ranges (how many it cut; Bigtable's come from its sampled tablet boundaries, so a small table is one)."""

    def __init__(self, store_config):
        super().__init__(store_config)
        self.cut = Metrics.counter(STAGE, "ranges")

    def process(self, n):
        bounds = [None, *self.store.click_splits(int(n)), None]
        self.cut.inc(len(bounds) - 1)
        yield from zip(bounds, bounds[1:])


def _merged(*scans):
    """``(reader, stories)`` scans in reader-id order -> one per reader, its stories from every scan."""
    reader, stories = None, []
    for rid, more in heapq.merge(*scans, key=lambda rs: rs[0]):
        if rid != reader:
            if stories:
                yield reader, stories
            reader, stories = rid, []
        stories.extend(more)
    if stories:
        yield reader, stories


class ReadRangeFn(UserClusterStoreFn):
    """``(start, end)`` -> ``(reader_id, [story_id])`` of every reader in the range: the click log's clicks since
    ``since_ms`` with the profile's recent reads (the only history before the click log was kept), paused readers
    left out, and the click log of a reader who deleted the profile or the history since ``since_ms`` too. Counters: ranges_read, readers."""

    def __init__(self, store_config, since_ms: int):
        super().__init__(store_config)
        self.since_ms = int(since_ms)
        self.ranges = Metrics.counter(STAGE, "ranges_read")
        self.readers = Metrics.counter(STAGE, "readers")

    def setup(self):
        super().setup()
        from stores.profiles import open_profile_store

        self.profiles = open_profile_store(self.store_config)

    def teardown(self):
        super().teardown()
        if getattr(self, "profiles", None) is not None:
            self.profiles.close()

    def process(self, key_range):
        start, end = key_range
        paused = self.profiles.paused_readers(start, end)
        # A reader who deleted the profile or the history since ``since_ms``: the click log may hold clicks from
        # before the delete (the co-visitation job appends what the origin published just before it, after the
        # delete emptied the log), so only the profile's own reads count, which the profile store checked against
        # the delete (stores/profile_versions.py). A delete before ``since_ms`` left only clicks that are too old.
        erased = self.profiles.erased_readers(start, end, self.since_ms)
        clicks = ((r, s) for r, s in self.store.scan_clicks(self.since_ms, start, end) if r not in erased)
        for reader, stories in _merged(clicks, self.profiles.scan_reads(self.since_ms, start, end)):
            if reader not in paused:
                self.readers.inc()
                yield reader, stories
        self.ranges.inc()


class LogClicksFn(UserClusterStoreFn):
    """(reader_id, story_id, at) accepted reads -> appended to the click log, a bundle's at once (or every
    ``batch``)."""

    def __init__(self, store_config, batch: int = 500):
        super().__init__(store_config)
        self.batch = int(batch)
        self.logged = Metrics.counter(STAGE, "clicks_logged")

    def start_bundle(self):
        self.pending = []

    def process(self, element):
        self.pending.append(element)
        if len(self.pending) >= self.batch:
            self._flush()

    def finish_bundle(self):
        self._flush()

    def _flush(self):
        if self.pending:
            self.store.log_clicks(self.pending)
            self.logged.inc(len(self.pending))
            self.pending = []


class WriteMembershipsFn(UserClusterStoreFn):
    """(reader_id, [cluster ids, None...]) -> the reader's row replaced; yields (reader_id, clusters)."""

    def __init__(self, store_config, at_ms: int):
        super().__init__(store_config)
        self.at_ms = int(at_ms)
        self.written = Metrics.counter(STAGE, "memberships_written")
        self.clustered = Metrics.counter(STAGE, "readers_clustered")

    def process(self, element):
        reader, values = element
        clusters = sorted({int(c) for c in values if c is not None})
        self.store.put_membership(reader, clusters, self.at_ms)
        self.written.inc()
        if clusters:
            self.clustered.inc()
        yield reader, clusters


def _keep_large(element, min_members: int):
    cluster, readers = element
    readers = list(readers)
    if len(readers) >= min_members:
        for r in readers:
            yield r, cluster


def add_daily_clusters(p, store_config, params: Params, at_ms: int, splits: int = SPLITS):
    """Adds the daily job's stages to pipeline ``p`` (top-level steps, as the job's graph shows them); returns the
    ``(reader_id, clusters)`` of every scanned reader, written to the user-cluster store."""
    readers = (
        p
        | "Start" >> beam.Create([splits])
        | "KeyRanges" >> beam.ParDo(KeyRangesFn(store_config))
        | "SpreadRanges" >> beam.Reshuffle()
        | "ReadRanges" >> beam.ParDo(ReadRangeFn(store_config, int(at_ms) - params.lookback_ms))
        | "SpreadReaders" >> beam.Reshuffle()
        | "ClustersOfReader" >> beam.Map(lambda rs: (rs[0], clusters_of(rs[1], params)))
    )
    kept = (
        readers
        | "ByCluster" >> beam.FlatMap(lambda rc: ((c, rc[0]) for c in rc[1])).with_output_types(tuple[int, str])
        | "MembersPerCluster" >> beam.GroupByKey()
        | "KeepLargeClusters" >> beam.FlatMap(_keep_large, params.min_members)
    )
    everyone = readers | "EveryReader" >> beam.Map(lambda rc: (rc[0], None))
    return (
        (kept, everyone)
        | "Together" >> beam.Flatten()
        | "ClustersPerReader" >> beam.GroupByKey()
        | "WriteMemberships" >> beam.ParDo(WriteMembershipsFn(store_config, at_ms))
    )


class ClusterClicksFn(UserClusterStoreFn):
    """(reader_id, story_id, at) -> (cluster_id, (story_id, at)) for each of the reader's clusters."""

    def __init__(self, store_config, member_ttl_s: float = 600.0, max_readers: int = 100_000):
        super().__init__(store_config)
        self.ttl_s, self.max_readers = float(member_ttl_s), int(max_readers)
        self.clicks = Metrics.counter(STAGE, "cluster_clicks")

    def setup(self):
        super().setup()
        self.cache: OrderedDict[str, tuple[float, list[int]]] = OrderedDict()

    def _clusters(self, reader: str) -> list[int]:
        now = time.monotonic()
        hit = self.cache.get(reader)
        if hit is not None and hit[0] > now:
            return hit[1]
        clusters = self.store.membership(reader, int(time.time() * 1000))
        self.cache[reader] = (now + self.ttl_s, clusters)
        self.cache.move_to_end(reader)
        while len(self.cache) > self.max_readers:
            self.cache.popitem(last=False)
        return clusters

    def process(self, element):
        reader, story, at = element
        for c in self._clusters(str(reader)):
            self.clicks.inc()
            yield int(c), (int(story), int(at))


class ClusterCountsFn(UserClusterStoreFn):
    """(cluster_id, (story_id, at)) -> the cluster's counts written every ``flush_ms``; yields (cluster, list,
    total, at) per write."""

    COUNTS = ReadModifyWriteStateSpec("counts", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    FLUSH = TimerSpec("flush", TimeDomain.WATERMARK)

    def __init__(self, store_config, params: CovisitParams, flush_ms: int):
        super().__init__(store_config)
        self.params, self.flush_ms = params, int(flush_ms)
        self.writes = Metrics.counter(STAGE, "cluster_counts_written")

    def setup(self):
        super().setup()
        self.survivors = open_survivors(self.store_config)

    def process(
        self,
        element,
        ts=beam.DoFn.TimestampParam,
        counts=beam.DoFn.StateParam(COUNTS),
        nxt=beam.DoFn.StateParam(NEXT),
        flush=beam.DoFn.TimerParam(FLUSH),
    ):
        _, (story, at) = element
        c = counts.read() or ClusterCounts()
        c.click(story, at, self.params)
        counts.write(c)
        if nxt.read() is None:
            arm(flush, nxt, to_ms(ts) + self.flush_ms)

    @on_timer(FLUSH)
    def on_flush(self, key=beam.DoFn.KeyParam, counts=beam.DoFn.StateParam(COUNTS), nxt=beam.DoFn.StateParam(NEXT)):
        nxt.clear()
        c = counts.read()
        if c is None:
            return
        follow_merges(c, None, self.survivors.get(), None, self.params)  # a merged-away story's clicks: its survivor's
        top = c.top(self.params)
        counts.write(c)
        self.store.put_counts(int(key), top, round(c.total, 6), c.ref_at)
        self.writes.inc()
        yield int(key), top, round(c.total, 6), c.ref_at


class ClusterCountsOnline(beam.PTransform):
    """(reader_id, story_id, at) accepted reads -> ``(cluster_id, [(story, count)], total, at)`` per write."""

    def __init__(self, store_config, params: CovisitParams, flush_ms: int):
        super().__init__()
        self.store_config, self.params, self.flush_ms = store_config, params, int(flush_ms)

    def expand(self, clicks):
        # The Reshuffle ends the fused stage of the reader check: on FnApiRunner (the embedded bounded run), when
        # one fused stage feeds two stateful DoFns with event-time timers (the story neighbours and these counts),
        # only one of them saw its timers fire at the end of input (Beam 2.77, reproduced here); on Dataflow the
        # re-key to clusters shuffles anyway.
        return (
            clicks
            | "SpreadClicks" >> beam.Reshuffle()
            | "ClicksPerCluster"
            >> beam.ParDo(ClusterClicksFn(self.store_config)).with_output_types(tuple[int, typing.Any])
            | "CountsPerCluster" >> beam.ParDo(ClusterCountsFn(self.store_config, self.params, self.flush_ms))
        )
