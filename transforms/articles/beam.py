"""Beam PTransforms of the articles stage: NormalizeArticles -> DedupeArticles -> DetectSyndication.

Reads: RawItem dicts (schemas/avro/raw_item.avsc; topic items-raw). Writes: Article dicts (article.avsc; only new
articles and new versions, with copy_of / syndication_group set) and DeadLetter dicts (dead_letter.avsc, stage
``normalize`` or ``dedupe``) on a tagged output. The domain logic is plain Python in this package; these classes
only wire it into Beam, count outcomes and route failures.

Usage::

    normalized = raw_items | "NormalizeArticles" >> NormalizeArticles()
    deduped = normalized.articles | "DedupeArticles" >> DedupeArticles(store_config)
    articles = deduped.articles | "DetectSyndication" >> DetectSyndication()
    dead = (normalized.dead_letter, deduped.dead_letter) | beam.Flatten()

or all of it at once: ``out = raw_items | ProcessArticles(store_config)`` -> ``out["articles"]``,
``out["dead_letter"]``.

Metrics (namespace ``articles``): ``normalized``, ``dead_letter_<reason>`` (http_error, too_large, empty_body,
not_html, undecodable, xml_bomb, future_date, no_url, extraction_budget_exceeded, extraction_worker_died,
internal_error), ``dedupe_<outcome>`` (new, update,
duplicate, stale, content_duplicate), ``syndication_copy``, ``syndication_original``, ``syndication_single``,
``syndication_rebuild``.

The outbox (stores/feeds.py): with ``settle`` (the stories job reading the bus), once an item's outcome is durable
(the dedupe step's conditional write decided it, or it was dead-lettered) its entry in ingest's outbox is settled,
so ingest does not republish it; a failed settle is only logged (ingest republishes the page later, and the
conditional write finds it a duplicate).

Retry policy: a malformed input is never raised out of a DoFn (it is counted and dead-lettered with its reason);
a store error (:class:`stores.StoreError`) is transient and is raised, so the runner retries the bundle; every
write is idempotent (conditional write, create-if-absent content claim), so a retry cannot double-count.
"""

from __future__ import annotations

import logging
import time
import typing

import apache_beam as beam
from apache_beam.coders import FastPrimitivesCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec

from schemas import codec
from transforms.common import DEAD_LETTER, dead_letter

ARTICLES = "articles"
NAMESPACE = "articles"

LOG = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _payload(name: str, record: dict) -> bytes:
    """The original message bytes (replayable); best effort for a record that does not even encode."""
    try:
        return codec.encode(name, record)
    except Exception:  # noqa: BLE001 - the payload of a broken message is whatever we can keep
        try:
            return repr(record)[:100000].encode("utf-8", "replace")
        except Exception:  # noqa: BLE001
            return b""


def _registry_of(publishers):
    """A PublisherRegistry from stored rows (a list), a file path, or None (the packaged sample)."""
    from transforms.publishers import PublisherRegistry, default_registry

    if isinstance(publishers, list):
        return PublisherRegistry.from_dicts(publishers)
    return PublisherRegistry.load(publishers) if publishers else default_registry()


class _Settler:
    """Settles items in ingest's outbox (FeedStore.settle) from a DoFn: opened in ``setup()``; a store error is
    logged and counted, never raised (the item stays held and is republished later: at worst a duplicate)."""

    def __init__(self, store_config):
        self.store_config = store_config
        self.failed = Metrics.counter(NAMESPACE, "outbox_settle_failed")
        self.outbox = None

    def setup(self):
        if self.store_config is not None:
            from stores.feeds import open_feed_store

            self.outbox = open_feed_store(self.store_config)

    def __call__(self, item_id, first_seen_at) -> None:
        if self.outbox is None or not item_id or first_seen_at is None:
            return
        from stores.base import StoreError

        try:
            self.outbox.settle(str(item_id), int(first_seen_at))
        except StoreError as exc:
            LOG.warning("outbox: settling %s failed (%s); ingest will republish it", item_id, exc)
            self.failed.inc()


class SettleDeadLettersFn(beam.DoFn):
    """The normalize step's dead letters -> nothing: each one's RawItem (its replayable payload) is settled in
    ingest's outbox, since a dead letter is that item's outcome. A payload that does not decode settles nothing."""

    def __init__(self, store_config):
        self.settle = _Settler(store_config)

    def setup(self):
        self.settle.setup()

    def process(self, dead):
        try:
            raw = codec.decode("RawItem", dead.get("payload") or b"")
        except Exception:  # noqa: BLE001 - the payload of a broken message
            return
        self.settle(raw.get("item_id"), raw.get("first_seen_at"))


def _default_budget() -> float:
    from transforms.articles.worker import DEFAULT_BUDGET_S

    return DEFAULT_BUDGET_S


class NormalizeArticleFn(beam.DoFn):
    """RawItem dict -> Article dict (version 1), or a DeadLetter on the ``dead_letter`` output.

    Args:
        publishers: path of the publisher registry JSON (None: the packaged one).
        aliases: path of the entity alias table TSV (None: the packaged one).
        clock: () -> ms, for DeadLetter.at (the article's own times come from the RawItem, never from a clock).
        budget_s: seconds one page may take; the page is then dead-lettered ``extraction_budget_exceeded`` and the
            next page goes on (transforms/articles/worker.py: normalisation runs in a child process, reused across
            pages, killed on overrun). None: the default, 30 s; 0: in-process, no limit.
    """

    def __init__(
        self,
        publishers: str | None = None,
        aliases: str | None = None,
        clock=wall_clock_ms,
        budget_s=None,
        store_config=None,
    ):
        self.publishers, self.aliases, self.clock = publishers, aliases, clock
        self.budget_s = _default_budget() if budget_s is None else float(budget_s)
        self.store_config = store_config  # the stored publisher registry is read from it (None: the file only)
        self.normalized = Metrics.counter(NAMESPACE, "normalized")
        self._reasons: dict = {}

    def setup(self):
        self.live, self._registry_version = None, None
        if self.store_config is not None:
            from transforms.publisher_store import live_registry

            self.live = live_registry(self.publishers, self.store_config)
            self._registry_version = self.live.version
        self._build()

    def _build(self):
        """The normaliser, with the stored registry's rows when one is live (else the file's path)."""
        publishers = self.live.rows if self.live is not None and self.live.rows is not None else self.publishers
        if self.budget_s > 0:  # a warm child of this process when there is one (worker.take_worker)
            from transforms.articles.worker import take_worker

            self.normalizer = take_worker(self.budget_s, publishers, self.aliases, clock=self.clock)
            return
        from transforms.articles.entity_aliases import AliasTable
        from transforms.articles.normalize import Normalizer

        aliases = AliasTable.load(self.aliases) if self.aliases else None
        self.normalizer = Normalizer(registry=_registry_of(publishers), aliases=aliases, clock=self.clock)

    def _refresh(self):
        """A publisher import reaches this worker within the registry's refresh (transforms/publisher_store.py)."""
        if self.live is None:
            return
        self.live.poll()
        if self.live.version != self._registry_version:
            self._registry_version = self.live.version
            self._close_normalizer()  # the old registry's child: not kept for another setup
            self._build()

    def _close_normalizer(self):
        close = getattr(getattr(self, "normalizer", None), "close", None)
        if close is not None:
            close()

    def teardown(self):
        """A NormalizeWorker goes back to this process's idle ones (its child alive), for the next setup()."""
        from transforms.articles.worker import NormalizeWorker, give_back

        normalizer, self.normalizer = getattr(self, "normalizer", None), None
        if isinstance(normalizer, NormalizeWorker):
            give_back(normalizer)

    def _count(self, reason: str):
        c = self._reasons.get(reason)
        if c is None:
            c = self._reasons[reason] = Metrics.counter(NAMESPACE, f"dead_letter_{reason}")
        c.inc()

    def process(self, raw):
        from transforms.articles.page import Rejected

        key = None
        self._refresh()
        try:
            key = raw.get("item_id") or raw.get("fetched_url")
            article = self.normalizer.normalize(raw)
            codec.check("Article", article)
        except Rejected as exc:
            self._count(exc.reason)
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter("normalize", exc.reason, exc.detail, key, _payload("RawItem", raw), self.clock()),
            )
            return
        except Exception as exc:  # noqa: BLE001 - malformed input must never fail the bundle
            LOG.warning("normalize failed for %s: %r", key, exc)
            self._count("internal_error")
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter(
                    "normalize",
                    "internal_error",
                    f"{type(exc).__name__}: {exc}",
                    key,
                    _payload("RawItem", raw),
                    self.clock(),
                ),
            )
            return
        self.normalized.inc()
        yield article


class NormalizeArticles(beam.PTransform):
    """RawItem dicts -> ``.articles`` (Article dicts, version 1) and ``.dead_letter`` (DeadLetter dicts).
    ``budget_s``: per-page extraction budget (see NormalizeArticleFn; None: 30 s, 0: none)."""

    def __init__(
        self,
        publishers: str | None = None,
        aliases: str | None = None,
        clock=wall_clock_ms,
        budget_s=None,
        store_config=None,
    ):
        super().__init__()
        self.publishers, self.aliases, self.clock, self.budget_s = publishers, aliases, clock, budget_s
        self.store_config = store_config

    def expand(self, raw_items):
        return raw_items | "NormalizeArticle" >> beam.ParDo(
            NormalizeArticleFn(self.publishers, self.aliases, self.clock, self.budget_s, self.store_config)
        ).with_outputs(DEAD_LETTER, main=ARTICLES)


class DedupeArticleFn(beam.DoFn):
    """Article dict -> the stored record when it is new or a new version; nothing for duplicates and replays.

    The ArticleStore client is created in ``setup()`` from the StoreConfig (embedded SQLite or Bigtable). With
    ``settle``, the item's outbox entry is settled once the conditional write has decided it (any outcome)."""

    def __init__(self, store_config, clock=wall_clock_ms, settle: bool = False):
        self.store_config, self.clock = store_config, clock
        self.settle = _Settler(store_config if settle else None)
        from transforms.articles.dedupe import OUTCOMES

        self.outcomes = {o: Metrics.counter(NAMESPACE, f"dedupe_{o}") for o in OUTCOMES}
        self.invalid = Metrics.counter(NAMESPACE, "dead_letter_invalid_article")

    def setup(self):
        from stores import open_store

        self.store = open_store("articles", self.store_config)
        self.settle.setup()

    def process(self, article):
        from stores.base import StoreError
        from transforms.articles.dedupe import decide

        try:
            codec.check("Article", article)
        except Exception as exc:  # noqa: BLE001
            self.invalid.inc()
            if isinstance(article, dict):
                self.settle(article.get("raw_item_id"), article.get("first_seen_at"))
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter(
                    "dedupe",
                    "invalid_article",
                    str(exc),
                    (article or {}).get("article_id"),
                    _payload("Article", article),
                    self.clock(),
                ),
            )
            return
        first_seen = article.get("first_seen_at")  # the RawItem's (decide keeps the earliest of all versions)
        try:
            decision = decide(self.store, article)
        except StoreError:
            raise  # transient: the runner retries the bundle; every step is idempotent
        self.settle(article.get("raw_item_id"), first_seen)  # durable now: ingest need not republish it
        self.outcomes[decision.outcome].inc()
        if decision.emit:
            yield decision.article


class DedupeArticles(beam.PTransform):
    """Article dicts -> ``.articles`` (only new articles and new versions, as stored) and ``.dead_letter``;
    ``settle``: see DedupeArticleFn."""

    def __init__(self, store_config, clock=wall_clock_ms, settle: bool = False):
        super().__init__()
        self.store_config, self.clock, self.settle = store_config, clock, settle

    def expand(self, articles):
        fn = DedupeArticleFn(self.store_config, self.clock, self.settle)
        return articles | "DedupeArticle" >> beam.ParDo(fn).with_outputs(DEAD_LETTER, main=ARTICLES)


class AssignSyndicationFn(beam.DoFn):
    """Keyed by language: (language, Article) -> Article with copy_of / syndication_group.

    Why a stateful DoFn keyed per language (and not a batch design): it runs unchanged in streaming and in a
    backfill, it is the same "one writer per language" shape as the clusterer downstream, and its decisions are a
    pure function of the order in which a language's articles arrive (SyndicationIndex: no clock, no randomness,
    ties broken by article_id), so the same input order gives the same groups. FnApiRunner kept a key's input
    order in the tests; a batch job that needs order-independence must feed articles sorted by
    (first_seen_at, article_id) into this transform, which a backfill should do anyway.

    State (per language):
      ENTRIES: BagState of compact index entries (article_id, publisher, authority, is_wire, first_seen, group,
        120 MinHash values as bytes) in insertion order, compacted when more than half of it has left the window.
      SEQ: ReadModifyWriteState, the number of articles applied; the in-memory index caches the state and is
        rebuilt from ENTRIES whenever its sequence number differs (a new worker, or a retried bundle).
      NEWEST: ReadModifyWriteState, the newest first-seen time (the window's clock).
      BAG_SIZE: ReadModifyWriteState, entries written to ENTRIES since the last compaction.
    """

    ENTRIES = BagStateSpec("entries", FastPrimitivesCoder())
    SEQ = ReadModifyWriteStateSpec("seq", VarIntCoder())
    NEWEST = ReadModifyWriteStateSpec("newest", VarIntCoder())
    BAG_SIZE = ReadModifyWriteStateSpec("bag_size", VarIntCoder())

    def __init__(self, publishers: str | None = None, store_config=None):
        self.publishers, self.store_config = publishers, store_config
        self.copies = Metrics.counter(NAMESPACE, "syndication_copy")
        self.originals = Metrics.counter(NAMESPACE, "syndication_original")
        self.singles = Metrics.counter(NAMESPACE, "syndication_single")
        self.rebuilds = Metrics.counter(NAMESPACE, "syndication_rebuild")
        self.errors = Metrics.counter(NAMESPACE, "syndication_error")

    def setup(self):
        self.live = None
        if self.store_config is not None:
            from transforms.publisher_store import live_registry

            self.live = live_registry(self.publishers, self.store_config)
        self.registry = self.live.registry if self.live is not None else _registry_of(self.publishers)
        self._cache: dict[str, tuple[int, object]] = {}

    def _refresh(self):
        """An imported registry: the indexes are rebuilt from state with it (authority and wire flags)."""
        if self.live is None:
            return
        self.live.poll()
        if self.live.registry is not self.registry:
            self.registry = self.live.registry
            self._cache.clear()

    def _index(self, language, seq, entries_state, newest_state):
        from transforms.articles.syndication import Entry, SyndicationIndex

        cached = self._cache.get(language)
        if cached is not None and cached[0] == seq:
            return cached[1]
        self.rebuilds.inc()
        index = SyndicationIndex(self.registry)
        index.restore([Entry.from_tuple(t) for t in entries_state.read()], newest_state.read())
        return index

    def process(
        self,
        element,
        entries=beam.DoFn.StateParam(ENTRIES),
        seq_state=beam.DoFn.StateParam(SEQ),
        newest_state=beam.DoFn.StateParam(NEWEST),
        bag_size=beam.DoFn.StateParam(BAG_SIZE),
    ):
        language, article = element
        self._refresh()
        seq = seq_state.read() or 0
        index = self._index(language, seq, entries, newest_state)
        try:
            out, entry = index.assign(article)
        except Exception as exc:  # noqa: BLE001 - never lose an article to the copy check
            LOG.warning("syndication failed for %s: %r", article.get("article_id"), exc)
            self.errors.inc()
            self._cache.pop(language, None)
            yield dict(article, copy_of=None, syndication_group=None)
            return
        size = (bag_size.read() or 0) + (1 if entry is not None else 0)
        if size > 2 * max(len(index), 1000):
            entries.clear()
            for e in index.entries():
                entries.add(e.to_tuple())
            size = len(index)
        elif entry is not None:
            entries.add(entry.to_tuple())
        bag_size.write(size)
        if index.newest_seen is not None:
            newest_state.write(int(index.newest_seen))
        seq_state.write(seq + 1)
        self._cache[language] = (seq + 1, index)
        if out.get("copy_of"):
            self.copies.inc()
        elif out.get("syndication_group"):
            self.originals.inc()
        else:
            self.singles.inc()
        yield out


class DetectSyndication(beam.PTransform):
    """Article dicts -> the same with copy_of / syndication_group (MinHash + LSH, 48 h window, per language)."""

    def __init__(self, publishers: str | None = None, store_config=None):
        super().__init__()
        self.publishers, self.store_config = publishers, store_config

    def expand(self, articles):
        return (
            articles
            | "KeyByLanguage"
            >> beam.Map(lambda a: (a.get("language") or "und", a)).with_output_types(tuple[str, typing.Any])
            | "AssignSyndication" >> beam.ParDo(AssignSyndicationFn(self.publishers, self.store_config))
        )


class ProcessArticles(beam.PTransform):
    """The whole articles stage: RawItem dicts -> ``{"articles": Article dicts (new articles and new versions,
    syndication set), "dead_letter": DeadLetter dicts of every step}``. What the stories job applies to items-raw.

    Args:
        store_config: StoreConfig of the ArticleStore (``pipelines.options.store_config(options)``).
        publishers / aliases: registry and alias table paths (None: the packaged ones).
        clock: () -> ms, for DeadLetter.at only.
        budget_s: per-page extraction budget in seconds (None: 30 s, 0: in-process without a limit).
        settle: settle each item's entry in ingest's outbox once its outcome is durable (the stories job reading the
            bus; not a backfill of files, whose items were never held).
    """

    def __init__(
        self,
        store_config,
        publishers: str | None = None,
        aliases: str | None = None,
        clock=wall_clock_ms,
        budget_s=None,
        settle: bool = False,
    ):
        super().__init__()
        self.store_config, self.publishers, self.aliases, self.clock = store_config, publishers, aliases, clock
        self.budget_s, self.settle = budget_s, settle

    def expand(self, raw_items):
        normalized = raw_items | "NormalizeArticles" >> NormalizeArticles(
            self.publishers, self.aliases, self.clock, self.budget_s, self.store_config
        )
        if self.settle:
            normalized[DEAD_LETTER] | "SettleDeadLetters" >> beam.ParDo(SettleDeadLettersFn(self.store_config))
        deduped = normalized[ARTICLES] | "DedupeArticles" >> DedupeArticles(self.store_config, self.clock, self.settle)
        articles = deduped[ARTICLES] | "DetectSyndication" >> DetectSyndication(self.publishers, self.store_config)
        dead = (normalized[DEAD_LETTER], deduped[DEAD_LETTER]) | "MergeDeadLetters" >> beam.Flatten()
        return {ARTICLES: articles, DEAD_LETTER: dead}
