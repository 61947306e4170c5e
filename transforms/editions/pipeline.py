"""The editions stage as one composite: story changes -> bursts -> minute ranking -> validated snapshots.

Reads StoryChange records (decoded dicts); writes snapshots and pointers through the stores (PublishSnapshots)
and returns ``{"results": publish results, "fetch_requests": FetchRequest records, "pulses": burst pulses,
"items": snapshot items, "dead_letter": DeadLetter records of unreadable story changes}``. pipelines/stories.py (streaming) and pipelines/backfill.py (``--snapshots``) apply it
to the story changes they produce.
"""

from __future__ import annotations

import apache_beam as beam

from stores import StoreConfig
from transforms.editions.bursts import DetectBursts
from transforms.editions.publish import PublishSnapshots, TrackAliases
from transforms.editions.rank import RankEditions


class PublishEditions(beam.PTransform):
    """StoryChange records -> pages, pools, coverage and aliases in the snapshot store, pointers moved.

    Args:
        store_config: the stores (and namespace) to publish into.
        editions_path / publishers_path: editions file and publisher registry (default: packaged).
        editions_only: rank only these editions (tests and small local runs).
        overrides: ranking parameter overrides (tests).
        burst_params: a BurstParams replacing the file's (tests).
    """

    def __init__(
        self,
        store_config: StoreConfig,
        editions_path: str | None = None,
        publishers_path: str | None = None,
        editions_only: list[str] | None = None,
        overrides: dict | None = None,
        burst_params=None,
        confirm_shrink_cycles: int = 15,
    ):
        super().__init__()
        self.store_config = store_config
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.editions_only = editions_only
        self.overrides = overrides
        self.burst_params = burst_params
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def expand(self, changes):
        bursts = changes | "DetectBursts" >> DetectBursts(self.editions_path, self.publishers_path, self.burst_params)
        ranked = {"changes": changes, "pulses": bursts["pulses"]} | "RankEditions" >> RankEditions(
            self.editions_path, self.publishers_path, self.editions_only, self.overrides
        )
        aliases = changes | "TrackAliases" >> TrackAliases()
        items = (ranked["items"], aliases) | "FlattenSnapshotItems" >> beam.Flatten()
        results = items | "PublishSnapshots" >> PublishSnapshots(self.store_config, self.confirm_shrink_cycles)
        return {
            "results": results,
            "fetch_requests": bursts["fetch_requests"],
            "pulses": bursts["pulses"],
            "items": items,
            "dead_letter": ranked["dead_letter"],
        }
