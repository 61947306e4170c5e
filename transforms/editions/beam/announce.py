"""Announcing Breaking in Beam: keyed by edition, the first published page showing a Breaking story emits its
``Breaking`` record (:mod:`transforms.editions.publish.breaking`), and every section page newly showing it is purged at the
CDN (:class:`AnnounceBreaking`, applied by :class:`~transforms.editions.beam.stage.PublishEditions` to the breaking
candidates of :class:`~transforms.editions.beam.publishing.PublishSnapshots`, after the pointers moved)."""

from __future__ import annotations

import logging
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import window
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.typehints import KV

from stores import StoreConfig
from transforms.editions.publish.breaking import HOT, KEEP_MS, Ledger, purge_failed_event, purge_reason

log = logging.getLogger(__name__)


class AnnounceBreakingFn(beam.DoFn):
    """KV(edition, candidate) -> Breaking records, once per story and edition (state LEDGER: the edition's
    :class:`~transforms.editions.publish.breaking.Ledger`); purges the story pages of hot stories whose headline or labels
    changed (hot candidates, :func:`~transforms.editions.publish.breaking.hot_candidate`, emit no record); purges each
    section page the first time it shows the story
    (``cdn`` "none": no purge; otherwise ``stores.cdn.open_purger(store_config, cdn, url_map)``). A purge that
    fails is logged (``newsroom.cdn_purge_failed``, :func:`~transforms.editions.publish.breaking.purge_failed_event`) and
    raised: the ledger is not written, so the bundle's retry purges (and announces) again."""

    LEDGER = ReadModifyWriteStateSpec("ledger", PickleCoder())

    def __init__(
        self, store_config: StoreConfig, cdn: str | None = "none", url_map: str | None = None, keep_ms=KEEP_MS
    ):
        self.store_config, self.cdn, self.url_map, self.keep_ms = store_config, cdn, url_map, keep_ms
        self.announced = Metrics.counter("breaking", "announced")
        self.purged = Metrics.counter("breaking", "pages_purged")
        self.hot_purged = Metrics.counter("breaking", "hot_stories_purged")

    def setup(self):
        self.purger = None
        if self.cdn != "none":
            from stores.cdn import open_purger

            self.purger = open_purger(self.store_config, cdn=self.cdn, url_map=self.url_map)

    def _purge(self, edition: str, pointer: str, section: str, story_id: int, kind: str) -> None:
        try:
            self.purger.purge_pointers([pointer], purge_reason(edition, story_id, kind))
        except Exception as exc:  # logged for the purge-failure alert, then raised: the bundle retries as before
            log.warning("%s", purge_failed_event(edition, section, story_id, exc))
            raise
        self.purged.inc()

    def process(self, element, ledger=beam.DoFn.StateParam(LEDGER)):
        edition, cand = element
        led = ledger.read() or Ledger()
        if cand.get("kind") == HOT:  # the top page's hottest stories: purge those whose headline or labels changed
            changed = led.hot_changes(cand)
            if self.purger is not None:
                for sid in changed:
                    self._purge(edition, f"story/{sid}", "top", sid, HOT)
            self.hot_purged.inc(len(changed))
            ledger.write(led)
            return
        record, purge = led.see(edition, cand, self.keep_ms)
        if purge and self.purger is not None:
            self._purge(edition, f"{edition}/{cand['section']}", cand["section"], cand["story_id"], "breaking")
        ledger.write(led)
        if record is not None:
            self.announced.inc()
            Metrics.counter("breaking", f"announced_{edition}").inc()  # per edition (the dashboard's Breaking chart)
            yield record


class AnnounceBreaking(beam.PTransform):
    """Breaking candidates ``(edition, candidate)`` -> Breaking records (schemas/avro/breaking.avsc).

    Args:
        store_config: the stores (the embedded purge queue lives in its SQLite file).
        cdn / url_map: the purger (stores.cdn.open_purger); "none" (default): records only, no purge.
    """

    def __init__(self, store_config: StoreConfig, cdn: str | None = "none", url_map: str | None = None):
        super().__init__()
        self.store_config, self.cdn, self.url_map = store_config, cdn, url_map

    def expand(self, candidates):
        return (
            candidates
            | "TypeEditionKeys" >> beam.Map(lambda kv: kv).with_output_types(KV[str, Any])
            | "CandidatesToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
            | "OncePerStoryAndEdition" >> beam.ParDo(AnnounceBreakingFn(self.store_config, self.cdn, self.url_map))
        )
