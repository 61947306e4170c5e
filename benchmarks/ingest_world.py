"""Ingest the sample publisher world end to end on this machine and print discovery delays.

Starts the sample world (devtools/world), the origin (serving.create_app, for its WebSub callback and ping
endpoints; served by werkzeug on a free loopback port) and the local ingest driver (pipelines.ingest_local.LocalIngest)
with the embedded stores in a temporary directory. The world's wire service pushes through its WebSub hub, three
publishers ping, the rest are polled. Prints, for every article released while it runs: release -> discovery and
release -> page fetched (p50 / p95 / max), per discovery path, plus poll counts and the share of 304s.

This is also the wiring the main job uses (devtools/run.py, the lead's): see ``start_stack`` below.

Usage: python benchmarks/ingest_world.py [--speed 10] [--seconds 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def start_stack(data_dir: str, speed: float, on_item=None):
    """World + origin + ingest. Returns (world, ingest, origin_url, stop)."""
    from werkzeug.serving import make_server

    from devtools.world.server import make_ping_keys, start_world
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions
    from serving import create_app

    keys = make_ping_keys()
    app = create_app(
        {
            "NEWSROOM_DATA_DIR": data_dir,
            "NEWSROOM_BACKGROUND": False,
            "NEWSROOM_PING_KEYS": keys,
            "NEWSROOM_TOKEN_SECRET": "demo-token-secret-0123456789abcdef",
            "NEWSROOM_CURSOR_SECRET": "demo-cursor-0123456789",
        }
    )
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{srv.server_port}"
    world = start_world(speed=speed, ping_url=origin + "/v1/ping", ping_keys=keys)
    scale = 1.0 / speed  # the world's clock runs `speed` times faster: so does the schedule
    options = IngestOptions(
        [
            f"--data_dir={data_dir}",
            f"--schedule_scale={scale}",
            "--poll_max_s=300",
            "--min_host_delay_s=0.1",
            f"--websub_callback_base={origin}",
            "--request_poll_s=0.2",
            "--replay_after_s=86400",  # no stories job settles the outbox here: no replay may count as a discovery
        ]
    )
    ingest = LocalIngest.from_options(options, host_overrides=world.host_overrides, on_item=on_item)
    ingest.start()

    def stop():
        ingest.stop()
        world.stop()
        srv.shutdown()
        app.extensions["newsroom"].close()

    return world, ingest, origin, stop


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q / 100 * (len(v) - 1) + 0.5))] if v else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=200.0)
    a = ap.parse_args(argv)
    rows = []
    started = time.time() * 1000
    holder = {}

    def on_item(raw):
        world = holder["world"]
        art = world.article_by_url(raw["fetched_url"])
        if art is None or world.released_ms(art) < started:
            return
        released = world.released_ms(art)
        fix = art.get("correction")
        if fix and (raw.get("entry") or {}).get("title") == fix["headline"]:
            released = world.clock.release_ms(fix["at"])
        rows.append((raw["source"], raw["first_seen_at"] - released, raw["fetched_at"] - released, art["id"]))

    with tempfile.TemporaryDirectory() as tmp:
        holder["world"] = None
        world, ingest, origin, stop = start_stack(tmp, a.speed, on_item)
        holder["world"] = world
        print(f"world {world.base_url}, origin {origin}, running {a.seconds:.0f} s at speed x{a.speed:g}", flush=True)
        try:
            time.sleep(a.seconds)
        finally:
            stop()
        stats = ingest.stats()
    print(json.dumps(stats, sort_keys=True))
    print(
        f"hub deliveries: {len(world.deliveries)} (statuses {sorted({d['status'] for d in world.deliveries})}); "
        f"pings sent: {len(world.pings_sent)} (statuses {sorted({p['status'] for p in world.pings_sent})})"
    )
    polls = stats.get("polls", 0)
    n304 = stats.get("not_modified", 0)
    print(f"polls: {polls}, 304: {n304} ({100 * n304 / max(1, polls):.0f} %)")
    print(f"articles released during the run and fetched: {len(rows)}")
    for source in sorted({r[0] for r in rows}) + ["ALL"]:
        sel = [r for r in rows if source == "ALL" or r[0] == source]
        seen = [r[1] / 1000 for r in sel]
        fetched = [r[2] / 1000 for r in sel]
        print(
            f"  {source:<8} n={len(sel):<3} release->discovery p50 {pct(seen, 50):5.1f} s  p95 {pct(seen, 95):5.1f} s"
            f"  max {max(seen):5.1f} s | release->fetched p95 {pct(fetched, 95):5.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
