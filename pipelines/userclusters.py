"""``newsroom userclusters``: the daily MinHash user clusters of For you's "readers like you" (batch Beam job).

Reads every reader's clicks of the last ``--lookback_days`` (90) from the click log the co-visitation job appends
(the reads it accepted, kept 180 days: stores/userclusters.py) together with the profile store's recent reads
(``ProfileStore.scan_reads``), paused readers left out, in ``--splits`` reader-id ranges read in parallel (a
worker per range: more workers, a shorter run), puts each reader into ``--clusters_per_reader`` (q) clusters of ``--hashes_per_cluster`` (p) MinHash values
concatenated (Das et al. 2007; the choice of
p = 3, q = 10 and the other thresholds: transforms/userclusters/minhash.py), drops clusters under
``--min_members`` members, and replaces every scanned reader's memberships in the user-cluster store
(stores/userclusters.py: embedded SQLite or the Bigtable table ``userclusters``). The co-visitation job keeps the
clusters' click counts online from then on; the origin reads both (serving/personal/clusters.py).

    Start -> KeyRanges -> SpreadRanges -> ReadRanges -> SpreadReaders -> ClustersOfReader -> MembersPerCluster -> KeepLargeClusters
          -> ClustersPerReader -> WriteMemberships      (transforms/userclusters/beam.py add_daily_clusters)

Runner: without ``--runner`` the bounded job runs on FnApiRunner in this process; ``--runner=DataflowRunner``
submits it (templates/userclusters, launched daily by Cloud Scheduler, terraform/modules/stack). A run takes its
start time as the memberships' time; the origin ignores memberships older than two days, so a day's missed run
costs nothing and a stopped schedule fades the source out instead of serving week-old clusters.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions
from transforms.userclusters.minhash import Params

log = logging.getLogger("newsroom.userclusters")


class UserClusterOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--hashes_per_cluster",
            type=int,
            default=3,
            help="p: MinHash values concatenated into one cluster id; two readers at Jaccard similarity J share "
            "it with probability J^p. Default: 3.",
        )
        parser.add_argument(
            "--clusters_per_reader",
            type=int,
            default=10,
            help="q: clusters per reader (independent repetitions of p hashes). Default: 10.",
        )
        parser.add_argument(
            "--min_stories",
            type=int,
            default=3,
            help="Readers with fewer distinct stories read are not clustered. Default: 3.",
        )
        parser.add_argument(
            "--min_members",
            type=int,
            default=5,
            help="Clusters with fewer readers are dropped (no reader's clicks can be read off a cluster's "
            "counts). Default: 5.",
        )
        parser.add_argument(
            "--lookback_days",
            type=float,
            default=90.0,
            help="Only reads of the last this many days count (the click log keeps 180 days, the profiles' reads "
            "30). Default: 90.",
        )
        parser.add_argument(
            "--splits",
            type=int,
            default=64,
            help="Reader-id ranges read in parallel (fewer when the click log is small). Default: 64.",
        )


@dataclass(frozen=True)
class UserClustersJob:
    """The userclusters job's options, resolved once (:func:`resolve`)."""

    run: JobRun
    params: Params
    splits: int = 64


def resolve(options: PipelineOptions) -> UserClustersJob:
    """The job's options, checked once (ValueError naming the flag when one is out of range)."""
    o = options.view_as(UserClusterOptions)
    run = JobRun.of(options)
    for flag in ("hashes_per_cluster", "clusters_per_reader", "min_stories", "min_members", "lookback_days", "splits"):
        if not getattr(o, flag) > 0:
            raise ValueError(f"--{flag} must be > 0, got {getattr(o, flag)}")
    p, q = int(o.hashes_per_cluster), int(o.clusters_per_reader)
    if p * q > 1024:
        raise ValueError(f"--hashes_per_cluster x --clusters_per_reader must be at most 1024, got {p * q}")
    params = Params(
        p=p,
        q=q,
        min_stories=int(o.min_stories),
        min_members=int(o.min_members),
        lookback_ms=int(o.lookback_days * 86_400_000),
    )
    if o.lookback_days > 180:
        raise ValueError(f"--lookback_days must be at most 180 (the click log's age), got {o.lookback_days}")
    return UserClustersJob(run=run, params=params, splits=int(o.splits))


def build_pipeline(p, job: UserClustersJob, now_ms: int | None = None) -> dict:
    """Adds the job to pipeline ``p``; returns its main PCollections (for tests). ``now_ms``: the run's time."""
    from transforms.userclusters.beam import add_daily_clusters

    at = int(time.time() * 1000) if now_ms is None else int(now_ms)
    return {"written": add_daily_clusters(p, job.run.store, job.params, at, job.splits)}


def run(argv: list[str] | None = None, wait: bool = True, now_ms: int | None = None):
    """``python -m pipelines.userclusters ARGS`` and ``newsroom userclusters ARGS``: build, run and (by default)
    wait. Returns the PipelineResult."""
    job = resolve(PipelineOptions(argv))
    job.run.refuse_non_production_graph("userclusters")
    return job.run.launch("userclusters", argv, False, lambda p: build_pipeline(p, job, now_ms), wait=wait)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    from pipelines.command_errors import run_job

    sys.exit(run_job("userclusters", run, sys.argv[1:]))
