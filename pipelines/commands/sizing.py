"""``newsroom sizing [--articles_per_day N ...] [--figures FILE]``: workers, machine types, Bigtable nodes and a cost
per day, computed from the per-stage costs measured by benchmarks/sizing_bench.py (docs/operations.md "Sizing").

The measured figures (CPU per article of normalise, embed and write; CPU of a ranking cycle per 1,000 live
stories; writer state per live story; Article bytes; origin CPU per page request) are kept in
docs/sizing-measured.json; :func:`plan` turns them into a deployment with the assumptions below, each a named
constant so that a reader can disagree with one and rerun. tests/deploy/test_sizing.py checks that the
Terraform settings of each environment (terraform/environments/ENV/main.tf) are :func:`terraform_settings` of
its design volume (``ENVIRONMENTS``): change a measurement or an assumption, and the test names what to change.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[2] / "docs" / "sizing-measured.json"

# Assumptions (not measured here): ---------------------------------------------------------------------------
PEAK = 3.0  # busiest hour / daily mean (a news day's rhythm; breaking news adds bursts on top)
LIVE_DAYS = 2.0  # the ranker's live window (48 h)
PIPELINE_OVERHEAD = 2.0  # Beam, Pub/Sub, Bigtable I/O, dedupe and syndication on top of the measured compute
UTILISATION = 0.6  # target CPU use of a worker at peak (autoscaling headroom)
CATCH_UP = 2.0  # max workers / peak workers: a backlog drains at twice the peak rate
INGEST_SHARE = 0.25  # ingest CPU per article / the stories job's (fetch + feed parse; the page parse is normalise's)
STORIES_MACHINE, STORIES_VCPU, STORIES_GB = "n2-highmem-4", 4, 32
INGEST_MACHINE, INGEST_VCPU, INGEST_GB = "n2-standard-2", 2, 8
STATE_SHARE = 0.4  # share of a stories worker's memory its state may take (state is replicated in the ranker too)
BT_WRITES_PER_ARTICLE = 8  # article, content claim, story, live row, change, writer, coverage, pointer moves
BT_NODE_WRITES = 10_000  # rows/s one SSD node sustains (Bigtable's guidance), used at 50 %
BT_RETENTION_DAYS = 30  # articles kept in Bigtable (older ones live in backfill files)
BT_NODE_TB = 5.0  # SSD storage per node
ORIGIN_VCPU = 1  # Cloud Run instance (terraform/modules/origin cpu)
ORIGIN_PEAK_RPS = {"dev": 100, "prod": 2_000}  # audience, not articles: uncached (For you) requests/s at peak
# Prices (USD, list, us-central1/europe-west1 class regions; check the calculator before budgeting)
PRICE_VCPU_H, PRICE_GB_H = 0.069, 0.003557  # Dataflow streaming worker vCPU-hour, GB-hour
PRICE_BT_NODE_H, PRICE_BT_GB_MONTH = 0.65, 0.17
PRICE_RUN_INSTANCE_H = 0.104  # 1 vCPU + 2 GiB always allocated
PRICE_PUBSUB_TIB = 40.0
RAW_ITEM_KB = 150.0  # a fetched page on the bus (items-raw), published once and delivered once

VOLUMES = (100_000, 2_000_000, 10_000_000)
ENVIRONMENTS = {"dev": 100_000, "prod": 2_000_000}  # the design volume of each Terraform environment


def load_figures(path: Path | str = FIGURES) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def plan(figures: dict, volumes=VOLUMES, env: str = "prod") -> list[dict]:
    """One row per articles/day volume: cores, workers, nodes and the cost per day (module docstring)."""
    rows = []
    for v in volumes:
        mean_rate = v / 86_400
        peak = mean_rate * PEAK
        per_article_s = (figures["normalise_cpu_ms"] + figures["embed_cpu_ms"] + figures["write_cpu_ms"]) / 1000
        live = v * LIVE_DAYS / figures["articles_per_story"]
        rank_cores = figures["rank_cpu_s_per_1k_stories"] * live / 1000 / 60  # one cycle a minute
        stories_peak = peak * per_article_s * PIPELINE_OVERHEAD + rank_cores
        stories_mean = mean_rate * per_article_s * PIPELINE_OVERHEAD + rank_cores
        state_gb = live * figures["state_bytes_per_story"] / 1e9
        by_cpu = math.ceil(stories_peak / (STORIES_VCPU * UTILISATION))
        by_memory = math.ceil(state_gb / (STORIES_GB * STATE_SHARE))
        stories_workers = max(1, by_cpu, by_memory)
        ingest_workers = max(1, math.ceil(peak * per_article_s * INGEST_SHARE / (INGEST_VCPU * UTILISATION)))
        writes = peak * BT_WRITES_PER_ARTICLE
        stored_tb = v * BT_RETENTION_DAYS * figures["article_bytes"] * 3 / 1e12  # rows, story copy, indexes
        nodes = max(1, math.ceil(writes / (BT_NODE_WRITES * 0.5)), math.ceil(stored_tb / (BT_NODE_TB * 0.7)))
        origin_rps = ORIGIN_PEAK_RPS[env]
        per_request_ms = figures["origin_cpu_ms_per_request"] + figures["foryou_cpu_ms_per_request"]
        origin = max(1, math.ceil(origin_rps * per_request_ms / 1000 / (ORIGIN_VCPU * UTILISATION)))
        mean_stories = max(1, math.ceil(stories_mean / (STORIES_VCPU * UTILISATION)), by_memory)
        cost = {
            "dataflow": 24
            * (
                mean_stories * (STORIES_VCPU * PRICE_VCPU_H + STORIES_GB * PRICE_GB_H)
                + max(1, math.ceil(ingest_workers / 2)) * (INGEST_VCPU * PRICE_VCPU_H + INGEST_GB * PRICE_GB_H)
            ),
            "bigtable": 24 * nodes * PRICE_BT_NODE_H + stored_tb * 1000 * PRICE_BT_GB_MONTH / 30,
            "origin": 24 * max(1, math.ceil(origin / 2)) * PRICE_RUN_INSTANCE_H,
            "pubsub": v * RAW_ITEM_KB * 2 / 2**30 * PRICE_PUBSUB_TIB,
        }
        rows.append(
            {
                "articles_per_day": v,
                "peak_articles_per_s": round(peak, 2),
                "live_stories": int(live),
                "stories_cores_peak": round(stories_peak, 2),
                "state_gb": round(state_gb, 2),
                "stories_workers": stories_workers,
                "stories_max_workers": max(2, math.ceil(stories_workers * CATCH_UP)),
                "ingest_max_workers": max(2, math.ceil(ingest_workers * CATCH_UP)),
                "bigtable_nodes": nodes,
                "bigtable_max_nodes": max(3, nodes * 3),
                "origin_max_instances": max(10, math.ceil(origin * CATCH_UP)),
                "cost_per_day": {k: round(c, 2) for k, c in cost.items()} | {"total": round(sum(cost.values()), 2)},
            }
        )
    return rows


def terraform_settings(figures: dict, env: str) -> dict[str, int]:
    """The sizes terraform/environments/ENV/main.tf sets, from the plan of its design volume."""
    row = plan(figures, (ENVIRONMENTS[env],), env)[0]
    ha = 2 if env == "prod" else 1  # prod keeps two of what can fail over (nodes, origin instances)
    return {
        "bigtable_min_nodes": max(ha, row["bigtable_nodes"]),
        "bigtable_max_nodes": row["bigtable_max_nodes"],
        "ingest_max_workers": row["ingest_max_workers"],
        "stories_max_workers": row["stories_max_workers"],
        "origin_min_instances": ha,
        "origin_max_instances": row["origin_max_instances"],
    }


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/operations.md "Sizing"."""
    out = [
        "| articles/day | peak/s | live stories | stories cores at peak | state | stories workers (max) | "
        "ingest max workers | Bigtable nodes (max) | cost/day: Dataflow + Bigtable + origin + Pub/Sub = total |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = r["cost_per_day"]
        out.append(
            f"| {r['articles_per_day']:,} | {r['peak_articles_per_s']} | {r['live_stories']:,} | {r['stories_cores_peak']} "
            f"| {r['state_gb']} GB | {r['stories_workers']} ({r['stories_max_workers']}) x {STORIES_MACHINE} "
            f"| {r['ingest_max_workers']} x {INGEST_MACHINE} | {r['bigtable_nodes']} ({r['bigtable_max_nodes']}) "
            f"| ${c['dataflow']} + ${c['bigtable']} + ${c['origin']} + ${c['pubsub']} = **${c['total']}** |"
        )
    return "\n".join(out)


def add_arguments(parser) -> None:
    parser.add_argument("--articles_per_day", type=int, nargs="*", default=list(VOLUMES), help="Volumes to size.")
    parser.add_argument("--figures", default=str(FIGURES), help="Measured figures (benchmarks/sizing_bench.py --json).")


def main(args) -> int:
    print(table(plan(load_figures(args.figures), tuple(args.articles_per_day))))
    for env in ENVIRONMENTS:
        print(f"terraform/environments/{env}: {terraform_settings(load_figures(args.figures), env)}")
    return 0
