"""Pipeline options shared by every Newsroom job: where the stores live, which namespace a run writes to, and how
the job runs.

Each job subclasses :class:`StoreOptions` with its own flags and resolves its PipelineOptions once, in its
``resolve(options)``, into a frozen value (:class:`JobRun` and the job's own fields) that its graph and its ``run``
read; nothing downstream reads or changes the PipelineOptions again. Help strings state the default; invalid values
fail at that resolution, naming the flag (``newsroom`` exits 2 with the message).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions, StandardOptions, TestOptions

from stores import StoreConfig, add_store_arguments, config_from_args

log = logging.getLogger(__name__)

# The runners that run the job in this process (the embedded stack is what they are for).
LOCAL_RUNNERS = (None, "", "DirectRunner", "BundleBasedDirectRunner", "FnApiRunner", "SwitchingDirectRunner", "local")


class StoreOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add_store_arguments(parser)


def store_config(options: PipelineOptions) -> StoreConfig:
    """The StoreConfig a job's options describe. Raises ValueError naming the flag when they are inconsistent."""
    return config_from_args(options.view_as(StoreOptions), project=options.view_as(GoogleCloudOptions).project)


@dataclass(frozen=True)
class JobRun:
    """How a job runs and where its stores live, read once from Beam's options and the store flags.

    runner: ``--runner`` as given (a name or a runner object); None: the job's local default (:meth:`runner_for`).
    streaming: ``--streaming`` was given. dry_run: ``--dry_run`` was given (DataflowRunner then only translates).
    """

    store: StoreConfig
    runner: object = None
    streaming: bool = False
    dry_run: bool = False

    @classmethod
    def of(cls, options: PipelineOptions) -> JobRun:
        std = options.view_as(StandardOptions)
        return cls(
            store=store_config(options),
            runner=std.runner,
            streaming=bool(std.streaming),
            dry_run=bool(options.view_as(TestOptions).dry_run),
        )

    @property
    def dataflow(self) -> bool:
        return isinstance(self.runner, str) and self.runner.endswith("DataflowRunner")

    @property
    def translate_only(self) -> bool:
        """``--runner=DataflowRunner --dry_run=True``: the graph is translated, nothing runs, nothing is written.
        (Beam's DataflowRunner treats any ``--dry_run`` value as true; other runners ignore the flag and run.)"""
        return self.dataflow and self.dry_run

    @property
    def local(self) -> bool:
        """The job runs in this process: it may create what it reads (subscriptions) before the graph starts."""
        return not isinstance(self.runner, str) or self.runner in LOCAL_RUNNERS

    def runner_for(self, streaming: bool):
        """The runner the job uses: ``--runner`` as given (for example DataflowRunner); without it,
        BundleBasedDirectRunner for a streaming job on this machine (the only local runner that hosts a live
        Pub/Sub source, LOCAL_STACK.md), FnApiRunner for a bounded one."""
        if self.runner is not None:
            return self.runner
        if streaming:
            from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

            return BundleBasedDirectRunner()
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        return FnApiRunner()

    def launch(
        self,
        name: str,
        argv: list[str] | None,
        streaming: bool,
        build: Callable,
        *,
        wait: bool = True,
        subscription: tuple[str, str] | None = None,
    ):
        """Build the job's graph on its runner (:meth:`runner_for`) with ``build(pipeline)``, run it and, unless
        ``wait=False``, wait for it; returns the PipelineResult. ``subscription=(topic, name)``: a local run creates
        it before the graph starts (on Dataflow, Terraform provisions subscriptions and nothing is contacted here)."""
        import apache_beam as beam

        runner = self.runner_for(streaming)
        if subscription and self.local:
            from stores.beam_io import ensure_subscription

            ensure_subscription(self.store, *subscription)
        p = beam.Pipeline(runner=runner, options=beam_options(argv, streaming))
        build(p)
        log.info("[%s] running on %s", name, runner if isinstance(runner, str) else type(runner).__name__)
        result = p.run()
        if wait:
            result.wait_until_finish()
        return result

    def refuse_non_production_graph(self, job: str, file_input: str | None = None) -> None:
        """Under ``--runner=DataflowRunner`` (a dry run too), refuse a job whose graph would differ from the one
        production runs, with a ValueError naming the flag (``newsroom`` exits 2 with it). Otherwise such a job is
        translated and even submitted without complaint: the stores default to the embedded backend, so the
        streaming jobs would read the SQLite queue of a worker's disk instead of Pub/Sub (a bounded batch job that
        ends at once) and every job would write its results to that disk, lost with the worker. ``file_input``: the
        flag (and its value) of a job that can read files instead of Pub/Sub (the stories job's ``--input``),
        refused on Dataflow for the same reason. Local runners are not checked: the embedded stack is what they
        are for."""
        if not self.dataflow:
            return
        if self.store.backend != "gcp":
            raise ValueError(
                f"--runner=DataflowRunner needs --backend=gcp (with --bigtable_instance and --snapshot_bucket): with "
                f"--backend={self.store.backend} the {job} job would read and write an embedded store on a Dataflow "
                "worker's disk instead of Pub/Sub, Bigtable and GCS, a graph production never runs (README: Preflight)"
            )
        if file_input:
            raise ValueError(
                f"--runner=DataflowRunner runs the {job} job on Pub/Sub: {file_input} would read files instead, a "
                "graph production never runs (for a bounded run over files use `newsroom backfill`)"
            )


def beam_options(argv: list[str] | None, streaming: bool) -> PipelineOptions:
    """The PipelineOptions a job hands its runner: its arguments, with ``--streaming`` when the job streams (a new
    value, not a change to the options the job resolved)."""
    return PipelineOptions(argv, streaming=True) if streaming else PipelineOptions(argv)
