"""Editions: burst detection, minute-by-minute ranking per edition, representatives, validated snapshots.

Data: ``editions.json`` (editions, sections, gazetteer, ranking and burst parameters; :mod:`.config`,
:mod:`.params`). Domain logic (plain Python + numpy, no Beam): :mod:`.book` (story aggregates folded from story
changes), :mod:`.scoring` (vectorised scores), :mod:`.representatives`, :mod:`.assembly` (hysteresis,
diversity, Breaking pin), :mod:`.cycle` (one edition's cycle), :mod:`.documents` (pages, pools, coverage,
validation), :mod:`.bursts` (the Breaking rule). Beam: :mod:`.bursts` (DetectBursts), :mod:`.rank`
(RankEditions), :mod:`.publish` (PublishSnapshots, TrackAliases), :mod:`.pipeline` (PublishEditions: the whole
stage, used by pipelines/stories.py and by the backfill's ``--snapshots``). CLI: :mod:`.rollback`
(``newsroom rollback``). Benchmark: benchmarks/rank_bench.py.
"""
