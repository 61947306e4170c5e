"""The update-relevant shape of each streaming job's graph, as JSON on stdout: run as a script against a checkout.

    python -c "$(cat update_graph.py; echo 'main(sys.argv[1])')" TREE > shape.json

``newsroom update-check`` (pipelines/commands/update_check.py) runs this file's source with ``python -c`` in a
child process whose working directory and first import path are a checkout (the working tree, or a ``git
worktree`` of the ref being compared), so the graphs are built by *that* checkout's code. It therefore imports
nothing of this repository by name before the checkout is on the path, and relies only on what every version of
the jobs has: ``pipelines.JOB.run(argv)`` building its graph on ``apache_beam.Pipeline`` and calling ``run()``.
``Pipeline.run`` is replaced by a stub that records the graph (``to_runner_api``) and stops: nothing is
translated for Dataflow, submitted, contacted or written. The flags are the production dry run's
(docs/operations.md), so each graph is the one Dataflow runs.

Shape per job, per transform (by its unique name, the name Dataflow matches on an update): its URN, the coders
of its outputs, and for a stateful DoFn its state specs (name -> kind and coders) and timer families (name ->
time domain and coder). Coders are written as Beam prints them (``VarIntCoder``, ``TupleCoder[...]``).
"""

import json
import sys
import traceback

JOBS = {
    "ingest": ["--feeds=table"],
    "stories": [
        "--input_subscription=stories-items-raw",
        "--dead_letter_topic=dead-letter-stories",
        "--fetch_topic=fetch-requests",
    ],
    "covisit": ["--input_subscription=covisit-read-events", "--dead_letter_topic=dead-letter-covisit"],
}
CLOUD = [
    "--runner=DataflowRunner",
    "--dry_run=True",
    "--no_auth",
    "--project=update-check",
    "--region=europe-west1",
    "--temp_location=gs://update-check/tmp",
    "--backend=gcp",
    "--bigtable_instance=newsroom",
    "--snapshot_bucket=update-check-snapshots",
]


class Captured(Exception):
    pass


def coder_text(context, coder_id):
    try:
        return repr(context.coders.get_by_id(coder_id))
    except Exception as exc:  # noqa: BLE001 - an unknown coder is still compared, by its id's URN
        return f"<{type(exc).__name__}: {coder_id}>"


def state_kind(context, spec):
    kind = spec.WhichOneof("spec")
    body = getattr(spec, kind)
    coders = {
        f.name: coder_text(context, getattr(body, f.name))
        for f in body.DESCRIPTOR.fields
        if f.name.endswith("coder_id")
    }
    return {"kind": kind, "coders": coders}


def shape(proto):
    from apache_beam.portability.api import beam_runner_api_pb2
    from apache_beam.runners.pipeline_context import PipelineContext

    context = PipelineContext(proto.components)
    pcolls = proto.components.pcollections
    out = {}
    for t in proto.components.transforms.values():
        if not t.unique_name:
            continue
        entry = {
            "urn": t.spec.urn,
            "outputs": {tag: coder_text(context, pcolls[pc].coder_id) for tag, pc in sorted(t.outputs.items())},
        }
        if t.spec.urn == "beam:transform:pardo:v1" and t.spec.payload:
            payload = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
            if payload.state_specs:
                entry["state"] = {n: state_kind(context, s) for n, s in sorted(payload.state_specs.items())}
            if payload.timer_family_specs:
                entry["timers"] = {
                    n: {
                        "domain": beam_runner_api_pb2.TimeDomain.Enum.Name(s.time_domain),
                        "coder": coder_text(context, s.timer_family_coder_id),
                    }
                    for n, s in sorted(payload.timer_family_specs.items())
                }
        out[t.unique_name] = entry
    return out


def main(tree):
    sys.path.insert(0, tree)
    import importlib

    import apache_beam as beam

    graphs = {}

    def run(self, *args, **kwargs):
        graphs["proto"] = self.to_runner_api()
        raise Captured()

    beam.Pipeline.run = run
    result = {}
    for job, flags in JOBS.items():
        graphs.clear()
        try:
            module = importlib.import_module(f"pipelines.{job}")
            module.run([*CLOUD, *flags])
        except Captured:
            pass
        except ModuleNotFoundError as exc:
            if exc.name == f"pipelines.{job}":
                result[job] = {"absent": True}
                continue
            result[job] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        except BaseException as exc:  # noqa: BLE001 - reported per job, the others still compared
            result[job] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
            continue
        if "proto" not in graphs:
            result[job] = {"error": "the job built no graph"}
            continue
        result[job] = {"transforms": shape(graphs["proto"])}
    json.dump(result, sys.stdout, sort_keys=True)
