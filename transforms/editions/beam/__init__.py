"""The Beam layer of the editions stage, one module per concern.

story changes -> DetectBursts (:mod:`.detection`: pulses, burst polls) -> RankEditions (:mod:`.ranking`: a minute
timer per edition) -> snapshot items -> PublishSnapshots (:mod:`.publishing`: validate, store, move pointers) ->
AnnounceBreaking (:mod:`.announce`: one Breaking record per story and edition, CDN purges); TrackAliases
(:mod:`.publishing`) adds the merged-story map. PublishEditions (:mod:`.stage`) is the whole stage, applied by
pipelines/stories.py (streaming) and by the backfill's ``--snapshots`` (:func:`pipelines.backfill.add_snapshots`), which pass
it what it needs as typed settings (:mod:`transforms.editions.vocabulary.settings`): a transform never reads a job's options.
:mod:`.counters` turns the plain ``count(name, n)`` callables into Beam counters.

The logic is plain Python in the stage's other modules, which say why it is so: :mod:`transforms.editions.bursts.bursts`
(the Breaking rule, burst polls), :mod:`transforms.editions.ranker.rank` (EditionRanker: the book, the minute cycle, the
state layout), :mod:`transforms.editions.publish.snapshots` (SnapshotPublisher, the aliases map),
:mod:`transforms.editions.vocabulary.changes` (story changes in, dead letters out).

Outputs of :class:`PublishEditions`: ``{"results": publish results, "breaking": Breaking records (once per story
and edition, :mod:`transforms.editions.publish.breaking`), "fetch_requests": FetchRequest records, "pulses": burst pulses,
"items": snapshot items, "dead_letter": DeadLetter records of unreadable story changes}``.

Exports: the stage's PTransforms (below); the DoFns from their modules.
May import: every room of the editions stage, Beam, ``stores`` (through stores.beam_io), ``transforms.common`` and
``transforms.timers``.
"""

from transforms.editions.beam.announce import AnnounceBreaking
from transforms.editions.beam.detection import DetectBursts
from transforms.editions.beam.publishing import PublishSnapshots, TrackAliases
from transforms.editions.beam.ranking import RankEditions
from transforms.editions.beam.stage import ChangesOfOutputs, PublishEditions

__all__ = [
    "AnnounceBreaking",
    "ChangesOfOutputs",
    "DetectBursts",
    "PublishEditions",
    "PublishSnapshots",
    "RankEditions",
    "TrackAliases",
]
