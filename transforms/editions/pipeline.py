"""The editions stage as one composite: story changes -> bursts -> minute ranking -> validated snapshots.

Reads StoryChange records (decoded dicts), or the story writer's outputs (``{"change": ..., "members": ...}``,
transforms/stories/cluster.py) through :func:`changes_of_outputs`; writes snapshots and pointers through the stores
(PublishSnapshots) and returns ``{"results": publish results, "fetch_requests": FetchRequest records, "pulses": burst
pulses, "items": snapshot items, "dead_letter": DeadLetter records of unreadable story changes}``.
pipelines/stories.py (streaming) and pipelines/backfill.py (``--snapshots``) apply it to the story changes they
produce; neither is imported here (a transform takes what it needs as parameters).
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
        replay: the input is bounded and complete (backfill): see :class:`~transforms.editions.rank.RankEditions`.
            Default False.
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
        replay: bool = False,
    ):
        super().__init__()
        self.store_config = store_config
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.editions_only = editions_only
        self.overrides = overrides
        self.burst_params = burst_params
        self.confirm_shrink_cycles = confirm_shrink_cycles
        self.replay = replay

    def expand(self, changes):
        bursts = changes | "DetectBursts" >> DetectBursts(self.editions_path, self.publishers_path, self.burst_params)
        ranked = {"changes": changes, "pulses": bursts["pulses"]} | "RankEditions" >> RankEditions(
            self.editions_path, self.publishers_path, self.editions_only, self.overrides, self.replay
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


SYNTHETIC_URL = "urn:newsroom:article:{article_id}"


def change_of_output(out: dict) -> dict:
    """The StoryChange of a writer output. A NEW_STORY/ASSIGN without its Article record (a backfill of labelled
    JSONL: the reader keeps no record) gets a minimal one from the writer's member row -- title, source as the
    publisher, first-seen time, copy flag -- and a ``urn:newsroom:article:{id}`` URL, since no URL was kept."""
    ch = out["change"]
    if ch.get("kind") not in ("NEW_STORY", "ASSIGN") or ch.get("article") or not ch.get("article_id"):
        return ch
    row = (out.get("members") or {}).get(ch["article_id"])
    if not row:
        return ch
    aid = ch["article_id"]
    at = int(row.get("at") or ch["at"])
    article = {
        "article_id": aid,
        "version": 1,
        "canonical_url": SYNTHETIC_URL.format(article_id=aid),
        "publisher_id": row.get("source") or "unknown",
        "publisher_name": None,
        "language": ch["language"],
        "title": row.get("title") or "",
        "lede": "",
        "image_url": None,
        "published_at": at,
        "first_seen_at": at,
        "section": None,
        "topics": [],
        "is_opinion": False,
        "is_fact_check": False,
        "copy_of": row.get("copy_of"),
        "entities": [],
    }
    return dict(ch, article=article)


class ChangesOfOutputs(beam.PTransform):
    """Writer outputs -> StoryChange records for the editions stage (see :func:`change_of_output`)."""

    def expand(self, outputs):
        return outputs | "ChangeOfOutput" >> beam.Map(change_of_output)


def add_backfill_snapshots(outputs, store_config: StoreConfig, replay: bool = True) -> dict:
    """The backfill's ``--snapshots`` (pipelines/backfill.py): the pages, pools, coverage and aliases a streaming run
    would have published minute by minute over the input, from the backfill's writer outputs, into ``store_config``
    (the backfill passes the run's own stores and namespace for ``--snapshots`` alone, an embedded store rooted at DIR
    for ``--snapshots DIR``). Versions are cycle minutes and documents carry no wall-clock time, so the same input
    gives byte-identical objects every run.
    """
    changes = outputs | "ChangesForEditions" >> ChangesOfOutputs()
    return changes | "PublishEditions" >> PublishEditions(store_config, replay=replay)
