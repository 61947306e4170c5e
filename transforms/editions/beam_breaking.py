"""The Beam layer of Breaking announcements (:mod:`transforms.editions.breaking`): keyed by edition, the first
published page showing a Breaking story emits its ``Breaking`` record, and every section page newly showing it is
purged at the CDN. Applied by :class:`~transforms.editions.beam.PublishEditions` to the breaking candidates of
:class:`~transforms.editions.beam.PublishSnapshots` (after the pointers moved)."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import window
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.typehints import KV

from stores import StoreConfig
from transforms.editions.breaking import KEEP_MS, Ledger, purge_reason


class AnnounceBreakingFn(beam.DoFn):
    """KV(edition, candidate) -> Breaking records, once per story and edition (state LEDGER: the edition's
    :class:`~transforms.editions.breaking.Ledger`); purges each section page the first time it shows the story
    (``cdn`` "none": no purge; otherwise ``stores.cdn.open_purger(store_config, cdn, url_map)``)."""

    LEDGER = ReadModifyWriteStateSpec("ledger", PickleCoder())

    def __init__(
        self, store_config: StoreConfig, cdn: str | None = "none", url_map: str | None = None, keep_ms=KEEP_MS
    ):
        self.store_config, self.cdn, self.url_map, self.keep_ms = store_config, cdn, url_map, keep_ms
        self.announced = Metrics.counter("breaking", "announced")
        self.purged = Metrics.counter("breaking", "pages_purged")

    def setup(self):
        self.purger = None
        if self.cdn != "none":
            from stores.cdn import open_purger

            self.purger = open_purger(self.store_config, cdn=self.cdn, url_map=self.url_map)

    def process(self, element, ledger=beam.DoFn.StateParam(LEDGER)):
        edition, cand = element
        led = ledger.read() or Ledger()
        record, purge = led.see(edition, cand, self.keep_ms)
        if purge and self.purger is not None:
            self.purger.purge_pointers([f"{edition}/{cand['section']}"], purge_reason(edition, cand["story_id"]))
            self.purged.inc()
        ledger.write(led)
        if record is not None:
            self.announced.inc()
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
