"""Editions: burst detection, minute-by-minute ranking per edition, representatives, validated snapshots.

Rooms, bottom to top (a room imports only the rooms below it; tests/test_layering.py holds the order):

1. :mod:`.vocabulary`: the shared floor: editions, sections and regions (``editions.json``), ranking and burst
   parameters, the job's settings, the story changes read and the documents served;
2. :mod:`.book`: :class:`~.book.StoryBook`, one language's live stories folded from story changes (tables,
   headline checks, the storyline map);
3. :mod:`.bursts`: the Breaking rule, burst polls and the coverage memory behind the burst pull;
4. :mod:`.cycle`: one edition's ranking cycle (scores, smoothing, representatives, assembly, fairness, trust; the
   cycle's context and the :class:`~.cycle.EditionMemory` kept between cycles);
5. :mod:`.overlays`: the cycle's last phases (editorial controls, takedowns, cities, topic and storyline pages);
6. :mod:`.ranker`: :class:`~.ranker.EditionRanker`, folding and ranking minute by minute; the change-only replay;
7. :mod:`.publish`: :class:`~.publish.SnapshotPublisher`, the aliases map and the Breaking announcements;
8. :mod:`.beam`: the Beam layer, one module per concern (:mod:`.beam.stage` holds PublishEditions, the whole stage,
   used by pipelines/stories.py and by the backfill's ``--snapshots``).

Everything but :mod:`.beam` is plain Python + numpy (no Beam). Each room's ``__init__`` says what it exports and
what it may import. The stage's commands (``newsroom rollback``, ``control``, ``takedown``) live in commands/.
Benchmark: benchmarks/rank_bench.py.
"""
