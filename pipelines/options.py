"""Pipeline options shared by every Newsroom job: where the stores live and which namespace a run writes to.

Each job subclasses :class:`StoreOptions` with its own flags. Help strings state the default; invalid values fail
fast naming the flag (see :func:`store_config`).
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from stores import StoreConfig


class StoreOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--backend",
            default="embedded",
            choices=["embedded", "gcp"],
            help="Store backend: 'embedded' (SQLite and files under --data_dir, no cloud account) or 'gcp' "
            "(Bigtable, GCS, Pub/Sub). Default: embedded.",
        )
        parser.add_argument(
            "--data_dir", default=".newsroom", help="Root of the embedded stores. Default: .newsroom"
        )
        parser.add_argument(
            "--bigtable_instance",
            default="newsroom",
            help="Bigtable instance id for the gcp backend. Default: newsroom.",
        )
        parser.add_argument(
            "--snapshot_bucket",
            default=None,
            help="GCS bucket (name only) holding page snapshots for the gcp backend. Example: my-proj-newsroom-snapshots. "
            "Default: none (required with --backend=gcp).",
        )
        parser.add_argument(
            "--namespace",
            default="",
            help="Isolates a run's tables, objects and topics (a backfill writes to its own). Letters, digits, "
            "dashes. Default: '' (production).",
        )


def store_config(options: PipelineOptions) -> StoreConfig:
    """The StoreConfig a job's options describe. Raises ValueError naming the flag when they are inconsistent."""
    o = options.view_as(StoreOptions)
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    project = options.view_as(GoogleCloudOptions).project
    if o.backend == "gcp" and not o.snapshot_bucket:
        raise ValueError("--snapshot_bucket is required with --backend=gcp")
    return StoreConfig(
        backend=o.backend,
        data_dir=o.data_dir,
        project=project,
        bigtable_instance=o.bigtable_instance,
        bucket=o.snapshot_bucket,
        namespace=o.namespace,
    )
