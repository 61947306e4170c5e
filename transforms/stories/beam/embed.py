"""EmbedArticles: ArticleFeatures dicts -> the same with their vectors (and link vectors), by the embedder each
language is routed to (transforms/stories/embed/embed.py), re-timestamped at their first-seen time.

``defer`` (the local backfill): when no link vectors are wanted the batches pass on unembedded and the writer's one
firing embeds them in decision order (:class:`transforms.stories.beam.writer.ClusterStoriesFn` ``embed``).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from transforms.stories.beam.common import STAGE
from transforms.stories.embed import embed as embmod
from transforms.stories.vocabulary.features import ArticleFeatures


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
        routing: embedder spec or ``auto`` (transforms/stories/embed/embed.py).
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
