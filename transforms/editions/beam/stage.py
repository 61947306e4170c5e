"""The whole editions stage as one PTransform (:class:`PublishEditions`), and the story writer outputs it reads
turned into story changes (:class:`ChangesOfOutputs`)."""

from __future__ import annotations

import apache_beam as beam

from stores import StoreConfig
from transforms.common import DEAD_LETTER
from transforms.editions.beam.announce import AnnounceBreaking
from transforms.editions.beam.detection import DetectBursts
from transforms.editions.beam.publishing import PublishSnapshots, TrackAliases
from transforms.editions.beam.ranking import RankEditions
from transforms.editions.publish.breaking import BREAKING
from transforms.editions.vocabulary.changes import change_of_output
from transforms.editions.vocabulary.settings import PublishSettings, RankSettings


class ChangesOfOutputs(beam.PTransform):
    """Story writer outputs -> StoryChange records for the editions stage (:func:`~transforms.editions.vocabulary.changes.change_of_output`)."""

    def expand(self, outputs):
        return outputs | "ChangeOfOutput" >> beam.Map(change_of_output)


class PublishEditions(beam.PTransform):
    """StoryChange records -> pages, pools, coverage and aliases in the snapshot store, pointers moved. The input is
    a PCollection of StoryChange dicts, or ``{"changes": ..., "storylines": StorylineChange records}`` (the stories
    job's storyline stage; only the ranker reads them).

    Args:
        store_config: the stores (and namespace) to publish into; its editorial controls steer the pages.
        ranking: editions, registry, overrides, replay, change-only (:class:`~transforms.editions.vocabulary.settings.RankSettings`); the editions
            file and registry are also the burst detector's, and a replay also runs the aliases tracker's minutes
            in one firing (:class:`~transforms.editions.beam.publishing.TrackAliases`).
        publishing: shrink confirmation and the Breaking purges' CDN (:class:`~transforms.editions.vocabulary.settings.PublishSettings`).
        burst_params: a BurstParams replacing the file's (tests).
        burst_polls: False (the backfill, which sends no fetch requests): no burst pull, ``fetch_requests`` empty.
        bounded: a bounded input run in batch (the backfill): each story's burst windows are counted once, with
            all their originals (:class:`~transforms.editions.beam.detection.DetectBursts`, the same pulses).
    """

    def __init__(
        self,
        store_config: StoreConfig,
        ranking: RankSettings = RankSettings(),
        publishing: PublishSettings = PublishSettings(),
        burst_params=None,
        burst_polls: bool = True,
        bounded: bool = False,
    ):
        super().__init__()
        self.store_config, self.ranking, self.publishing = store_config, ranking, publishing
        self.burst_params, self.burst_polls, self.bounded = burst_params, burst_polls, bounded

    def expand(self, changes):
        storylines = None
        if isinstance(changes, dict):  # {"changes": StoryChange dicts, "storylines": StorylineChange records}
            changes, storylines = changes["changes"], changes.get("storylines")
        ranking, publishing = self.ranking, self.publishing
        bursts_out = changes | "DetectBursts" >> DetectBursts(
            ranking.editions_path,
            ranking.publishers_path,
            self.burst_params,
            self.store_config,
            self.burst_polls,
            self.bounded,
        )
        inputs = {"changes": changes, "pulses": bursts_out["pulses"]}
        if storylines is not None:
            inputs["storylines"] = storylines  # to the ranker only: bursts and aliases are about stories
        ranked = inputs | "RankEditions" >> RankEditions(ranking, self.store_config)
        aliases = changes | "TrackAliases" >> TrackAliases(store_config=self.store_config, replay=ranking.replay)
        # Pages and aliases are published by two steps, not one after a Flatten of the two: FnApiRunner (the
        # backfill's --snapshots) materialises every multi-input Flatten, which held every page document of the
        # whole replay in memory before the first was published (7.3 GB RSS at 3,811 articles over 30 simulated days).
        pages = ranked["items"] | "PublishSnapshots" >> PublishSnapshots(
            self.store_config, publishing.confirm_shrink_cycles
        )
        published_aliases = aliases | "PublishAliases" >> PublishSnapshots(
            self.store_config, publishing.confirm_shrink_cycles
        )
        # only pages make Breaking candidates (breaking.candidates): the aliases' BREAKING output is always empty
        breaking = pages[BREAKING] | "AnnounceBreaking" >> AnnounceBreaking(
            self.store_config, publishing.cdn, publishing.cdn_url_map
        )
        return {
            "results": (pages.results, published_aliases.results) | "FlattenResults" >> beam.Flatten(),
            "breaking": breaking,
            "fetch_requests": bursts_out["fetch_requests"],
            "pulses": bursts_out["pulses"],
            "items": ranked["items"],  # pages, pools, coverage (no Flatten with the aliases: see above)
            "aliases": aliases,
            "dead_letter": ranked[DEAD_LETTER],
        }
