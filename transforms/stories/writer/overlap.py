"""The backfill's writer with its embedding overlapped: vectors are computed batch by batch, in decision order, on a
background thread while the writer decides the batches already embedded.

Reads a :class:`~transforms.stories.writer.cluster.StoryClusterer` whose queue holds articles without vectors, and an
``embed(batch)`` callable that sets ``vector`` and ``model`` on each article of a batch; returns the writer's outputs,
exactly those of ``writer.advance(until)`` on the same articles embedded beforehand.

Why it is identical: the writer decides every event (article, expiry, repair tick) in (time, kind, id) order, and an
event depends only on the writer's state and the events before it. Embedding runs ahead over the queued articles in
that same order; after batch k the writer advances to one millisecond before the first article of batch k + 1, so
every article it can meet is already embedded, and the events it processes are the very sequence of one
``advance(until)`` (the streaming job advances in such steps, one per timer firing, and decides the same). The vectors
do not depend on the batching (transforms/stories/embed/embed.py: equal-length blocks, per-token int8 scales), so the
articles carry the same bits as when the embedding stage ran first.

The worker model: this module runs one producer thread that hands each batch to the encoder and waits; the caller
chooses where the encoder runs. The backfill (transforms/stories/beam/writer.py ClusterStoriesFn ``embed``) gives it a
process of its own for the sentence-transformers models (transforms/stories/embed/embed_process.py: beside a plain-Python
writer thread the encoder's GIL-bound forward pass would take turns with the writer instead of overlapping it), which
spreads each call over every core with its own threads and loads the model once; a process pool would load it once
per worker, and the encoder's threads already use every core.

Bounded memory: the producer runs at most :data:`AHEAD` batches ahead of the writer. An embedding error is raised on
the writer's thread (the tick fails, as it would have failed in the embedding stage); a writer error stops the
producer before its next batch. Neither leaves a thread behind.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

AHEAD = 2  # batches embedded ahead of the writer: enough to keep the encoder busy while the writer catches up
_DONE = object()


def advance_overlapped(
    writer,
    until: int,
    embed: Callable[[list], None],
    batch_size: int,
    progress: Callable[[int, int], None] | None = None,
    decided: Callable[[int], None] | None = None,
) -> list:
    """``writer.advance(until)``, embedding the queued articles that lack a vector on the way (see the module
    docstring). ``progress(done, total)``: of the ``total`` queued articles, ``done`` have a vector; called on the
    writer's thread after each batch is embedded (not at all when none needed it). ``decided(n)``: the writer's
    progress (:meth:`StoryClusterer.advance`), counted over the whole call as one ``advance`` counts it."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")
    queued = [f for f in writer.queued() if f.first_seen_at <= until]
    need = [f for f in queued if f.vector is None]
    done = len(queued) - len(need)
    if not need:
        return writer.advance(until, decided)
    count = [0]

    def advance(bound: int) -> list:
        start = count[0]

        def step(n: int) -> None:
            count[0] = start + n
            if decided is not None:
                decided(count[0])

        return writer.advance(bound, step)

    batches = [need[i : i + batch_size] for i in range(0, len(need), batch_size)]
    ready: queue.Queue = queue.Queue(maxsize=AHEAD)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    return
                embed(batch)
                if not put(batch):
                    return
            put(_DONE)
        except BaseException as exc:  # raised again on the writer's thread
            put(exc)

    producer = threading.Thread(target=produce, name="embed-ahead", daemon=True)
    producer.start()
    out: list = []
    try:
        for k in range(len(batches)):
            item = ready.get()
            if isinstance(item, BaseException):
                raise item
            done += len(item)
            if progress is not None:
                progress(done, len(queued))
            bound = until if k + 1 == len(batches) else min(until, batches[k + 1][0].first_seen_at - 1)
            out.extend(advance(bound))
        out.extend(advance(until))  # events after the last article (expiries, repair ticks)
    finally:
        stop.set()
        producer.join()
    return out
