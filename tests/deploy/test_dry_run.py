"""A Dataflow dry run of every job, offline: the exact entry point of the Flex Templates (templates/launch.py, with
its cloud defaults and flag rewriting) builds the job's graph with the gcp backend options and DataflowRunner
translates the whole of it for the Dataflow service (``--dry_run=True --no_auth``, LOCAL_STACK.md), without
submitting it. Streaming for ingest and stories, batch for backfill.

A job whose module does not exist yet fails here with a message naming the file (it is not skipped).
"""

from __future__ import annotations

import pytest

from deploy_helpers import JOBS, import_job

PROJECT = "newsroom-ci"
REGION = "europe-west1"

# What the templates get from Terraform / `gcloud dataflow flex-template run` (terraform/modules/dataflow).
COMMON = [
    "--runner=DataflowRunner",
    "--dry_run=True",
    "--no_auth",
    f"--project={PROJECT}",
    f"--region={REGION}",
    "--temp_location=gs://newsroom-ci-newsroom-dataflow-staging/tmp",
    "--staging_location=gs://newsroom-ci-newsroom-dataflow-staging/staging",
    "--sdk_container_image=europe-west1-docker.pkg.dev/newsroom-ci/newsroom/newsroom:ci",
    "--bigtable_instance=newsroom",
    "--snapshot_bucket=newsroom-ci-newsroom-snapshots",
]

# Each job's own required parameters, as an operator passes them (README "Operations").
JOB_ARGS: dict[str, list[str]] = {
    "ingest": ["--feeds=table"],
    "stories": [],
    "backfill": ["--namespace=bf-ci"],
}

JOB_TYPE = {True: "JOB_TYPE_STREAMING", False: "JOB_TYPE_BATCH"}


@pytest.mark.parametrize("job", list(JOBS))
def test_dataflow_dry_run_translates_the_whole_graph(job, launch):
    import_job(job)  # fails, naming the file, when the job does not exist yet
    argv = COMMON + JOB_ARGS[job]
    result = launch.launch(job, argv)

    translated = result.job  # DataflowRunner keeps the job it would have submitted
    streaming = JOBS[job][1]
    assert translated.proto.type.name == JOB_TYPE[streaming], (
        f"{job} must translate as a {'streaming' if streaming else 'batch'} job"
    )
    options = translated.options.get_all_options()
    assert options["backend"] == "gcp" and options["snapshot_bucket"] == "newsroom-ci-newsroom-snapshots"
    assert bool(options["streaming"]) is streaming
    assert options["sdk_container_image"].endswith("newsroom:ci")

    transforms = translated.proto_pipeline.components.transforms.values()
    top = {t.unique_name for t in transforms if t.unique_name and "/" not in t.unique_name and not t.unique_name.startswith("ref_")}
    assert len(top) >= 3, f"{job}: only {sorted(top)} translated"
    # Every label is CamelCase (STYLE.md): the names an operator sees in the Dataflow UI and in metrics.
    odd = sorted(n for n in top if not n[:1].isupper())
    assert not odd, f"{job}: top-level steps without a CamelCase label: {odd}"
