"""Beam transforms of the stories stage: EmbedArticles -> ClusterStories -> ApplyStoryChanges, and LinkStories (the
streaming cross-language linker). The backfill's file reading, result writer and progress lines are
transforms/stories/beam_backfill.py.

Reads ArticleFeatures dicts (transforms/stories/features.py) timestamped at their first-seen time; writes writer
outputs (``{"change": StoryChange, ...}``, transforms/stories/cluster.py), applies them to the story store
(stores/base.py StoryStore, through the embedded or the Google Cloud backend), and dead-letters what it cannot read
(``DeadLetter`` records on the ``dead_letter`` tagged output, counted with Metrics).

Runners: FnApiRunner for batch (the backfill), BundleBasedDirectRunner with ``--streaming`` for TestStream; both
give identical assignments because ClusterStoriesFn decides only in event-time order when the watermark passes.

ClusterStoriesFn (keyed by language: the single writer of its language)
- State: ``BUFFER`` (bag: queued articles, the durable copy of the writer's queue), ``BUFFERED`` (its size),
  ``TOKEN`` (the writer's seq, clock, last repair tick and the bound it advanced to), ``NEXT`` (the armed timer);
  timer ``TICK`` (event time).
- An arrival is queued (bag + in-memory writer) and arms ``TICK`` at its first-seen time if that is earlier than
  the armed time. When the watermark passes, ``TICK`` fires at T and the writer advances to T: it decides every
  queued article, expiry and repair tick with time <= T in (time, kind, id) order, then re-arms ``TICK`` at its next
  event. Timers seen firing twice are harmless (advancing to an already passed T does nothing).
- The writer (stories, centroids, ANN index) lives in a process cache keyed by (pipeline run, language). It is
  trusted only when its state token equals ``TOKEN``; otherwise it is rebuilt from the story store
  (:meth:`StoryClusterer.restore`) plus the queued articles of ``BUFFER``. If the store has not yet applied every
  change up to ``TOKEN.seq`` the restore raises ``StoreBehind`` and the bundle is retried (transient).
- Late articles (first seen at or before the writer's bound) are decided at the next tick as if first seen just
  after the bound (counted as ``late``); duplicates of a queued or live article are dropped (``duplicate``).
- The bag is compacted when it holds more than twice the queue, so a batch run costs O(n) state writes.
- ``bounded=True`` (the backfill): the timer is armed once, at the end of the global window, and the writer then
  advances through every event in one firing. The decisions are the same (the writer processes the same ordered
  event sequence); the reason is cost: FnApiRunner runs each timer firing as a round of its own (tens of ms), so
  one firing per distinct event time made a 3,000-article backfill spend minutes in timer rounds.
- ``embed`` (the local backfill, pipelines/backfill.py): EmbedArticles passes articles on unembedded when no link
  vectors are wanted, and that one firing has them embedded in decision order (by an embedder process of its own
  for the sentence-transformers models, transforms/stories/embed_process.py) while the writer decides the batches
  already embedded (transforms/stories/overlap.py): embedding and deciding overlap instead of running as two stages
  one after the other, and the articles cross the shuffle and the state without vectors.

ApplyStoryChangesFn (keyed by language): applies outputs in seq order (transforms/stories/apply.py), buffering
out-of-order ones, skipping replays. It is the only writer of the story store for its language.
"""

from __future__ import annotations

import logging
import threading
import time
import typing
import uuid

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils import shared

from transforms.common import ASSIGN, DEAD_LETTER, EXPIRE, MERGE, NEW_STORY, SPLIT, Progress
from transforms.common import dead_letter as dead_letter_record
from transforms.stories import embed as embmod
from transforms.stories.apply import AHEAD, NEXT, REPLAY, apply_output, sequence_step
from transforms.stories.cluster import StoryClusterer
from transforms.stories.features import ArticleFeatures
from transforms.stories.links import StoryLinker
from transforms.timers import arm, arm_earliest, to_ms

log = logging.getLogger("newsroom.stories")

STAGE = "stories"

_WRITERS: dict[tuple[str, str], StoryClusterer] = {}
_WRITERS_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------------------------------
# Embedding


class EmbedBatchFn(beam.DoFn):
    """Adds vectors to a batch of ArticleFeatures dicts (one model per process and spec, shared by threads)."""

    def __init__(self, routing: str = "auto", link_spec: str | None = embmod.MULTILINGUAL, links="auto", defer=False):
        self.routing, self.link_spec, self.links = routing, link_spec, links
        self.defer = defer  # no links wanted: pass the batch on unembedded, the writer embeds it (ClusterStoriesFn)
        self._shared = shared.Shared()
        self.embedded = Metrics.counter(STAGE, "embedded")

    def setup(self):
        self._route = embmod.EmbedderRouting(self.routing, self.link_spec)
        self._models: dict[str, embmod.Embedder] = {}

    def _model(self, spec: str) -> embmod.Embedder:
        m = self._models.get(spec)
        if m is None:
            m = self._models[spec] = self._shared.acquire(lambda: embmod.get_embedder(spec), tag=spec)
        return m

    def process(self, batch, link_languages=0):
        want_links = self.links is True or (self.links == "auto" and (link_languages or 0) > 1)
        if self.defer and not want_links:
            yield from batch
            return
        feats = [ArticleFeatures.from_dict(d) for d in batch]
        by_spec: dict[str, list[int]] = {}
        for i, f in enumerate(feats):
            by_spec.setdefault(self._route.for_language(f.language), []).append(i)
        for spec in sorted(by_spec):
            idx = by_spec[spec]
            model = self._model(spec)
            vecs = model.encode([feats[i].embed_text for i in idx])
            for i, v in zip(idx, vecs):
                feats[i].vector = v
                feats[i].model = model.name
                if want_links and spec == self.link_spec:
                    feats[i].link_vector = v
        if want_links and self.link_spec:
            rest = [i for i, f in enumerate(feats) if f.link_vector is None]
            if rest:
                vecs = self._model(self.link_spec).encode([feats[i].embed_text for i in rest])
                for i, v in zip(rest, vecs):
                    feats[i].link_vector = v
        self.embedded.inc(len(feats))
        for f in feats:
            yield f.to_dict()


class EmbedArticles(beam.PTransform):
    """ArticleFeatures dicts -> the same with ``vector`` (and ``link_vector``), re-timestamped at first-seen.

    Args:
        routing: embedder spec or ``auto`` (transforms/stories/embed.py).
        links: True, False, or ``auto`` (link vectors when ``link_languages`` > 1).
        link_languages: optional singleton side input (number of input languages) for ``auto``.
    """

    def __init__(self, routing: str = "auto", links="auto", link_languages=None, batch_size: int = 128, defer=False):
        super().__init__()
        self.routing, self.links, self.link_languages = routing, links, link_languages
        self.batch_size, self.defer = batch_size, defer  # defer: see EmbedBatchFn and ClusterStoriesFn's ``embed``

    def expand(self, pcoll):
        side = {} if self.link_languages is None else {"link_languages": beam.pvalue.AsSingleton(self.link_languages)}
        return (
            pcoll
            # fixed-size calls: the embedder groups each call's texts by token length (no padding), so larger calls
            # fill its groups better (texts/s on 2 cores: ~255 at 128, ~430 at 1,024)
            | "BatchArticles" >> beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
            | "EmbedBatch" >> beam.ParDo(EmbedBatchFn(self.routing, links=self.links, defer=self.defer), **side)
            | "StampFirstSeen" >> beam.Map(lambda d: beam.window.TimestampedValue(d, d["first_seen_at"] / 1000.0))
        )


# ---------------------------------------------------------------------------------------------------------------
# Clustering


class ClusterStoriesFn(beam.DoFn):
    """The per-language story writer as a stateful DoFn (see the module docstring).

    Args:
        store_config: stores.StoreConfig of the story store the writer restores from.
        config: optional ClusterConfig (default: the model's calibration).
        exact_index: exact nearest-centroid search instead of the ANN index.
        explain: the writer attaches the explanation of each decision (transforms/stories/explanations.py).
        embed: ``(routing, batch_size)``: articles may come without vectors (EmbedArticles ``defer``); the bounded
            tick embeds them in decision order while the writer decides (transforms/stories/overlap.py).
    Yields:
        writer output dicts (main output); DeadLetter records on ``dead_letter``.
    """

    BUFFER = BagStateSpec("buffer", PickleCoder())
    BUFFERED = ReadModifyWriteStateSpec("buffered", PickleCoder())
    TOKEN = ReadModifyWriteStateSpec("token", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)

    def __init__(
        self, store_config, config=None, exact_index=False, run_id=None, bounded=False, explain=False, embed=None
    ):
        self.store_config, self.config, self.exact_index = store_config, config, exact_index
        self.bounded, self.embed = bounded, embed
        self.explain = explain  # each output carries the explanation of its decision (the backfill writes them)
        self.run_id = run_id or uuid.uuid4().hex
        self.articles = Metrics.counter(STAGE, "articles")
        self.duplicates = Metrics.counter(STAGE, "duplicate")
        self.late = Metrics.counter(STAGE, "late")
        self.restores = Metrics.counter(STAGE, "writer_restored")
        self.bad = Metrics.counter(STAGE, "bad_article")
        self.embedded = Metrics.counter(STAGE, "embedded")  # what EmbedArticles left to this writer (``embed``)
        self.decisions = {k: Metrics.counter(STAGE, k.lower()) for k in (NEW_STORY, ASSIGN, MERGE, SPLIT, EXPIRE)}

    def setup(self):
        self._stores = None
        self._started: set[str] = set()

    def _store(self):
        if self._stores is None:
            from stores import open_stores

            self._stores = open_stores(self.store_config)
        return self._stores.stories

    def _writer(self, language: str, token, buffer) -> StoryClusterer:
        key = (self.run_id, language)
        with _WRITERS_LOCK:
            w = _WRITERS.get(key)
        if w is not None and token is not None and w.state_token() == token:
            return w
        w = StoryClusterer.restore(self._store(), language, token, config=self.config, exact_index=self.exact_index)
        if token is not None:
            for d in buffer.read():
                f = ArticleFeatures.from_dict(d)
                if w.until is None or f.first_seen_at > w.until:
                    w.add(f)
            self.restores.inc()
        w.explain = self.explain
        with _WRITERS_LOCK:
            _WRITERS[key] = w
        return w

    def process(
        self,
        element,
        buffer=beam.DoFn.StateParam(BUFFER),
        buffered=beam.DoFn.StateParam(BUFFERED),
        token_state=beam.DoFn.StateParam(TOKEN),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        language, d = element
        try:
            f = ArticleFeatures.from_dict(d)
            if f.vector is None and self.embed is None:
                raise ValueError("article has no vector")
        except Exception as exc:  # malformed input is dead-lettered, never raised
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter_record(
                    STAGE,
                    "bad_article",
                    repr(exc),
                    str(d.get("article_id")) if isinstance(d, dict) else None,
                    d,
                    int(time.time() * 1000),
                ),
            )
            return
        token = token_state.read()
        w = self._writer(language, token, buffer)
        if token is None:
            token_state.write(w.state_token())
        if w.knows(f.article_id):
            self.duplicates.inc()
            return
        if w.until is not None and f.first_seen_at <= w.until:
            self.late.inc()
            f.first_seen_at = w.until + 1
        if f.vector is None and self.embed is not None and language not in self._started:
            self._started.add(language)
            self._encoder(language, wait=False)  # start the embedder while the input still arrives
        self.articles.inc()
        buffer.add(f.to_dict())
        buffered.write((buffered.read() or 0) + 1)
        w.add(f)
        if self.bounded:
            if nxt.read() is None:  # bounded input: one firing when the watermark reaches the end of the input
                tick.set(GlobalWindow().max_timestamp())
                nxt.write(to_ms(GlobalWindow().max_timestamp()))
        else:
            arm_earliest(tick, nxt, f.first_seen_at)

    @on_timer(TICK)
    def on_tick(
        self,
        key=beam.DoFn.KeyParam,
        fired=beam.DoFn.TimestampParam,
        buffer=beam.DoFn.StateParam(BUFFER),
        buffered=beam.DoFn.StateParam(BUFFERED),
        token_state=beam.DoFn.StateParam(TOKEN),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        now = to_ms(fired)
        w = self._writer(key, token_state.read(), buffer)
        progress = Progress(f"[backfill] articles decided ({key})", len(w.state.pending)) if self.bounded else None
        outs = w.advance(now, progress) if self.embed is None else self._embed_and_advance(key, w, now, progress)
        token_state.write(w.state_token())
        for o in outs:
            self.decisions[o.change["kind"]].inc()
            yield o.to_dict()
        self._compact(w, buffer, buffered)
        upcoming = w.next_event_time()
        arm(tick, nxt, None if upcoming is None or self.bounded else max(upcoming, now + 1))

    def _encoder(self, language: str, wait: bool = True):
        """(encode, model name) of the language's embedder for the ``embed`` tick: a process of its own for the
        sentence-transformers specs (transforms/stories/embed_process.py: the writer would hold the GIL the encoder
        needs), else the process's embedder. ``wait=False`` only starts it: the first article does, so that its
        start-up overlaps the input."""
        from transforms.stories import embed_process

        spec = embmod.EmbedderRouting(self.embed[0]).for_language(language)
        if not embed_process.wants_process(spec):
            model = embmod.get_embedder(spec)
            return model.encode, model.name
        proc = embed_process.shared_process(spec)
        if not wait:
            return None
        name, _, info = proc.ready()
        embmod.record_path(spec, {**info, "process": "own (overlapped with the writer)"})
        return proc.encode, name

    def _embed_and_advance(self, language: str, w: StoryClusterer, now: int, decided) -> list:
        from transforms.stories.overlap import advance_overlapped

        encode, name = self._encoder(language)

        def embed(batch):  # on the embedding thread
            for f, v in zip(batch, encode([f.embed_text for f in batch])):
                f.vector, f.model = v, name

        report = Progress(f"[backfill] articles embedded ({language})", None)
        report(0)  # the clock of its rate starts with the tick
        counted = [None]

        def progress(done, total):  # on the writer's thread, where Beam's counters count
            self.embedded.inc(done - (done if counted[0] is None else counted[0]))
            counted[0] = done
            report.total = total
            report(done)

        return advance_overlapped(w, now, embed, self.embed[1], progress=progress, decided=decided)

    @staticmethod
    def _compact(w: StoryClusterer, buffer, buffered) -> None:
        queued = w.queued()
        held = buffered.read() or 0
        if held > 2 * len(queued) + 64:
            buffer.clear()
            for f in queued:
                buffer.add(f.to_dict())
            buffered.write(len(queued))


class ClusterStories(beam.PTransform):
    """ArticleFeatures dicts with vectors -> writer outputs (keyed internally by language); ``options`` are
    ClusterStoriesFn's (``exact_index``, ``bounded``, ``explain``). Dead letters: ``result[DEAD_LETTER]``."""

    def __init__(self, store_config, config=None, **options):
        super().__init__()
        self.store_config, self.config, self.options = store_config, config, options

    def expand(self, pcoll):
        fn = ClusterStoriesFn(self.store_config, self.config, **self.options)
        return (
            pcoll
            | "KeyByLanguage" >> beam.Map(lambda d: (d["language"], d)).with_output_types(tuple[str, typing.Any])
            | "DecideInOrder" >> beam.ParDo(fn).with_outputs(DEAD_LETTER, main="outputs")
        )


# ---------------------------------------------------------------------------------------------------------------
# Applying to the store


class ApplyStoryChangesFn(beam.DoFn):
    """Applies writer outputs of one language to the story store in seq order; yields the applied StoryChanges."""

    PENDING = BagStateSpec("pending", PickleCoder())
    PENDING_COUNT = ReadModifyWriteStateSpec("pending_count", PickleCoder())

    def __init__(self, store_config):
        self.store_config = store_config
        self.applied = Metrics.counter(STAGE, "changes_applied")
        self.replayed = Metrics.counter(STAGE, "changes_replayed")
        self.held = Metrics.counter(STAGE, "changes_held_out_of_order")

    def setup(self):
        from stores import open_stores

        self._stories = open_stores(self.store_config).stories

    def process(
        self,
        element,
        pending=beam.DoFn.StateParam(PENDING),
        count=beam.DoFn.StateParam(PENDING_COUNT),
    ):
        language, out = element
        store = self._stories
        seq = int(out["change"]["seq"])
        step = sequence_step(seq, store.writer_seq(language))
        if step == REPLAY:
            self.replayed.inc()
            return
        if step == AHEAD:
            pending.add(out)
            count.write((count.read() or 0) + 1)
            self.held.inc()
            return
        apply_output(store, out, strict=True)
        self.applied.inc()
        yield out["change"]
        if count.read():
            rest = sorted(pending.read(), key=lambda o: int(o["change"]["seq"]))
            pending.clear()
            kept = 0
            for o in rest:
                step = sequence_step(int(o["change"]["seq"]), store.writer_seq(language))
                if step == REPLAY:
                    continue
                if step == NEXT:
                    apply_output(store, o, strict=True)
                    self.applied.inc()
                    yield o["change"]
                else:
                    pending.add(o)
                    kept += 1
            count.write(kept)


class ApplyStoryChanges(beam.PTransform):
    """Writer outputs -> the story store (idempotent, in seq order per language); returns the applied changes."""

    def __init__(self, store_config):
        super().__init__()
        self.store_config = store_config

    def expand(self, pcoll):
        return (
            pcoll
            | "KeyByWriter"
            >> beam.Map(lambda o: (o["change"]["language"], o)).with_output_types(tuple[str, typing.Any])
            | "ApplyInSeqOrder" >> beam.ParDo(ApplyStoryChangesFn(self.store_config))
        )


# ---------------------------------------------------------------------------------------------------------------
# Cross-language links (streaming form; the backfill links its final stories, transforms/stories/local.py)


class LinkStoriesFn(beam.DoFn):
    """Single-key linker over every language's writer outputs; proposes links at each 10-minute event-time tick.

    State: ``SEEN`` (bag of the outputs observed, replayed into a fresh linker at each tick and after a restart;
    rewritten at each tick as the linker's snapshot, so it holds the live stories only), ``SEQ`` (the link writer's
    seq), ``LINKED`` (pairs already linked), timer ``TICK``.
    """

    SEEN = BagStateSpec("seen", PickleCoder())
    SEQ = ReadModifyWriteStateSpec("seq", PickleCoder())
    LINKED = ReadModifyWriteStateSpec("linked", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)
    EVERY_MS = 600_000

    def __init__(self, run_id: str | None = None, every_ms: int = EVERY_MS):
        if every_ms <= 0:
            raise ValueError(f"link interval must be > 0 ms, got {every_ms}")
        self.run_id = run_id or uuid.uuid4().hex
        self.every_ms = int(every_ms)
        self.links = Metrics.counter(STAGE, "links")

    def process(
        self,
        element,
        seen=beam.DoFn.StateParam(SEEN),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        _, out = element
        seen.add(StoryLinker.compact(out))
        at = int(out["change"]["at"])
        arm_earliest(tick, nxt, (at // self.every_ms + 1) * self.every_ms)

    @on_timer(TICK)
    def on_tick(
        self,
        fired=beam.DoFn.TimestampParam,
        seen=beam.DoFn.StateParam(SEEN),
        seq=beam.DoFn.StateParam(SEQ),
        linked=beam.DoFn.StateParam(LINKED),
        nxt=beam.DoFn.StateParam(NEXT),
    ):
        now = to_ms(fired)
        linker = StoryLinker()
        for o in seen.read():
            linker.observe(o)
        linker.linked = set(linked.read() or [])
        linker.seq = seq.read() or 0
        changes = linker.link_changes(now)
        seq.write(linker.seq)
        live = set(linker.stories)
        linked.write(
            sorted(p for p in linker.linked if p[0] in live and p[1] in live)
        )  # a gone story never links again
        seen.clear()
        for o in linker.snapshot():
            seen.add(o)
        nxt.clear()
        self.links.inc(len(changes))
        for ch in changes:
            yield {"change": ch, "story_meta": None, "members": {}}


class LinkStories(beam.PTransform):
    """Writer outputs of every language -> LINK outputs of the ``mul`` link writer (apply them like any output).

    Args:
        every_ms: event-time interval of the link ticks (default 10 minutes; the sample world at --speed x runs
            ``600_000 / x`` so that its links come as often in its virtual time).

    The outputs are timestamped at their tick: the ranker (transforms/editions) folds a LINK like any story change,
    so story coverage and story pages list the linked story in the other language from that tick's cycle on.
    """

    def __init__(self, every_ms: int = LinkStoriesFn.EVERY_MS):
        super().__init__()
        self.every_ms = every_ms

    def expand(self, pcoll):
        return (
            pcoll
            | "OneLinker" >> beam.Map(lambda o: ("mul", o)).with_output_types(tuple[str, typing.Any])
            | "ProposeLinks" >> beam.ParDo(LinkStoriesFn(every_ms=self.every_ms))
        )
