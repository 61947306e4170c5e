"""Beam reads and writes of the message bus (where a job's graph meets Pub/Sub or the embedded bus), and the result
files of batch jobs.

Only stores/ may use Beam's Pub/Sub connector (tests/test_boundaries.py), so jobs build their bus reads here.

- :class:`ReadBus` -- the messages of a subscription as ``(data: bytes, attributes: dict)``.
  Pub/Sub (``config.bus_kind == "pubsub"``: the gcp backend, or ``--bus=pubsub`` with the embedded tables):
  ``ReadFromPubSub`` on ``projects/{project}/subscriptions/{config.name(subscription)}`` (the naming of
  :class:`stores.gcp.PubSubBus`), an unbounded source: run it streaming (Dataflow, or BundleBasedDirectRunner with
  the emulator; LOCAL_STACK.md: a 30 s pull timeout, the watermark follows the wall clock, keep a heartbeat
  publisher and filter it out, stop with ``result.cancel()``).
  The embedded bus: the subscription's backlog at the time the pipeline runs, drained once (a bounded read;
  Beam's Python direct runner cannot host another live source). Messages are acknowledged after they are read:
  local runs trade at-least-once for simplicity, and every consumer is idempotent anyway.
- :class:`DecodeBusFn` -- ``(data, attributes)`` -> records of one message type; heartbeats dropped; an undecodable
  message goes to the caller's dead-letter output, built by the caller's builder (the stories and covisit jobs).
- :func:`write_text`, :func:`write_lines` -- result files of batch jobs, locally or on any Beam filesystem
  (``gs://`` on Dataflow).
- :class:`StoreDoFn` -- the base of a DoFn that holds one store client: opened in ``setup()``, closed in
  ``teardown()``.
- :class:`ReadLatestArticles` -- the latest version of every article of an article store (embedded or Bigtable),
  read by key ranges in parallel (``newsroom backfill --from_store``).
- :class:`CheckRunClaimFn` -- the run-claim fence of stores/runs.py inside a graph (before a job's writes).
- :class:`PublishToBusFn` -- the one publishing DoFn: records of a topic's message type, validated and
  Avro-encoded, published a bundle at a time (``MessageBus.publish_many``), every message out before the bundle
  commits; an optional per-record ordering key. One store client per DoFn instance, created in ``setup()``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas import codec
from stores import StoreConfig, open_store
from stores.base import message_type
from stores.runs import RunClaim

HEARTBEAT_ATTRIBUTE = "heartbeat"  # messages carrying it keep a test's Pub/Sub watermark moving; drop them


class _DrainBusFn(beam.DoFn):
    def __init__(self, config: StoreConfig, subscription: str, batch: int):
        self.config, self.subscription, self.batch = config, subscription, batch
        self.read = Metrics.counter("bus", "messages_read")

    def setup(self):
        self.bus = open_store("bus", self.config)

    def process(self, _):
        while True:
            msgs = self.bus.pull(self.subscription, max_messages=self.batch, timeout=0.2)
            if not msgs:
                return
            for m in msgs:
                self.read.inc()
                yield (bytes(m.data), dict(m.attributes or {}))
            self.bus.ack(self.subscription, [m.ack_id for m in msgs])


class DecodeBusFn(beam.DoFn):
    """``(data, attributes)`` -> the decoded ``message`` record; heartbeats dropped (counted); an undecodable message
    is counted and goes to output ``bad_tag`` as ``dead_letter(detail, payload=data, at_ms=now)``.

    Args: ``namespace`` and ``counter`` name the metrics (``{counter}``, ``{counter}_undecodable``, ``heartbeats``);
    ``dead_letter`` is the caller's record builder (a picklable callable, e.g. a ``functools.partial`` of
    ``transforms.common.dead_letter`` with the stage and reason); ``clock`` (ms) for tests; ``stamp``: the name of
    an integer attribute copied onto the decoded record when the message carries it (the covisit job's
    ``received_at``, the origin's receive time: attributes are outside the Avro contract, so the wire format stays).
    """

    def __init__(
        self,
        message: str,
        namespace: str,
        counter: str,
        dead_letter: Callable,
        bad_tag: str,
        clock=None,
        stamp: str | None = None,
    ):
        self.message = message
        self.stamp = stamp
        self.dead_letter = dead_letter
        self.bad_tag = bad_tag
        self.clock = clock
        self.decoded = Metrics.counter(namespace, counter)
        self.heartbeats = Metrics.counter(namespace, "heartbeats")
        self.bad = Metrics.counter(namespace, f"{counter}_undecodable")

    def process(self, message):
        data, attributes = message
        if HEARTBEAT_ATTRIBUTE in (attributes or {}):
            self.heartbeats.inc()
            return
        try:
            record = codec.decode(self.message, data)
        except codec.CodecError as exc:
            self.bad.inc()
            now = self.clock() if self.clock else int(time.time() * 1000)
            yield beam.pvalue.TaggedOutput(self.bad_tag, self.dead_letter(str(exc), payload=bytes(data), at_ms=now))
            return
        self.decoded.inc()
        value = (attributes or {}).get(self.stamp) if self.stamp else None
        if value is not None and str(value).isdigit():
            record[self.stamp] = int(value)
        yield record


class ReadBus(beam.PTransform):
    """Messages of ``subscription`` (on ``topic``) as ``(data, attributes)`` pairs; see the module docstring.

    Args:
        config: the stores (backend, project, namespace).
        topic / subscription: base names (the namespace prefix is added).
    """

    def __init__(self, config: StoreConfig, topic: str, subscription: str, batch: int = 500):
        super().__init__()
        self.config, self.topic, self.subscription, self.batch = config, topic, subscription, batch

    def expand(self, pbegin):
        # A pure graph: nothing is contacted here (templates and --dry_run translate offline). Local runs create
        # the subscription with ensure_subscription() first; in production Terraform provisions it.
        if self.config.bus_kind == "pubsub":
            path = f"projects/{self.config.gcp_project}/subscriptions/{self.config.name(self.subscription)}"
            return (
                pbegin
                | "ReadFromPubSub" >> beam.io.ReadFromPubSub(subscription=path, with_attributes=True)
                | "MessageToPair" >> beam.Map(lambda m: (bytes(m.data), dict(m.attributes or {})))
            )
        return (
            pbegin
            | "Start" >> beam.Impulse()
            | "DrainEmbeddedBus" >> beam.ParDo(_DrainBusFn(self.config, self.subscription, self.batch))
            | "Spread" >> beam.Reshuffle()
        )


def ensure_subscription(config: StoreConfig, topic: str, subscription: str) -> None:
    """Create the subscription (and topic) if missing: for local runs, before the pipeline starts."""
    open_store("bus", config).ensure_subscription(topic, subscription)


class PublishToBusFn(beam.DoFn):
    """Publishes records (dicts of the topic's message type) to ``topic`` (base name), a bundle at a time.

    The one bus-publishing DoFn of every job. Records are validated and encoded as they come (``message``: the Avro
    type, by default the topic's, as ``MessageBus.publish_record`` picks it), with the ``ordering_key`` attribute
    when ``ordering_key(record)`` returns one (RawItems: a per-URL key, so an older fetch never
    overtakes a newer one). The buffered batch is handed to
    the bus's ``publish_many`` (Pub/Sub: every message queued in the client, which packs them into few requests,
    then every future awaited; embedded: one transaction); a bus without one gets one ``publish`` per record, all
    done before the flush returns. A batch is flushed early at ``max_records`` records or ``max_bytes`` bytes (raw
    items carry page bodies), and at the latest in ``finish_bundle``, before the runner commits the bundle: a
    failed publish fails the bundle, which is retried (at least once; consumers are idempotent).

    Why batches: one ``publish`` per record waited on each message's future in turn, one round trip per message.
    Yields nothing. Metrics (namespace ``bus``): ``published_<topic>`` (messages), ``batches_<topic>`` (flushes).
    """

    def __init__(
        self,
        config: StoreConfig,
        topic: str,
        message: str | None = None,
        ordering_key: Callable[[dict], str | None] | None = None,
        max_records: int = 500,
        max_bytes: int = 8 * 1024 * 1024,
    ):
        self.config, self.topic, self.ordering_key = config, topic, ordering_key
        self.message = message or message_type(topic)
        self.max_records, self.max_bytes = max_records, max_bytes
        self.published = Metrics.counter("bus", f"published_{topic}")
        self.batches = Metrics.counter("bus", f"batches_{topic}")

    _ensured: set = set()  # (bus kind, publisher client, topic path) ensured by this process

    def setup(self):
        # The local runner (BundleBasedDirectRunner) calls setup() for every bundle: a topic is looked up once per
        # process and client (the clients are process-wide, stores/gcp/clients.py), not once a bundle.
        self.bus = open_store("bus", self.config)
        topic_path = getattr(self.bus, "topic_path", None)
        if topic_path is None:
            self.bus.ensure_topic(self.topic)
            return
        key = (type(self.bus).__name__, id(getattr(self.bus, "publisher", None)), topic_path(self.topic))
        if key not in PublishToBusFn._ensured:
            self.bus.ensure_topic(self.topic)
            PublishToBusFn._ensured.add(key)

    def start_bundle(self):
        self._batch: list[tuple[bytes, dict]] = []
        self._bytes = 0

    def process(self, record):
        data = codec.encode(self.message, record)
        attributes = codec.attributes(self.message)
        key = self.ordering_key(record) if self.ordering_key is not None else None
        if key:
            attributes = dict(attributes, ordering_key=key)
        self._batch.append((data, attributes))
        self._bytes += len(data)
        if len(self._batch) >= self.max_records or self._bytes >= self.max_bytes:
            self._flush()

    def finish_bundle(self):
        self._flush()

    def _flush(self):
        if not self._batch:
            return
        publish_many = getattr(self.bus, "publish_many", None)
        if publish_many is not None:
            publish_many(self.topic, self._batch)
        else:
            for data, attributes in self._batch:
                key = attributes.get("ordering_key")
                self.bus.publish(self.topic, data, attributes, **({"ordering_key": key} if key else {}))
        self.published.inc(len(self._batch))
        self.batches.inc()
        self._batch, self._bytes = [], 0


class StoreDoFn(beam.DoFn):
    """A DoFn holding one store client as ``self.store``: :meth:`open_store` (the subclass names which store of
    ``store_config``) in ``setup()``, so each worker opens its own; closed in ``teardown()``, where a worker whose
    setup never ran has nothing to close."""

    store = None

    def __init__(self, store_config: StoreConfig):
        self.store_config = store_config

    def open_store(self):
        raise NotImplementedError

    def setup(self):
        self.store = self.open_store()

    def teardown(self):
        if self.store is not None:
            self.store.close()


def key_ranges(points: list[str]) -> list[tuple[int, str, str]]:
    """``(index, start, end)`` of the ranges that :meth:`ArticleStore.split_points` ``points`` cut the id space
    into: ``[""..p1), [p1..p2), ... [pk..)`` ("" end: no bound), covering every id exactly once."""
    bounds = ["", *sorted({p for p in points if p}), ""]
    return [(i, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


class _ReadArticleRangeFn(beam.DoFn):
    """One key range of the article store -> ``(range index, row index, article id, record bytes or None)``."""

    def __init__(self, config: StoreConfig):
        self.config = config
        self.ranges = Metrics.counter("from_store", "key_ranges_read")
        self.rows = Metrics.counter("from_store", "rows_read")

    def setup(self):
        self.store = open_store("articles", self.config)

    def process(self, key_range):
        index, start, end = key_range
        n = 0
        for n, (aid, raw) in enumerate(self.store.scan_latest(start, end), 1):
            yield index, n, aid, raw
        self.rows.inc(n)
        self.ranges.inc()


class ReadLatestArticles(beam.PTransform):
    """The latest version of every article of the article store of ``config`` (embedded or Bigtable), read by key
    ranges in parallel: ``points`` (:meth:`ArticleStore.split_points`) cut the ids into ranges, a Reshuffle spreads
    them over the workers and each is one scan (:meth:`ArticleStore.scan_latest`). Yields ``(range index, row
    index, article id, record bytes or None)``, undecoded: the reader dead-letters what it cannot decode. A failed
    scan fails its bundle, which Beam retries whole (a range's rows leave with its bundle's commit, once)."""

    def __init__(self, config: StoreConfig, points: list[str]):
        super().__init__()
        self.config, self.points = config, list(points)

    def expand(self, p):
        return (
            p
            | "KeyRanges" >> beam.Create(key_ranges(self.points))
            | "SpreadRanges" >> beam.Reshuffle()
            | "ReadRanges" >> beam.ParDo(_ReadArticleRangeFn(self.config))
        )


class CheckRunClaimFn(beam.DoFn):
    """Passes elements through while ``claim`` still holds the namespace; raises RunSuperseded once it does not.

    Checked at the first element of each bundle and then at most every ``every_s`` seconds (one pointer read;
    a check per element would cost a Bigtable read per story change). Placed before a job's store writes.
    """

    def __init__(self, store_config, claim: RunClaim, every_s: float = 2.0):
        self.store_config, self.claim, self.every_s = store_config, claim, every_s

    def setup(self):
        self._pointers = open_store("pointers", self.store_config)

    def start_bundle(self):
        self._checked = None

    def process(self, element):
        now = time.monotonic()
        if self._checked is None or now - self._checked >= self.every_s:
            self.claim.check(self._pointers)
            self._checked = now
        yield element


def write_text(path: str, text: str) -> None:
    """Write a result file locally or to any Beam filesystem (``gs://...`` on Dataflow: a worker's local disk
    would lose it)."""
    _write_pieces(path, [text])


def write_lines(rows: Iterable, path: str) -> int:
    """JSON lines of ``rows`` (any iterable, read once: written as they come, never joined into one text) to
    ``path``, locally or on any Beam filesystem, as :func:`write_text` writes. Returns how many."""
    n = [0]

    def lines():
        for r in rows:
            n[0] += 1
            yield json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"

    _write_pieces(path, lines())
    return n[0]


def _write_pieces(path: str, pieces: Iterable[str]) -> None:
    """The pieces of one UTF-8 text file, in order, written as they come (:func:`write_text`, :func:`write_lines`)."""
    if "://" in path:
        with FileSystems.create(path, mime_type="application/json") as f:
            for piece in pieces:
                f.write(piece.encode("utf-8"))
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for piece in pieces:
            f.write(piece)
