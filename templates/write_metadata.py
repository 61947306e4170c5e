"""Write templates/<job>/metadata.json from the job's pipeline options and the per-parameter spec below.

Reads the job's options classes (pipelines/<job>.py and pipelines/options.StoreOptions: help texts, so the
template's helpText says what `--help` says) and SPECS (label, regex, example, optional per parameter); writes
templates/<job>/metadata.json. Run from the repository root: `.venv/bin/python templates/write_metadata.py ingest`.
tests/deploy/test_templates.py checks the result against the options both ways, so a new option without a spec
entry fails here first (naming it) rather than in CI.

helpText: the option's help, the spec's note, and "Example: <spec example>" unless the help already gives one (then
the spec's example must be that one, so the template never shows two different examples).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transforms.stories.embed.embedder_specs import EMBEDDER_PATTERN  # noqa: E402 - needs ROOT on the path

EXAMPLE = re.compile(r"Example: (\S+?)[.,;)]?(?:\s|$)")  # as tests/deploy/test_templates.py reads it

JOBS = {
    "ingest": ("pipelines.ingest", True),
    "stories": ("pipelines.stories", True),
    "backfill": ("pipelines.backfill", False),
    "covisit": ("pipelines.covisit", True),
    "authority": ("pipelines.authority", False),
    "userclusters": ("pipelines.userclusters", False),
}

F = r"^[0-9]+(\.[0-9]+)?$"  # non-negative number
I = r"^[0-9]+$"  # noqa: E741 - non-negative integer (one-letter names, like F and B)
B = r"^(true|false)$"  # a value-less flag (templates/launch.py turns true into the bare flag)
TOPIC = r"^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$"  # Pub/Sub topic or subscription name
ANY = r"^[^\n\r]+$"
PATHS = r"^[^\s,]+(,[^\s,]+)*$"  # one path or glob, or several comma-separated (local or gs://)
IMAGE_JSON = r"^(?!gs://)[^\s,]+\.json$"  # a JSON file inside the image (read with open(), not FileSystems)
EDITIONS = r"^[a-z]{2}-[a-z]{2,3}(,[a-z]{2}-[a-z]{2,3})*$"  # edition ids (transforms/editions/vocabulary/editions.json)
# transforms/stories/embed/embedder_specs.py: the pattern its check matches (the names of its one list and the two forms).
EMBEDDER = EMBEDDER_PATTERN
# pipelines/backfill.py --from/--to: what transforms.stories.vocabulary.features.parse_time reads (ISO 8601 date or time).
ISO_TIME = (
    r"^[0-9]{4}-?[0-9]{2}-?[0-9]{2}([T ][0-9]{2}:?[0-9]{2}(:?[0-9]{2}(\.[0-9]+)?)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$"
)
IN_IMAGE = " On Dataflow: a path inside the image (the launcher and the workers both read it)."

# name -> (label, regex, example, isOptional, note appended to the help text)
STORE = {
    "backend": (
        "Store backend",
        r"^(embedded|gcp)$",
        "gcp",
        True,
        " Templates run with gcp unless this says otherwise (templates/launch.py).",
    ),
    "data_dir": ("Embedded store directory (unused on Dataflow)", ANY, ".newsroom", True, ""),
    "bigtable_instance": ("Bigtable instance id", r"^[a-z][a-z0-9-]{5,32}$", "newsroom", True, ""),
    "snapshot_bucket": (
        "Snapshot bucket",
        r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$",
        "my-proj-newsroom-snapshots",
        False,
        "",
    ),
    "namespace": ("Namespace", r"^[A-Za-z0-9-]*$", "bf-2024q1", True, ""),
    "bus": ("Message bus", r"^(pubsub)?$", "pubsub", True, " On Dataflow the gcp backend's bus is Pub/Sub already."),
}

SPECS = {
    "ingest": {
        "name": "Newsroom ingest",
        "description": "Streaming: polls publishers' feeds on adaptive per-feed schedules, takes WebSub pushes, pings and "
        "burst requests (fetch-requests), fetches each new item's page once through the address guard, and publishes "
        "raw items (items-raw) and dead letters (dead-letter-ingest).",
        "parameters": {
            "feeds": ("Feed registry", r"^(default|table|\S+\.json)$", "table", True, ""),
            "registry_reload_s": ("Registry reload interval (s)", F, "60", True, ""),
            "host_overrides": (
                "Operator host allowlist",
                r"^([A-Za-z0-9.-]+=[0-9.]+(:[0-9]+)?)(,[A-Za-z0-9.-]+=[0-9.]+(:[0-9]+)?)*$",
                "wire.example=10.0.0.5:8080",
                True,
                "",
            ),
            "allow_hosts": (
                "Private feed hosts allowed",
                r"^[A-Za-z0-9.\[\]:-]+(,[A-Za-z0-9.\[\]:-]+)*$",
                "feeds.internal:8080",
                True,
                "",
            ),
            "user_agent": ("User-Agent", ANY, "NewsroomBot/1.0", True, ""),
            "connect_timeout_s": ("Connect timeout (s)", F, "5", True, ""),
            "fetch_timeout_s": ("Read timeout (s)", F, "10", True, ""),
            "max_body_bytes": ("Largest body (bytes)", I, "5242880", True, ""),
            "max_redirects": ("Redirects followed", I, "5", True, ""),
            "min_host_delay_s": ("Delay between requests to one host (s)", F, "1", True, ""),
            "robots_ttl_s": ("robots.txt cache lifetime (s)", F, "3600", True, ""),
            "poll_floor_authoritative_s": ("Poll floor, authoritative feeds (s)", F, "60", True, ""),
            "poll_floor_long_tail_s": ("Poll floor, other feeds (s)", F, "300", True, ""),
            "poll_max_s": ("Longest poll interval (s)", F, "3600", True, ""),
            "websub_backstop_s": ("Poll interval with a WebSub lease (s)", F, "900", True, ""),
            "schedule_scale": ("Schedule scale", F, "1", True, ""),
            "websub_callback_base": (
                "WebSub callback base URL",
                r"^https?://[^\s/]+(/[^\s]*)?$",
                "https://news.example.com",
                True,
                "",
            ),
            "fetch_request_topic": ("Fetch request topic", TOPIC, "fetch-requests", True, ""),
            "fetch_request_subscription": ("Fetch request subscription", TOPIC, "ingest-fetch-requests", True, ""),
            "request_poll_s": ("Fetch request pull interval (s)", F, "1", True, ""),
            "items_topic": ("Raw item topic", TOPIC, "items-raw", True, ""),
            "dead_letter_topic": ("Dead-letter topic", TOPIC, "dead-letter-ingest", True, ""),
            "fetch_workers": ("Fetch threads (local runner only)", I, "4", True, ""),
            "max_run_s": ("Stop after (s, local runner only)", F, "0", True, ""),
            "replay_after_s": ("Replay unstored claims after (s, local runner only)", F, "600", True, ""),
            "replay_held_at_start": ("Replay every unstored claim at start (local runner only)", B, "false", True, ""),
        },
    },
    "stories": {
        "name": "Newsroom stories",
        "description": "Streaming: reads raw items (items-raw, through --input_subscription), normalises, dedupes and "
        "embeds them into articles, clusters them into stories per language, detects bursts, ranks every edition each "
        "minute and publishes validated page snapshots (GCS) behind latest pointers (Bigtable); burst polls go to "
        "fetch-requests and the dead letters of every stage to --dead_letter_topic.",
        "parameters": {
            "input_subscription": (
                "Raw item subscription",
                TOPIC,
                "stories-items-raw",
                True,
                " Terraform creates it (terraform/environments/*/main.tf subscriptions).",
            ),
            "input": (
                "RawItem Avro files instead of Pub/Sub",
                PATHS,
                "/data/items-2026-01-01.avro",
                True,
                " On Dataflow use gs:// paths.",
            ),
            "dead_letter_topic": ("Dead-letter topic", TOPIC, "dead-letter-stories", True, ""),
            "fetch_topic": ("Burst fetch request topic", TOPIC, "fetch-requests", True, ""),
            "breaking_topic": ("Breaking announcement topic", TOPIC, "breaking", True, ""),
            "cdn": ("CDN purges of Breaking pages", r"^(auto|none|queue|gcp)$", "gcp", True, ""),
            "cdn_url_map": (
                "Origin URL map (Cloud CDN)",
                r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
                "newsroom-api",
                True,
                "",
            ),
            "publishers": ("Publisher registry (JSON)", IMAGE_JSON, "/template/publishers.json", True, IN_IMAGE),
            "editions": ("Editions file (JSON)", IMAGE_JSON, "/template/editions.json", True, IN_IMAGE),
            "editions_only": ("Only these editions", EDITIONS, "us-en,gb-en", True, ""),
            "embedder": ("Embedder", EMBEDDER, "auto", True, ""),
            "links": ("Cross-language links", r"^(auto|on|off)$", "auto", True, ""),
            "link_interval_s": ("Link tick interval (s)", F, "300", True, ""),
        },
    },
    "covisit": {
        "name": "Newsroom co-visitation",
        "description": "Streaming: reads read events (read-events, through --input_subscription), pairs the stories "
        "each reader reads within --window_hours, and keeps per story the --top_k neighbours by decayed 'read "
        "together' count in the Bigtable table covisit, which the origin reads for For you ('also_read'); abnormal "
        "readers are ignored and undecodable events go to --dead_letter_topic.",
        "parameters": {
            "input_subscription": (
                "Read event subscription",
                TOPIC,
                "covisit-read-events",
                True,
                " Terraform creates it (terraform/environments/*/main.tf subscriptions).",
            ),
            "dead_letter_topic": ("Dead-letter topic", TOPIC, "dead-letter-covisit", True, ""),
            "window_hours": ("Read-together window (hours)", F, "6", True, ""),
            "half_life_hours": ("Count half-life (hours)", F, "24", True, ""),
            "top_k": ("Neighbours kept per story", r"^([1-9]|[1-4][0-9]|50)$", "50", True, ""),
            "max_reads_per_hour": ("Abnormal reader bar (reads per hour)", r"^[1-9][0-9]*$", "120", True, ""),
            "flush_s": ("Seconds between a story's list writes", F, "10", True, ""),
            "no_cluster_counts": ("Do not keep per-cluster click counts", B, "false", True, ""),
        },
    },
    "userclusters": {
        "name": "Newsroom user clusters",
        "description": "Batch, daily: reads every reader's clicks of the lookback from the click log (Bigtable "
        "userclusters c# rows, kept 180 days) and recent profile reads, in --splits reader-id ranges in parallel, "
        "puts each reader in "
        "--clusters_per_reader MinHash clusters of --hashes_per_cluster concatenated hash values (Das et al. 2007), "
        "drops clusters under --min_members readers and replaces every reader's memberships in the Bigtable table "
        "userclusters; the co-visitation job keeps the clusters' click counts and the origin serves them as For "
        "you's 'readers_like_you'.",
        "parameters": {
            "hashes_per_cluster": ("p: hash values per cluster id", r"^[1-9][0-9]*$", "3", True, ""),
            "clusters_per_reader": ("q: clusters per reader", r"^[1-9][0-9]*$", "10", True, ""),
            "min_stories": ("Fewest stories read to be clustered", r"^[1-9][0-9]*$", "3", True, ""),
            "min_members": ("Fewest readers in a kept cluster", r"^[1-9][0-9]*$", "5", True, ""),
            "lookback_days": ("Reads of the last days", F, "90", True, ""),
            "splits": ("Reader-id ranges read in parallel", r"^[1-9][0-9]*$", "64", True, ""),
        },
    },
    "authority": {
        "name": "Newsroom authority",
        "description": "Batch: scans every stored story (Bigtable stories) and its articles, computes per publisher "
        "and section the original reporting share, first reports, originals picked up by other ownership groups and "
        "correction notices, shrinks them toward the hand-set publisher registry, and publishes authority/v{n}.json "
        "in the snapshot bucket behind the 'authority' pointer, which the stories job's editions stage reads.",
        "parameters": {
            "publishers": ("Publisher registry (JSON)", IMAGE_JSON, "/template/publishers.json", True, IN_IMAGE),
            "editions": ("Editions file (JSON)", IMAGE_JSON, "/template/editions.json", True, IN_IMAGE),
            "window_days": ("Window (days, 0 = every story)", F, "90", True, ""),
            "prior_weight": ("Prior weight (articles)", F, "50", True, ""),
            "page_size": ("Story ids per scan page", r"^[1-9][0-9]*$", "1000", True, ""),
        },
    },
    "backfill": {
        "name": "Newsroom backfill",
        "description": "Batch: clusters a historical set of articles (labelled JSONL or Article Avro files) into "
        "stories with the streaming job's transforms, in its own namespace (never the production tables), and "
        "writes assignments.jsonl, stories.jsonl and dead_letters.jsonl under --output; with --snapshots also the "
        "edition pages a streaming run would have published.",
        "parameters": {
            "input": (
                "Input files",
                PATHS,
                "gs://my-proj-newsroom-backfill/archive/2024-01-*.jsonl",
                False,
                " On Dataflow use gs:// paths (the launcher lists them when it builds the job).",
            ),
            "output": ("Output directory", r"^\S+$", "gs://my-proj-newsroom-backfill/runs/bf-2024q1", False, ""),
            "from_store": (
                "Input: the system's own article store",
                r"^\S+$",
                ".newsroom",
                True,
                " On Dataflow (--backend=gcp) give bigtable: production's article table, key ranges read in parallel.",
            ),
            "from": ("From (UTC, ISO 8601)", ISO_TIME, "2024-01-01", True, ""),
            "to": ("Until (UTC, ISO 8601, exclusive)", ISO_TIME, "2024-04-01T00:00:00Z", True, ""),
            "language": ("Languages", r"^[A-Za-z]{2}(,[A-Za-z]{2})*$", "en,de", True, ""),
            "embedder": ("Embedder", EMBEDDER, "auto", True, ""),
            "links": ("Cross-language links", r"^(auto|on|off)$", "auto", True, ""),
            "exact_index": ("Exact nearest-centroid search", B, "false", True, ""),
            "batch_size": ("Embedding batch size", r"^[1-9][0-9]*$", "1024", True, ""),
            "resume": (
                "Resume the namespace's run",
                B,
                "false",
                True,
                " Without it a launch into a namespace that already holds a run fails (stores/runs.py).",
            ),
            "overwrite": ("Replace an earlier backfill's output", B, "false", True, ""),
            "snapshots": (
                "Publish edition snapshots",
                B,
                "false",
                True,
                " As a template parameter only true or false: true publishes into the run's namespace"
                " (the DIR form is for local runs).",
            ),
            "snapshots_every_minute": ("Build snapshots every minute (baseline)", B, "false", True, ""),
        },
        # A template launch builds the graph directly (templates/launch.py), so the backfill's run() never picks its
        # default namespace: an empty one would aim the run at the production tables. The template requires one,
        # spelled as Terraform's backfill_namespaces (terraform/modules/bigtable: <namespace>-<table>).
        "store": {
            "namespace": (
                "Namespace (required)",
                r"^[a-z0-9][a-z0-9-]{0,20}$",
                "bf-2024q1",
                False,
                " Required by the template: one of Terraform's backfill_namespaces.",
            ),
        },
    },
}


def options_of(module) -> dict[str, argparse.Action]:
    from pipelines.options import StoreOptions

    found = list(
        vars(module).values()
    )  # the job's own options: defined there or imported (pipelines/ingest_options.py)
    own = [c for c in found if isinstance(c, type) and issubclass(c, StoreOptions) and c is not StoreOptions]
    actions: dict[str, argparse.Action] = {}
    for cls in own:
        for base in cls.__mro__:
            if "_add_argparse_args" in vars(base) and base.__module__.split(".")[0] in (
                "pipelines",
                "transforms",
                "stores",
            ):
                parser = argparse.ArgumentParser(add_help=False)
                base._add_argparse_args(parser)
                for a in parser._actions:
                    longs = [s for s in a.option_strings if s.startswith("--")]
                    if longs:
                        actions.setdefault(longs[0][2:], a)
    return actions


def metadata(job: str) -> dict:
    """The Flex Template metadata of ``job``, built from its options and SPECS (what ``write`` puts on disk)."""
    module_name, streaming = JOBS[job]
    spec = SPECS[job]
    options = options_of(importlib.import_module(module_name))
    params = {**spec["parameters"], **STORE, **spec.get("store", {})}
    missing, extra = sorted(set(options) - set(params)), sorted(set(params) - set(options))
    if missing or extra:
        raise SystemExit(f"{job}: options without a spec entry {missing}; spec entries that are not options {extra}")
    order = [n for n in options if n not in STORE] + list(STORE)
    out = []
    for name in order:
        label, regex, example, optional, note = params[name]
        help_text = " ".join((options[name].help or "").split()) + note
        stated = EXAMPLE.search(help_text)
        if stated and stated.group(1) != example:
            raise SystemExit(
                f"{job}/{name}: the help's example {stated.group(1)!r} differs from the spec's {example!r}"
            )
        if not stated:
            help_text += f" Example: {example}"
        out.append({"name": name, "label": label, "helpText": help_text, "isOptional": optional, "regexes": [regex]})
    meta = {"name": spec["name"], "description": spec["description"], "streaming": streaming, "parameters": out}
    if streaming:
        meta["supportsAtLeastOnce"] = False
        meta["supportsExactlyOnce"] = True
    return meta


def write(job: str) -> Path:
    meta = metadata(job)
    path = ROOT / "templates" / job / "metadata.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    for job in sys.argv[1:] or list(SPECS):
        print(write(job))
