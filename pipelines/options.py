"""Pipeline options shared by every Newsroom job: where the stores live and which namespace a run writes to.

Each job subclasses :class:`StoreOptions` with its own flags. Help strings state the default; invalid values fail
fast naming the flag (see :func:`store_config`).
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from stores import StoreConfig, add_store_arguments, config_from_args


class StoreOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add_store_arguments(parser)


def store_config(options: PipelineOptions) -> StoreConfig:
    """The StoreConfig a job's options describe. Raises ValueError naming the flag when they are inconsistent."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    return config_from_args(options.view_as(StoreOptions), project=options.view_as(GoogleCloudOptions).project)


def default_runner(options: PipelineOptions, streaming: bool):
    """The runner a job uses when ``--runner`` is not given: BundleBasedDirectRunner for a streaming job on this
    machine (the only local runner that hosts a live Pub/Sub source, LOCAL_STACK.md), FnApiRunner for a bounded one.
    ``--runner`` (for example DataflowRunner) wins; it is returned as given."""
    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner
    if runner is not None:
        return runner
    if streaming:
        from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

        return BundleBasedDirectRunner()
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return FnApiRunner()


def refuse_non_production_graph(options: PipelineOptions, job: str, file_input: str | None = None) -> None:
    """Under ``--runner=DataflowRunner`` (a dry run too), refuse a job whose graph would differ from the one
    production runs, with a ValueError naming the flag (``newsroom`` exits 2 with it). Otherwise such a job is
    translated and even submitted without complaint: the stores default to the embedded backend, so the streaming
    jobs would read the SQLite queue of a worker's disk instead of Pub/Sub (a bounded batch job that ends at once)
    and every job would write its results to that disk, lost with the worker. ``file_input``: the flag (and its
    value) of a job that can read files instead of Pub/Sub (the stories job's ``--input``), refused on Dataflow
    for the same reason. Local runners are not checked: the embedded stack is what they are for."""
    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner
    if not (isinstance(runner, str) and runner.endswith("DataflowRunner")):
        return
    backend = store_config(options).backend
    if backend != "gcp":
        raise ValueError(
            f"--runner=DataflowRunner needs --backend=gcp (with --bigtable_instance and --snapshot_bucket): with "
            f"--backend={backend} the {job} job would read and write an embedded store on a Dataflow worker's disk "
            "instead of Pub/Sub, Bigtable and GCS, a graph production never runs (README: Preflight)"
        )
    if file_input:
        raise ValueError(
            f"--runner=DataflowRunner runs the {job} job on Pub/Sub: {file_input} would read files instead, a graph "
            "production never runs (for a bounded run over files use `newsroom backfill`)"
        )
