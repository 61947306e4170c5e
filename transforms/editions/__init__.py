"""Editions: burst detection, minute-by-minute ranking per edition, representatives, validated snapshots.

Data: ``editions.json`` (editions, sections, gazetteer, ranking and burst parameters; :mod:`.config`,
:mod:`.params`). Domain logic (plain Python + numpy, no Beam): :mod:`.book` (story aggregates folded from story
changes), :mod:`.scoring` (vectorised scores), :mod:`.representatives`, :mod:`.assembly` (hysteresis,
diversity, Breaking pin), :mod:`.context` (the cycle's one frozen context), :mod:`.cycle` (one edition's cycle,
its phases functions of the context), :mod:`.overlays` (the cycle's last phases: controls, takedowns, cities, topic
and storyline pages), :mod:`.documents` (pages, pools, coverage,
validation), :mod:`.bursts` (the Breaking rule, burst polls), :mod:`.rank` (EditionRanker: fold and rank minute by
minute), :mod:`.publish` (SnapshotPublisher, the aliases map), :mod:`.changes` (story changes in, dead letters
out), :mod:`.settings` (what a job tells the stage, as typed values). Beam: the :mod:`.beam` sub-package, one
module per concern (detection, ranking, publishing, announce; :mod:`.beam.stage` holds PublishEditions, the whole
stage, used by pipelines/stories.py and by the backfill's ``--snapshots``). The stage's commands (``newsroom
rollback``, ``control``, ``takedown``) live in pipelines/commands/. Benchmark: benchmarks/rank_bench.py.
"""
