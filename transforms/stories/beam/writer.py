"""ClusterStories: the per-language story writer (transforms/stories/writer/cluster.py) as a stateful DoFn.

Reads ArticleFeatures dicts (transforms/stories/vocabulary/features.py) timestamped at their first-seen time; writes writer
outputs (``{"change": StoryChange, ...}``) and dead-letters what it cannot read (``DeadLetter`` records on the
``dead_letter`` tagged output, counted with Metrics). It restores from the story store, which
:mod:`transforms.stories.beam.apply` writes.

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
  for the sentence-transformers models, transforms/stories/embed/embed_process.py) while the writer decides the batches
  already embedded (transforms/stories/writer/overlap.py): embedding and deciding overlap instead of running as two stages
  one after the other, and the articles cross the shuffle and the state without vectors.
"""

from __future__ import annotations

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

from transforms.common import ASSIGN, DEAD_LETTER, EXPIRE, MERGE, NEW_STORY, SPLIT, Progress
from transforms.common import dead_letter as dead_letter_record
from transforms.stories.beam.common import STAGE
from transforms.stories.embed import embed as embmod
from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer.cluster import StoryClusterer
from transforms.timers import arm, arm_earliest, to_ms

_WRITERS: dict[tuple[str, str], StoryClusterer] = {}
_WRITERS_LOCK = threading.Lock()


class ClusterStoriesFn(beam.DoFn):
    """The per-language story writer as a stateful DoFn (see the module docstring).

    Args:
        store_config: stores.StoreConfig of the story store the writer restores from.
        config: optional ClusterConfig (default: the model's calibration).
        exact_index: exact nearest-centroid search instead of the ANN index.
        explain: the writer attaches the explanation of each decision (transforms/stories/writer/explanations.py).
        embed: ``(routing, batch_size)``: articles may come without vectors (EmbedArticles ``defer``); the bounded
            tick embeds them in decision order while the writer decides (transforms/stories/writer/overlap.py).
        bounded: True for a bounded input (one tick at its end), or the folder where that tick checkpoints what it
            has decided (transforms/stories/backfill/checkpoint.py): a writer that finds a checkpoint there continues
            from it, re-emits its outputs and skips the articles it decided (``already_decided``).
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
        self.already = Metrics.counter(STAGE, "already_decided")  # by the checkpoint a resumed run continues
        self.bad = Metrics.counter(STAGE, "bad_article")
        self.embedded = Metrics.counter(STAGE, "embedded")  # what EmbedArticles left to this writer (``embed``)
        self.decisions = {k: Metrics.counter(STAGE, k.lower()) for k in (NEW_STORY, ASSIGN, MERGE, SPLIT, EXPIRE)}

    def setup(self):
        self._stores = None
        self._started: set[str] = set()
        self._checkpoints: dict[str, tuple] = {}  # language -> (WriterCheckpoint, its outputs, the ids they decided)

    @property
    def checkpoint(self) -> str | None:
        return self.bounded if isinstance(self.bounded, str) else None

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
        w = self._resume(language) if token is None and self.checkpoint else None
        w = w or StoryClusterer.restore(
            self._store(), language, token, config=self.config, exact_index=self.exact_index
        )
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

    def _resume(self, language: str) -> StoryClusterer | None:
        """The writer of the checkpoint in ``self.checkpoint`` (None when there is none), its outputs kept to be
        emitted again by the tick and the articles they decided to be skipped."""
        from transforms.stories.backfill.checkpoint import WriterCheckpoint, decided_ids

        ck = WriterCheckpoint(self.checkpoint, language)
        w, outputs = ck.load()
        self._checkpoints[language] = (ck, outputs, decided_ids(outputs))
        if w is not None:
            self.restores.inc()
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
        resumed = self._checkpoints.get(language)
        if w.knows(f.article_id) or (resumed and f.article_id in resumed[2]):
            # decided before the checkpoint this run continues, or queued in it: its tick must still fire
            (self.already if resumed and resumed[0].n_saved else self.duplicates).inc()
            if resumed and resumed[0].n_saved:
                self._arm_end(tick, nxt)
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
            self._arm_end(tick, nxt)
        else:
            arm_earliest(tick, nxt, f.first_seen_at)

    @staticmethod
    def _arm_end(tick, nxt) -> None:
        """Bounded input: one firing when the watermark reaches the end of the input."""
        if nxt.read() is None:
            tick.set(GlobalWindow().max_timestamp())
            nxt.write(to_ms(GlobalWindow().max_timestamp()))

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
        if key in self._checkpoints:  # dicts, the checkpoint's first, then each step's as it is decided; counted
            outs = self._advance_checkpointed(key, w, now, progress)
        else:
            outs = w.advance(now, progress) if self.embed is None else self._embed_and_advance(key, w, now, progress)
        for o in outs:
            if isinstance(o, dict):
                yield o
                continue
            self.decisions[o.change["kind"]].inc()
            yield o.to_dict()
        token_state.write(w.state_token())
        self._compact(w, buffer, buffered)
        upcoming = w.next_event_time()
        arm(tick, nxt, None if upcoming is None or self.bounded else max(upcoming, now + 1))

    def _advance_checkpointed(self, language: str, w: StoryClusterer, now: int, progress):
        """The bounded tick with checkpoints, a generator of output dicts: the outputs of the checkpoint it
        continues first, then the writer in steps (transforms/stories/backfill/checkpoint.py advance_in_steps), each
        step's outputs checkpointed, then yielded before the next step is decided (the tick holds one step's
        outputs, never the run's)."""
        from transforms.stories.backfill import checkpoint as ckmod

        ck, loaded, ids = self._checkpoints[language]
        self._checkpoints[language] = (ck, [], ids)  # emitted once: not held after this
        yield from loaded
        del loaded
        base, last = [0], [0]

        def counted(n):  # the steps' decided counts, as one advance counts them
            last[0] = n
            if progress is not None:
                progress(base[0] + n)

        # the embedding's progress is the tick's, not the step's: "embedded k of <every article this tick decides>"
        embedded = Progress(f"[backfill] articles embedded ({language})", len(w.state.pending))

        def advance(bound):
            last[0] = 0
            made = (
                w.advance(bound, counted)
                if self.embed is None
                else self._embed_and_advance(language, w, bound, counted, (embedded, base[0]))
            )
            base[0] += last[0]
            return [o.to_dict() for o in made]

        def after(made):
            for o in made:
                self.decisions[o["change"]["kind"]].inc()
            ck.save(w, made)

        for made in ckmod.advance_in_steps(w, now, advance, ckmod.STEP, after, ck.due_in):
            yield from made
        ck.save(w, [], force=True)

    def _encoder(self, language: str, wait: bool = True):
        """(encode, model name) of the language's embedder for the ``embed`` tick: a process of its own for the
        sentence-transformers specs (transforms/stories/embed/embed_process.py: the writer would hold the GIL the encoder
        needs), else the process's embedder. ``wait=False`` only starts it: the first article does, so that its
        start-up overlaps the input."""
        from transforms.stories.embed import embed_process

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

    def _embed_and_advance(self, language: str, w: StoryClusterer, now: int, decided, report=None) -> list:
        """``report``: (Progress, articles it counted before this call) of a tick that advances in steps."""
        from transforms.stories.writer.overlap import advance_overlapped

        encode, name = self._encoder(language)

        def embed(batch):  # on the embedding thread
            for f, v in zip(batch, encode([f.embed_text for f in batch])):
                f.vector, f.model = v, name

        report, before = report or (Progress(f"[backfill] articles embedded ({language})", None), 0)
        report(before)  # the clock of its rate starts with the tick
        counted = [None]

        def progress(done, total):  # on the writer's thread, where Beam's counters count
            self.embedded.inc(done - (counted[0] or 0))
            counted[0] = done
            report.total = report.total or total
            report(before + done)

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
