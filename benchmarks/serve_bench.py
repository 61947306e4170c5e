"""Origin benchmark: edition page and For you under gunicorn, against nginx serving the same page bytes as a static
file, with the same load generator in the same run; plus the For you re-rank in-process.

    .venv/bin/python benchmarks/serve_bench.py [--duration 10] [--connections 32] [--compare]

Prints:
  1. re-rank of 1,000 candidates in-process (serving.personal.ranking.rank, a full profile: 3 topics, 2 sources, 1 place,
     2 hidden sources, an interest vector, 200 reads, 5 "fewer like this", co-visitation on: 50 neighbours of
     each of the 10 newest reads, summed per request from the cached lists as the origin does; readers like you
     on: 10 user clusters of 50 stories each, the paper's score summed per request from the cached lists; and the
     trend blend, always on): median and p99 (targets 2 ms / 5 ms), and the median without the collaborative
     sources (co-visitation, clusters) beside it;
  2. requests/s and p50/p99 latency with wrk (-t2 -c32 --latency, keep-alive) for: nginx static file, the origin's
     edition page, the origin's For you (one reader, profile cached after the first request; -c4, inside the
     shedding budget, so the figure is answered feeds rather than 503s);
  3. origin / nginx throughput ratio (target >= 12 %);
  4. the edition page at a fixed ~1,000 requests/s (wrk with a Lua pacing script: each of 11 connections waits
     10 ms after each response; the achieved rate is printed) and its p99 (target <= 20 ms);
  5. with --compare: edition-page throughput under other gunicorn worker models (the reason for the choice in
     serving/worker/gunicorn.conf.py).

Load generator: wrk (Debian package `wrk`); the script stops with a message if it is missing. All traffic goes to
127.0.0.1 on free ports; every run is bounded by --duration; the origin and nginx are stopped by PID at the end.
The machine has 2 cores shared by wrk, nginx and gunicorn: figures are for comparison side by side, not absolute.
"""

from __future__ import annotations

import os

# The origin's setting (pipelines/commands/serve.py): one BLAS thread, set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools import local_origin, samples  # noqa: E402
from serving.http.auth import issue_token  # noqa: E402

EDITION = "us-en"
TOKEN_SECRET = "bench-secret"
SHIPPED_WORKER = "serving.worker.gworker.BufferingThreadWorker"  # serving/worker/gunicorn.conf.py worker_class
PACE_LUA = """
local pause = tonumber(os.getenv("WRK_PAUSE_MS") or "10")
function delay()
  return pause
end
"""


def rerank_benchmark(iterations: int = 3000) -> dict:
    import numpy as np

    from serving.personal.clusters import Clusters
    from serving.personal.ranking import COVISIT_READS, Covisit, FeedSlice, ProfileView, rank
    from serving.state.catalog import PreparedPool
    from transforms.userclusters.minhash import score as cluster_score

    pool = PreparedPool.build(samples.candidate_pool(EDITION, 1, n=1000))
    rng = np.random.default_rng(1)
    reads = [
        {"story_id": pool.story_ids[int(i)], "at": 1_700_000_000_000 - k}
        for k, i in enumerate(rng.choice(len(pool.story_ids), 200, replace=False))
    ]
    interest = rng.normal(size=64)
    doc = {
        "follows": {
            "topics": ["science", "tech", "climate"],
            "sources": ["pub-3", "pub-7"],
            "places": ["lagos", "place:pune"],
            "entities": ["org:isro", "person:ada-lovelace"],
        },
        "hidden_sources": ["pub-1", "pub-2"],
        "interest": {"vector": interest.tolist(), "mass": 12.0, "at": 1},
        "fewer": [{"story_id": pool.story_ids[i], "vector": pool.vectors[i].tolist()} for i in (5, 50, 70, 90, 110)],
        "reads": reads,
    }
    view = ProfileView.from_profile("bench", doc)
    # co-visitation: what serving.personal.readers.CovisitCache.lists returns for the reader's newest reads (50 each)
    now = 1_700_000_000_000
    recent = view.reads[:COVISIT_READS]
    lists = {
        sid: (
            tuple(
                (pool.story_ids[int(j)], float(c))
                for j, c in zip(rng.choice(len(pool.story_ids), 50), rng.uniform(0.1, 9, 50))
            ),
            now - 3_600_000,
        )
        for sid in recent
    }

    # user clusters: what serving.personal.clusters.ClusterCache.lists returns for the reader's 10 clusters (50 stories each)
    cluster_lists = [
        (
            tuple(
                (pool.story_ids[int(j)], float(c))
                for j, c in zip(rng.choice(len(pool.story_ids), 50), rng.uniform(1, 9, 50))
            ),
            400.0,
            now,
        )
        for _ in range(10)
    ]

    # the origin keeps the reader's Clusters (and its term per pool) for the profile TTL: built once here, its
    # first-request cost (the paper's score over the lists, then the term) timed apart below
    clusters = Clusters(cluster_score(cluster_lists))

    def rerank(covisit=True):
        if not covisit:
            return rank(pool, view, FeedSlice(0, 20))
        return rank(pool, view, FeedSlice(0, 20), covisit=Covisit.from_lists(recent, lists, now), clusters=clusters)

    covisit_terms = int(np.count_nonzero(Covisit.from_lists(recent, lists, now).term(pool)))
    cluster_terms = int(np.count_nonzero(Clusters(cluster_score(cluster_lists)).term(pool)))
    for _ in range(200):
        rerank()
    times, cpu = [], []
    for _ in range(iterations):
        c0 = time.thread_time_ns()
        t0 = time.perf_counter()
        rerank()
        times.append(time.perf_counter() - t0)
        cpu.append((time.thread_time_ns() - c0) / 1e9)
    plain = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        rerank(covisit=False)
        plain.append(time.perf_counter() - t0)
    times.sort()
    cpu.sort()
    # the second page of a feed session: the first page's 20 items served (a cursor), positions 20..39
    served = np.zeros(len(pool.story_ids), dtype=bool)
    served[[i for i, _ in rank(pool, view, FeedSlice(0, 20))]] = True
    page2 = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        rank(pool, view, FeedSlice(20, 20, served))
        page2.append(time.perf_counter() - t0)
    page2.sort()
    return {
        "candidates": len(pool.story_ids),
        "median_ms": statistics.median(times) * 1000,
        "covisit_neighbours": sum(len(v[0]) for v in lists.values()),
        "covisit_candidates": covisit_terms,
        "cluster_candidates": cluster_terms,
        "median_no_covisit_ms": statistics.median(plain) * 1000,
        "p99_ms": times[int(0.99 * len(times))] * 1000,
        "page2_median_ms": statistics.median(page2) * 1000,
        "cpu_median_ms": statistics.median(cpu) * 1000,
        "cpu_p99_ms": cpu[int(0.99 * len(cpu))] * 1000,
        "profile_view_build_ms": _time(lambda: ProfileView.from_profile("bench", doc), 200) * 1000,
        "clusters_build_ms": _time(lambda: Clusters(cluster_score(cluster_lists)).term(pool), 200) * 1000,
    }


def _time(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


COVISIT_READS_SHOWN = 10  # serving.personal.ranking.COVISIT_READS (not imported at module load: numpy threads first)

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_wrk(out: str) -> dict:
    def lat(pct):
        m = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        return float(m.group(1)) * _UNITS[m.group(2)] if m else float("nan")

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:(.*)", out)
    total = re.search(r"(\d+) requests in", out)
    return {
        "rps": float(rps.group(1)) if rps else float("nan"),
        "p50_ms": lat(50),
        "p99_ms": lat(99),
        "requests": int(total.group(1)) if total else 0,
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1).strip() if errors else "",
    }


def wrk(
    url: str,
    duration: int,
    connections: int,
    threads: int = 2,
    headers: dict | None = None,
    script: Path | None = None,
    env: dict | None = None,
) -> dict:
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "5s"]
    for k, v in (headers or {}).items():
        cmd += ["-H", f"{k}: {v}"]
    if script:
        cmd += ["-s", str(script)]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30, env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed: {out.stderr}")
    return parse_wrk(out.stdout)


def fetch(url: str, headers: dict | None = None) -> bytes:
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def build_world(data_dir: Path, page_stories: int, supporting: int) -> None:
    from stores import StoreConfig, open_stores

    stores = open_stores(StoreConfig(data_dir=str(data_dir)))
    for doc in (
        samples.edition_page(EDITION, "top", 1, n_stories=page_stories, supporting=supporting),
        samples.candidate_pool(EDITION, 1, n=1000),
    ):
        samples.publish(stores.pointers, stores.snapshots, doc)


def fmt(r: dict) -> str:
    extra = f", non-2xx {r['non_2xx']}" if r["non_2xx"] else ""
    extra += f", socket errors {r['socket_errors']}" if r["socket_errors"] else ""
    head = f"{r['rps']:9.0f} req/s   p50 {r['p50_ms']:6.2f} ms   p99 {r['p99_ms']:6.2f} ms"
    return f"{head}   ({r['requests']} requests{extra})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=10, help="Seconds per wrk run. Default: 10.")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections. Default: 32.")
    ap.add_argument(
        "--foryou_connections",
        type=int,
        default=4,
        help="wrk connections for For you: within the shedding budget (2 in flight + 2 waiting per "
        "worker), so the figure is served throughput, not 503s. Default: 4.",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument(
        "--worker_class",
        default=None,
        help="gunicorn worker class. Default: the one serving/worker/gunicorn.conf.py ships "
        "(serving.worker.gworker.BufferingThreadWorker: gthread whose poller answers hot shared GETs itself).",
    )
    ap.add_argument("--page_stories", type=int, default=12, help="Stories on the page (~1.8 KB each). Default: 12.")
    ap.add_argument("--supporting", type=int, default=2)
    ap.add_argument("--compare", action="store_true", help="Also measure other gunicorn worker models.")
    ap.add_argument("--json", action="store_true", help="Print the figures as JSON at the end.")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install -y wrk", file=sys.stderr)
        return 2
    if local_origin.nginx_binary() is None:
        print("nginx is not installed: apt-get install -y nginx", file=sys.stderr)
        return 2
    results: dict = {}

    print("== For you re-rank in-process (1,000 candidates, full profile, every source on)")
    rr = rerank_benchmark()
    results["rerank"] = rr
    print(f"   wall: median {rr['median_ms']:.3f} ms   p99 {rr['p99_ms']:.3f} ms   (targets 2 ms / 5 ms)")
    print(
        f"   co-visitation: {rr['covisit_neighbours']} neighbours of {COVISIT_READS_SHOWN} reads summed per request "
        f"({rr['covisit_candidates']} candidates boosted); user clusters: 10 x 50 stories "
        f"({rr['cluster_candidates']} candidates; built once per reader and TTL in "
        f"{rr['clusters_build_ms']:.3f} ms); median without both {rr['median_no_covisit_ms']:.3f} ms"
    )
    print(
        f"   CPU:  median {rr['cpu_median_ms']:.3f} ms   p99 {rr['cpu_p99_ms']:.3f} ms   "
        f"(wall minus time this thread was not running); profile view build {rr['profile_view_build_ms']:.3f} ms "
        f"(once per cached profile)"
    )
    import os as _os

    print(f"   load average while measuring: {_os.getloadavg()[0]:.2f} (2 cores)")

    tmp = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    data = tmp / "data"
    build_world(data, args.page_stories, args.supporting)
    env = {"NEWSROOM_TOKEN_SECRET": TOKEN_SECRET, "NEWSROOM_WATCH_INTERVAL_S": "5"}
    origin = nginx = None
    try:
        origin, oport = local_origin.start_origin(
            data,
            tmp / "origin.log",
            workers=args.workers,
            threads=args.threads,
            worker_class=args.worker_class,
            env=env,
        )
        page_path = f"/v1/editions/{EDITION}/sections/top"
        page = fetch(f"http://127.0.0.1:{oport}{page_path}")
        static = tmp / "static"
        static.mkdir()
        (static / "page.json").write_bytes(page)
        nginx, nport = local_origin.start_nginx(tmp / "nginx", oport, static_dir=static, access_log=False)
        assert fetch(f"http://127.0.0.1:{nport}/static/page.json") == page
        token = issue_token(TOKEN_SECRET, "bench-reader")
        auth = {"Authorization": f"Bearer {token}"}
        feed_path = f"/v1/feed/for-you?edition={EDITION}"
        fetch(f"http://127.0.0.1:{oport}{feed_path}", auth)
        print(
            f"== page {len(page)} bytes; gunicorn {args.worker_class or SHIPPED_WORKER} {args.workers} workers x {args.threads} threads; "
            f"wrk -t2 -c{args.connections} -d{args.duration}s on 127.0.0.1 (2 cores shared by all)"
        )
        d, c = args.duration, args.connections
        results["nginx_static"] = wrk(f"http://127.0.0.1:{nport}/static/page.json", d, c)
        print(f"   nginx static file      {fmt(results['nginx_static'])}")
        results["origin_page"] = wrk(f"http://127.0.0.1:{oport}{page_path}", d, c)
        print(f"   origin edition page    {fmt(results['origin_page'])}")
        results["origin_for_you"] = wrk(
            f"http://127.0.0.1:{oport}{feed_path}", d, args.foryou_connections, headers=auth
        )
        print(f"   origin For you (-c{args.foryou_connections})  {fmt(results['origin_for_you'])}")
        ratio = results["origin_page"]["rps"] / results["nginx_static"]["rps"]
        results["ratio"] = ratio
        print(f"== origin / nginx static throughput: {100 * ratio:.1f} %  (target >= 12 %)")
        script = tmp / "pace.lua"
        script.write_text(PACE_LUA)
        paced = wrk(f"http://127.0.0.1:{oport}{page_path}", d, 11, script=script, env={"WRK_PAUSE_MS": "10"})
        results["origin_page_paced"] = paced
        print(
            f"== edition page paced at ~1,000 req/s (11 connections, 10 ms pause after each response): "
            f"achieved {paced['rps']:.0f} req/s, p50 {paced['p50_ms']:.2f} ms, p99 {paced['p99_ms']:.2f} ms "
            f"(target p99 <= 20 ms)"
        )
        if args.compare:
            local_origin.stop(origin)
            origin = None
            print("== worker models, edition page (same wrk settings)")
            results["models"] = {}
            for wc, w, t in (
                (SHIPPED_WORKER, 2, 8),
                ("gthread", 2, 8),
                ("gthread", 2, 4),
                ("gthread", 4, 4),
                ("gthread", 1, 16),
                ("sync", 2, 1),
                ("sync", 4, 1),
            ):
                proc, port = local_origin.start_origin(
                    data, tmp / f"origin-{wc}-{w}-{t}.log", workers=w, threads=t, worker_class=wc, env=env
                )
                try:
                    r = wrk(f"http://127.0.0.1:{port}{page_path}", d, c)
                    f = wrk(f"http://127.0.0.1:{port}{feed_path}", d, args.foryou_connections, headers=auth)
                finally:
                    local_origin.stop(proc)
                results["models"][f"{wc} {w}x{t}"] = {"page": r, "for_you": f}
                print(f"   {wc.rsplit('.', 1)[-1]:21s} {w} x {t:2d}  page {fmt(r)}")
                print(f"                  For you {fmt(f)}")
    finally:
        local_origin.stop(nginx)
        local_origin.stop(origin)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
