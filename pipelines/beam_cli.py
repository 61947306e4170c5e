"""What the ``newsroom`` command needs of Beam to run a job row (pipelines/cli.py), kept in the jobs' layer so the
dispatcher, in the commands layer, imports no Beam itself:

- :func:`beam_unknown`: the flags no Beam PipelineOptions class defines (Beam would log "Unparseable argument" and
  run without them);
- :func:`report_dry_runs`: what a Dataflow dry run translated (``--runner=DataflowRunner --dry_run=True``): the job
  is not submitted, and ``newsroom JOB`` prints one line ``newsroom dry run: {json}`` (job type, streaming,
  top-level steps, Pub/Sub subscriptions read, the worker image) for an operator and tests/deploy/test_dry_run.py.
"""

from __future__ import annotations

import argparse
import json


def dry_run_summary(job) -> dict:
    """What a DataflowRunner dry run translated (``result.job``, an apiclient.Job): job type, top-level steps
    (the stages an operator sees in the Dataflow UI) and the Pub/Sub subscriptions the graph reads."""
    from apache_beam.portability import common_urns
    from apache_beam.portability.api import beam_runner_api_pb2

    transforms = job.proto_pipeline.components.transforms.values()
    top = sorted(
        t.unique_name
        for t in transforms
        if t.unique_name and "/" not in t.unique_name and not t.unique_name.startswith("ref_")
    )
    reads = sorted(
        beam_runner_api_pb2.PubSubReadPayload.FromString(t.spec.payload).subscription
        for t in transforms
        if t.spec.urn == common_urns.composites.PUBSUB_READ.urn
    )
    options = job.options.get_all_options()
    return {
        "job_type": job.proto.type.name,
        "streaming": bool(options.get("streaming")),
        "steps": top,
        "pubsub_subscriptions": reads,
        "sdk_container_image": options.get("sdk_container_image"),
    }


def report_dry_runs() -> None:
    """Make DataflowRunner print :func:`dry_run_summary` after a dry run (it returns without submitting)."""
    from apache_beam.options.pipeline_options import TestOptions
    from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner

    if getattr(DataflowRunner, "_newsroom_reports", False):
        return
    translate = DataflowRunner.run_pipeline

    def run_pipeline(self, pipeline, options):
        result = translate(self, pipeline, options)
        if options.view_as(TestOptions).dry_run and getattr(result, "job", None) is not None:
            print("newsroom dry run: " + json.dumps(dry_run_summary(result.job), sort_keys=True), flush=True)
        return result

    DataflowRunner.run_pipeline = run_pipeline
    DataflowRunner._newsroom_reports = True


def beam_unknown(rest: list[str]) -> list[str]:
    """The flags among ``rest`` (what the job's own flags left) that no Beam PipelineOptions class defines."""
    if not rest:
        return []
    from apache_beam.options.pipeline_options import PipelineOptions

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, conflict_handler="resolve")
    todo, seen = [PipelineOptions], set()
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
                sub._add_argparse_args(parser)
    _, unknown = parser.parse_known_args(rest)
    return [a for a in unknown if a.startswith("-")]
