"""A Dataflow dry run of every job, offline: the exact entry point of the Flex Templates (templates/launch.py, with
its cloud defaults and flag rewriting) builds the job's graph with the gcp backend options and DataflowRunner
translates the whole of it for the Dataflow service (``--dry_run=True --no_auth``, LOCAL_STACK.md), without
submitting it. Streaming for ingest, stories and covisit, batch for backfill, authority and userclusters.

Each job gets the parameters Terraform (terraform/environments/*/main.tf ``<job>_parameters`` and the dataflow
module's store parameters) or the README's `gcloud dataflow flex-template run` passes, and every one of them must
pass the template's own regexes (templates/<job>/metadata.json), as Dataflow checks them before launching.

Construction-time I/O (measured with audit hooks on sockets and files): the stories and ingest graphs open only
packaged files (editions.json, publishers.json). The backfill lists its ``--input`` files while the graph is built
(pipelines/backfill.py ``build_pipeline`` -> ``expand_inputs`` -> ``FileSystems.match``): in the cloud the launcher
lists gs:// there; offline that is a GCS call (metadata-server credential lookup, then storage.googleapis.com,
~2.5 min of retries before it fails), so the dry run gives the backfill local input files: the same code path.

A job whose module does not exist yet fails here with a message naming the file (it is not skipped).
"""

from __future__ import annotations

import json
import re

import pytest
from deploy_helpers import JOBS, REPO_ROOT, import_job

PROJECT = "newsroom-ci"
REGION = "europe-west1"
SNAPSHOTS = "newsroom-ci-newsroom-snapshots"

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
    "--backend=gcp",
    "--bigtable_instance=newsroom",
    f"--snapshot_bucket={SNAPSHOTS}",
]

# Each job's own parameters, as Terraform (ingest, stories: environments/*/main.tf) or an operator (backfill: README
# "Operations") passes them. {inputs} is replaced by local files (see the module docstring).
JOB_ARGS: dict[str, list[str]] = {
    "ingest": ["--feeds=table"],
    "stories": [
        "--input_subscription=stories-items-raw",
        "--dead_letter_topic=dead-letter-stories",
        "--fetch_topic=fetch-requests",
    ],
    "backfill": [
        "--input={inputs}",
        "--output=gs://newsroom-ci-newsroom-backfill/runs/bf-ci",
        "--namespace=bf-ci",
        "--from=2024-01-01",
        "--to=2024-04-01T00:00:00Z",
        "--snapshots=true",  # the editions branch too: the whole graph the template can launch
    ],
    "covisit": ["--input_subscription=covisit-read-events", "--dead_letter_topic=dead-letter-covisit"],
    "authority": ["--window_days=90", "--prior_weight=50"],
    "userclusters": ["--hashes_per_cluster=3", "--clusters_per_reader=10", "--min_members=5"],
}

# Top-level steps that must be in each translated graph (the stages of the job's docstring).
STAGES: dict[str, set[str]] = {
    "ingest": {
        "LoadFeedRegistry",
        "ReadFetchRequests",
        "DecodeFetchRequests",
        "IngestFeeds",
        "PublishRawItems",
        "PublishDeadLetters",
    },
    "stories": {
        "ReadRawItems",
        "DecodeRawItems",
        "ProcessArticles",
        "EmbedArticles",
        "ClusterStories",
        "ApplyStoryChanges",
        "LinkStories",
        "ApplyLinks",
        "PublishEditions",
        "PublishFetchRequests",
        "PublishDeadLetters",
    },
    "backfill": {
        "ReadArticles",
        "EmbedArticles",
        "ClusterStories",
        "ApplyStoryChanges",
        "WriteResults",
        "WriteDeadLetters",
        "ChangesForEditions",
        "PublishEditions",
    },
    "covisit": {"ReadReadEvents", "DecodeReadEvents", "CovisitNeighbours", "PublishDeadLetters"},
    "authority": {
        "ScanStoryIds",
        "SpreadStories",
        "ReadStoryFacts",
        "CountStories",
        "StoryEvidence",
        "SumCounts",
        "PublishAuthority",
    },
    "userclusters": {
        "KeyRanges",
        "SpreadRanges",
        "ReadRanges",
        "SpreadReaders",
        "ClustersOfReader",
        "MembersPerCluster",
        "KeepLargeClusters",
        "ClustersPerReader",
        "WriteMemberships",
    },
}

JOB_TYPE = {True: "JOB_TYPE_STREAMING", False: "JOB_TYPE_BATCH"}


@pytest.fixture
def inputs(tmp_path) -> str:
    """Two labelled JSONL files of the backfill's input format, matched by a glob as an operator would pass it."""
    for day in ("01", "02"):
        row = {
            "id": f"a{day}",
            "language": "en",
            "title": "Storm hits coast",
            "text": "Rain and wind.",
            "published_at": f"2024-01-{day}T08:00:00Z",
            "publisher": "herald",
            "url": f"https://herald.test/{day}",
        }
        (tmp_path / f"2024-01-{day}.jsonl").write_text(json.dumps(row) + "\n")
    return str(tmp_path / "2024-01-*.jsonl")


def template_parameters(job: str) -> dict[str, dict]:
    meta = json.loads((REPO_ROOT / "templates" / job / "metadata.json").read_text())
    return {p["name"]: p for p in meta["parameters"]}


def pubsub_reads(translated) -> list[str]:
    from apache_beam.portability import common_urns
    from apache_beam.portability.api import beam_runner_api_pb2

    return [
        beam_runner_api_pb2.PubSubReadPayload.FromString(t.spec.payload).subscription
        for t in translated.proto_pipeline.components.transforms.values()
        if t.spec.urn == common_urns.composites.PUBSUB_READ.urn
    ]


@pytest.mark.parametrize("job", list(JOBS))
def test_job_arguments_pass_the_template_regexes(job, inputs):
    """Dataflow refuses a launch whose parameter fails its metadata.json regex: the arguments the dry run (and so
    Terraform and the README) uses must pass them, and the template's required parameters must all be there."""
    params = template_parameters(job)
    given = {}
    for arg in COMMON + JOB_ARGS[job]:
        name, _, value = arg[2:].partition("=")
        if name in params:
            given[name] = value.format(inputs=inputs)
    for name, value in given.items():
        for rx in params[name]["regexes"]:
            assert re.fullmatch(rx, value), f"{job}: --{name}={value} fails the template regex {rx}"
    required = {n for n, p in params.items() if not p["isOptional"]}
    assert required <= set(given), f"{job}: the dry run omits the required parameters {sorted(required - set(given))}"


@pytest.mark.parametrize("job", list(JOBS))
def test_dataflow_dry_run_translates_the_whole_graph(job, launch, inputs):
    import_job(job)  # fails, naming the file, when the job does not exist yet
    argv = COMMON + [a.format(inputs=inputs) for a in JOB_ARGS[job]]
    result = launch.launch(job, argv)

    translated = result.job  # DataflowRunner keeps the job it would have submitted
    streaming = JOBS[job][1]
    assert translated.proto.type.name == JOB_TYPE[streaming], (
        f"{job} must translate as a {'streaming' if streaming else 'batch'} job"
    )
    options = translated.options.get_all_options()
    assert options["backend"] == "gcp" and options["snapshot_bucket"] == SNAPSHOTS
    assert bool(options["streaming"]) is streaming
    assert options["sdk_container_image"].endswith("newsroom:ci")

    transforms = translated.proto_pipeline.components.transforms.values()
    top = {
        t.unique_name
        for t in transforms
        if t.unique_name and "/" not in t.unique_name and not t.unique_name.startswith("ref_")
    }
    missing = STAGES[job] - top
    assert not missing, f"{job}: stages {sorted(missing)} were not translated (top-level steps: {sorted(top)})"
    # Every label is CamelCase (STYLE.md): the names an operator sees in the Dataflow UI and in metrics.
    odd = sorted(n for n in top if not n[:1].isupper())
    assert not odd, f"{job}: top-level steps without a CamelCase label: {odd}"

    if job == "stories":
        # The subscription Terraform creates (test_terraform checks it is the one it passes) is the one read.
        assert pubsub_reads(translated) == [f"projects/{PROJECT}/subscriptions/stories-items-raw"]
    if job == "ingest":  # fetch requests through Beam's Pub/Sub source (acked on commit), not a pulling DoFn
        assert pubsub_reads(translated) == [f"projects/{PROJECT}/subscriptions/ingest-fetch-requests"]
    if job == "backfill":
        assert pubsub_reads(translated) == [], "the backfill reads files, never a subscription"
        assert options["namespace"] == "bf-ci" and options["snapshots"] is True, (
            "--snapshots=true must reach the job as the bare flag (templates/launch.py), not as a directory 'true'"
        )


# --- the same dry run through the `newsroom` command ---------------------------------------------------------------

# What an operator types (README "Operations"): `newsroom JOB` with Beam's flags, no template launcher in between.
# The streaming jobs stream on their own (Pub/Sub input); the backfill's optional-value flag is given bare.
COMMAND_ARGS: dict[str, list[str]] = {
    "ingest": ["--feeds=table"],
    "stories": JOB_ARGS["stories"],
    "backfill": [a for a in JOB_ARGS["backfill"] if not a.startswith("--snapshots")] + ["--snapshots"],
    "covisit": JOB_ARGS["covisit"],
    "authority": JOB_ARGS["authority"],
    "userclusters": JOB_ARGS["userclusters"],
}


def newsroom_command() -> list[str]:
    """The installed console script next to this interpreter (the Makefile's .venv/bin/newsroom in CI)."""
    import shutil
    import sys
    from pathlib import Path

    found = shutil.which("newsroom", path=str(Path(sys.executable).parent))
    if not found:
        pytest.fail(
            f"no `newsroom` console script next to {sys.executable}: the package is not installed", pytrace=False
        )
    return [found]


@pytest.mark.parametrize("job", list(JOBS))
def test_dataflow_dry_run_through_the_newsroom_command(job, inputs, tmp_path):
    """`newsroom JOB --runner=DataflowRunner --dry_run=True ...` (a subprocess, from another folder): Beam's flags
    pass through the command to PipelineOptions, --runner is honoured (the backfill does not fall back to its local
    FnApiRunner) and DataflowRunner translates the whole graph; the command prints what it translated."""
    import os
    import subprocess
    from pathlib import Path

    import pipelines

    tree = str(Path(pipelines.__file__).resolve().parents[1])
    argv = COMMON + [a.format(inputs=inputs) for a in COMMAND_ARGS[job]]
    cwd = tmp_path / "elsewhere"  # not the source tree, and empty: what the command writes would show here
    cwd.mkdir()
    proc = subprocess.run(
        newsroom_command() + [job, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": tree},
    )
    assert proc.returncode == 0, f"newsroom {job} dry run failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("newsroom dry run: ")]
    assert len(lines) == 1, f"newsroom {job}: expected one dry-run summary on stdout, got:\n{proc.stdout[-2000:]}"
    summary = json.loads(lines[0].split(": ", 1)[1])
    streaming = JOBS[job][1]
    assert summary["job_type"] == JOB_TYPE[streaming] and summary["streaming"] is streaming
    assert summary["sdk_container_image"].endswith("newsroom:ci")
    missing = STAGES[job] - set(summary["steps"])
    assert not missing, f"newsroom {job}: stages {sorted(missing)} were not translated: {summary['steps']}"
    if job == "stories":
        assert summary["pubsub_subscriptions"] == [f"projects/{PROJECT}/subscriptions/stories-items-raw"]
    if job == "covisit":
        assert summary["pubsub_subscriptions"] == [f"projects/{PROJECT}/subscriptions/covisit-read-events"]
    if job in ("authority", "userclusters"):
        assert summary["pubsub_subscriptions"] == [], f"the {job} job reads the stores, never a subscription"
        assert not any(cwd.iterdir()), "a dry run writes nothing"
    if job == "backfill":
        assert "CheckRunClaim" in summary["steps"], "the backfill's namespace fence must be in the graph"
        assert not any(cwd.iterdir()), "a dry run writes nothing (no local 'gs:' folder, no manifest)"
