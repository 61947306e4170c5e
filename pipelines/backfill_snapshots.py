"""``newsroom backfill --snapshots``: the editions stage over a backfill's story changes (:func:`add_snapshots`).

Kept beside pipelines/backfill.py (which calls it as ``add_snapshots``) so the job module stays within the house
size limit.
"""

from __future__ import annotations


def add_snapshots(outputs, options, replay: bool = True) -> dict:
    """``--snapshots``: the pages, pools, coverage and aliases a streaming run would have published minute by minute
    over the input, from the backfill's writer outputs (bursts, minute ranking, validated snapshots and pointers:
    transforms/editions/beam.py PublishEditions). Into the run's own stores and namespace for ``--snapshots`` alone,
    an embedded store rooted at DIR for ``--snapshots DIR``. Versions are cycle minutes and documents carry no
    wall-clock time, so the same input gives byte-identical objects every run.

    ``replay``: each edition's minute chain runs to its end in one firing (a bounded, complete input); False: one
    timer round per minute as streaming (tests compare the two). Only minutes where a page can change are built
    (transforms/editions/steady.py), unless ``--snapshots_every_minute`` (the baseline; the same bytes)."""
    from pipelines.backfill import _options_class
    from pipelines.options import store_config
    from stores import StoreConfig
    from transforms.editions.beam import ChangesOfOutputs, PublishEditions

    o = options.view_as(_options_class())
    own = isinstance(o.snapshots, str) and o.snapshots not in ("", "True")  # True (the flag alone) or DIR
    config = StoreConfig(backend="embedded", data_dir=o.snapshots) if own else store_config(options)
    changes, change_only = outputs | "ChangesForEditions" >> ChangesOfOutputs(), not o.snapshots_every_minute
    return changes | "PublishEditions" >> PublishEditions(
        config, replay=replay, burst_polls=False, change_only=change_only
    )
