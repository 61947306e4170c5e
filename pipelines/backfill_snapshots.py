"""``newsroom backfill --snapshots``: the editions stage over a backfill's story changes (:func:`add_snapshots`).

Kept beside pipelines/backfill.py (which calls it as ``add_snapshots``) so the job module stays within the house
size limit.
"""

from __future__ import annotations


def add_snapshots(outputs, job, replay: bool = True, storylines=None) -> dict:
    """``--snapshots``: the pages, pools, coverage and aliases a streaming run would have published minute by minute
    over the input, from the backfill's writer outputs (bursts, minute ranking, validated snapshots and pointers:
    transforms/editions/beam/stage.py PublishEditions). Into the run's own stores and namespace for ``--snapshots`` alone,
    an embedded store rooted at DIR for ``--snapshots DIR``. Versions are cycle minutes and documents carry no
    wall-clock time, so the same input gives byte-identical objects every run.

    ``storylines``: the run's StorylineChange records (storyline_changes.jsonl), fed to the ranker as the streaming
    job's storyline stage feeds it, so the top page keeps one story per storyline in its first five as streaming's
    does; None: no storyline rule.

    ``replay``: each edition's minute chain runs to its end in one firing (a bounded, complete input); False: one
    timer round per minute as streaming (tests compare the two). Only minutes where a page can change are built
    (transforms/editions/steady.py), unless ``--snapshots_every_minute`` (the baseline; the same bytes)."""
    from stores import StoreConfig
    from transforms.editions.beam import ChangesOfOutputs, PublishEditions
    from transforms.editions.settings import RankSettings

    own = isinstance(job.snapshots, str) and job.snapshots not in ("", "True")  # True (the flag alone) or DIR
    config = StoreConfig(backend="embedded", data_dir=job.snapshots) if own else job.store
    changes, change_only = outputs | "ChangesForEditions" >> ChangesOfOutputs(), not job.snapshots_every_minute
    if storylines is not None:
        changes = {"changes": changes, "storylines": storylines}
    ranking = RankSettings(replay=replay, change_only=change_only)
    return changes | "PublishEditions" >> PublishEditions(config, ranking, burst_polls=False)
