"""Write templates/<job>/metadata.json from the job's pipeline options and the per-parameter spec below.

Reads the job's options classes (pipelines/<job>.py and pipelines/options.StoreOptions: help texts, so the
template's helpText says what `--help` says) and SPECS (label, regex, example, optional per parameter); writes
templates/<job>/metadata.json. Run from the repository root: `.venv/bin/python templates/write_metadata.py ingest`.
tests/deploy/test_templates.py checks the result against the options both ways, so a new option without a spec
entry fails here first (naming it) rather than in CI.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

JOBS = {"ingest": ("pipelines.ingest", True), "stories": ("pipelines.stories", True), "backfill": ("pipelines.backfill", False)}

F = r"^[0-9]+(\.[0-9]+)?$"  # non-negative number
I = r"^[0-9]+$"  # non-negative integer
B = r"^(true|false)$"  # a value-less flag (templates/launch.py turns true into the bare flag)
TOPIC = r"^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$"  # Pub/Sub topic or subscription name
ANY = r"^[^\n\r]+$"

# name -> (label, regex, example, isOptional, note appended to the help text)
STORE = {
    "backend": ("Store backend", r"^(embedded|gcp)$", "gcp", True,
                " Templates run with gcp unless this says otherwise (templates/launch.py)."),
    "data_dir": ("Embedded store directory (unused on Dataflow)", ANY, ".newsroom", True, ""),
    "bigtable_instance": ("Bigtable instance id", r"^[a-z][a-z0-9-]{5,32}$", "newsroom", True, ""),
    "snapshot_bucket": ("Snapshot bucket", r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$", "my-project-newsroom-snapshots", False, ""),
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
            "host_overrides": ("Operator host allowlist",
                               r"^([A-Za-z0-9.-]+=[0-9.]+(:[0-9]+)?)(,[A-Za-z0-9.-]+=[0-9.]+(:[0-9]+)?)*$",
                               "wire.example=10.0.0.5:8080", True, ""),
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
            "websub_callback_base": ("WebSub callback base URL", r"^https?://[^\s/]+(/[^\s]*)?$", "https://news.example.com", True, ""),
            "fetch_request_topic": ("Fetch request topic", TOPIC, "fetch-requests", True, ""),
            "fetch_request_subscription": ("Fetch request subscription", TOPIC, "ingest-fetch-requests", True, ""),
            "request_poll_s": ("Fetch request pull interval (s)", F, "1", True, ""),
            "items_topic": ("Raw item topic", TOPIC, "items-raw", True, ""),
            "dead_letter_topic": ("Dead-letter topic", TOPIC, "dead-letter-ingest", True, ""),
            "fetch_workers": ("Fetch threads (local runner only)", I, "4", True, ""),
            "max_run_s": ("Stop after (s, local runner only)", F, "0", True, ""),
            "world": ("Sample world (local runner only)", B, "false", True, ""),
            "world_speed": ("Sample world speed (local runner only)", F, "10", True, ""),
        },
    },
    # "stories": {...}, "backfill": {...}: add when pipelines/stories.py and pipelines/backfill.py exist.
}


def options_of(module) -> dict[str, argparse.Action]:
    from pipelines.options import StoreOptions

    own = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, StoreOptions) and c.__module__ == module.__name__]
    actions: dict[str, argparse.Action] = {}
    for cls in own:
        for base in cls.__mro__:
            if "_add_argparse_args" in vars(base) and base.__module__.split(".")[0] in ("pipelines", "transforms", "stores"):
                parser = argparse.ArgumentParser(add_help=False)
                base._add_argparse_args(parser)
                for a in parser._actions:
                    longs = [s for s in a.option_strings if s.startswith("--")]
                    if longs:
                        actions.setdefault(longs[0][2:], a)
    return actions


def write(job: str) -> Path:
    module_name, streaming = JOBS[job]
    spec = SPECS[job]
    options = options_of(importlib.import_module(module_name))
    params = {**spec["parameters"], **STORE}
    missing, extra = sorted(set(options) - set(params)), sorted(set(params) - set(options))
    if missing or extra:
        raise SystemExit(f"{job}: options without a spec entry {missing}; spec entries that are not options {extra}")
    order = [n for n in options if n not in STORE] + list(STORE)
    out = []
    for name in order:
        label, regex, example, optional, note = params[name]
        help_text = " ".join((options[name].help or "").split()) + note + f" Example: {example}"
        out.append({"name": name, "label": label, "helpText": help_text, "isOptional": optional, "regexes": [regex]})
    meta = {"name": spec["name"], "description": spec["description"], "streaming": streaming, "parameters": out}
    if streaming:
        meta["supportsAtLeastOnce"] = False
        meta["supportsExactlyOnce"] = True
    path = ROOT / "templates" / job / "metadata.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    for job in sys.argv[1:] or list(SPECS):
        print(write(job))
