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
