"""``newsroom authority``: compute per-publisher, per-section authority from the stores (batch Beam job).

Reads every stored story (StoryStore.story_ids, then get_story) and its members' article records (ArticleStore) of
the stores ``--backend`` names (embedded by default, Bigtable + GCS with ``--backend=gcp``), counts per publisher
and section the original reporting share, first reports, originals picked up by other ownership groups and
correction notices, and the abuse that cuts authority (repeated re-dating, copies of itself under other URLs),
shrinks them toward the hand-set registry (``--publishers``, default the packaged file) and
writes the result as ``authority/v{n}.json`` in the snapshot store, moving the ``authority`` pointer
(transforms/authority). The editions stage (stories job, backfill ``--snapshots``) overlays it on the hand-set
registry when its workers start; without it, the hand-set file alone. The formula and the reasons for its
weights: transforms/authority/scoring.py.

    Start -> ScanStoryIds -> SpreadStories -> ReadStoryFacts -> StoryEvidence -> SumCounts -> AllCounts
          -> PublishAuthority (CountStories as side input)

Runner: without ``--runner`` the bounded job runs on FnApiRunner in this process; ``--runner=DataflowRunner`` submits
it (templates/authority, scheduled by terraform) and waits; ``--dry_run=True`` translates it without submitting.
Progress (stories scanned, the published version and the largest moves) is logged at INFO.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions
from transforms.authority.scoring import AuthorityParams

log = logging.getLogger("newsroom.authority")


class AuthorityOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--publishers",
            default=None,
            help="Hand-set publisher registry JSON (the prior, ownership groups): a path. "
            "Default: the packaged transforms/data/publishers.json.",
        )
        parser.add_argument(
            "--editions",
            default=None,
            help="Editions file (its section labels give a story's section): a path. Default: the packaged one.",
        )
        parser.add_argument(
            "--window_days",
            type=float,
            default=90.0,
            help="Only stories with an article first seen in the last this many days count; 0 = every stored "
            "story. Default: 90.",
        )
        parser.add_argument(
            "--prior_weight",
            type=float,
            default=50.0,
            help="Pseudo-count of the hand-set prior, in articles: a publisher with this many articles is half "
            "prior, half evidence. Default: 50.",
        )
        parser.add_argument(
            "--page_size",
            type=int,
            default=1000,
            help="Story ids per store scan page (one progress line each). Default: 1000.",
        )


@dataclass(frozen=True)
class AuthorityJob:
    """The authority job's options, resolved once (:func:`resolve`)."""

    run: JobRun
    params: AuthorityParams
    publishers: str | None = None
    editions: str | None = None
    window_days: float = 90.0
    page_size: int = 1000

    def since_ms(self, now_s: float | None = None) -> int:
        """The window's lower bound in ms (0: no bound), fixed when the graph is built."""
        if not self.window_days:
            return 0
        return int(((time.time() if now_s is None else now_s) - self.window_days * 86400) * 1000)


def resolve(options: PipelineOptions) -> AuthorityJob:
    """The job's options, checked once (ValueError naming the flag when one is out of range)."""
    o = options.view_as(AuthorityOptions)
    run = JobRun.of(options)
    if not o.prior_weight >= 0:
        raise ValueError(f"--prior_weight must be >= 0, got {o.prior_weight}")
    if not o.window_days >= 0:
        raise ValueError(f"--window_days must be >= 0, got {o.window_days}")
    if not o.page_size > 0:
        raise ValueError(f"--page_size must be > 0, got {o.page_size}")
    return AuthorityJob(
        run=run,
        params=AuthorityParams(prior_weight=float(o.prior_weight)),
        publishers=o.publishers,
        editions=o.editions,
        window_days=o.window_days,
        page_size=o.page_size,
    )


def build_pipeline(p, job: AuthorityJob) -> dict:
    """Adds the job to pipeline ``p``; returns its main PCollections (for tests)."""
    from transforms.authority.beam import add_authority

    return add_authority(
        p,
        job.run.store,
        job.params,
        publishers_path=job.publishers,
        editions_path=job.editions,
        since_ms=job.since_ms(),
        page_size=job.page_size,
    )


def _progress_to_stderr() -> None:
    """The job's progress lines (logger ``newsroom.authority``) on stderr at INFO, also under ``newsroom``."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def run(argv: list[str] | None = None, wait: bool = True):
    """``python -m pipelines.authority ARGS`` and ``newsroom authority ARGS``: build, run and (by default) wait.
    Returns the PipelineResult."""
    _progress_to_stderr()
    job = resolve(PipelineOptions(argv))
    job.run.refuse_non_production_graph("authority")
    return job.run.launch("authority", argv, False, lambda p: build_pipeline(p, job), wait=wait)


if __name__ == "__main__":
    from pipelines.command_errors import run_job

    sys.exit(run_job("authority", run, sys.argv[1:]))
