"""A soak of the whole local system: ``newsroom run`` for ``--minutes`` with the sample
world releasing at ``--speed`` (its generated events: devtools/world/generated.py, one every 4 virtual minutes, 2-4
reports each, follow-ups and corrections) through the real ingest path, the stories job, the editions stage and the
origin; prints by minute and checks at the end that nothing was lost or stored twice.

Runs the real command (``python -m pipelines.cli run``, a child process: origin, world and ingest in it, the
stories and co-visitation jobs and the Pub/Sub emulator in its children) with ``--progress_s 60 --report``, and
every minute prints:

- release -> page p50 / p95 (s), from the run's own progress line (an article's release by the world to its first
  appearance on a published page, seen by the run's page watcher);
- the RSS (MB) of each process of the run's tree (by role: run, stories-job, covisit-job, pubsub-emulator, other);
- the backlog of each stage, as counts: ``ingest`` = released - fetched (the world's pages not fetched yet: the
  fetch-requests / polling side), ``items-raw`` = fetched - stored (pages fetched and published on the items-raw
  topic that the stories job has not stored), ``stories`` = stored - assigned (stored articles in no story yet).
  The emulator keeps no per-topic backlog metric, so the topics' backlogs are read off the stores on either side.

At the end (the run stops ingest, drains the stories job for at most 45 s and exits), then again after a settle
run (``--settle_minutes``: the same data directory, the world all but stopped; the run republishes what its outbox
holds and the stories job catches up): released, fetched, stored, assigned, and the
duplicates (an article in two live stories; a page stored under two ids is impossible: the article id is the
key). Exact copies of another page's text (wire copies) are fetched and not stored: counted apart.

    .venv/bin/python benchmarks/soak.py --minutes 30 --speed 20      # a half-hour soak
    .venv/bin/python benchmarks/soak.py --minutes 3 --speed 10       # a quick one

Prints, never asserts. The machine is shared: the highest sustained rate is the highest ``--speed`` whose
backlogs stay flat minute after minute (try a few).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTLE_SPEED = 0.001  # the world's clock all but stopped: the settle run releases nothing new
LATENCY = re.compile(r"release->page p50 ([\d.]+)s p95 ([\d.]+)s")
RELEASED = re.compile(r"released (\d+) \| polls \d+ \(\d+ x 304\) fetched (\d+)")


def tree(root: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of ``root`` and its descendants (from /proc), parents first."""
    parents: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(d))
    out, todo = [], [(root, 0)]
    while todo:
        p, parent = todo.pop(0)
        out.append((p, parent))
        todo.extend((c, p) for c in parents.get(p, []))
    return out


def role(pid: int, root: int) -> str:
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if pid == root:
        return "run"
    for needle, name in (("pipelines.stories", "stories-job"), ("covisit", "covisit-job"), ("pubsub", "pubsub")):
        if needle in cmd:
            return name
    return "userclusters" if "userclusters" in cmd else "other"


def rss_by_role(root: int) -> dict[str, float]:
    out: dict[str, float] = {}
    roles: dict[int, str] = {}
    for pid, parent in tree(root):
        r = roles[pid] = role(pid, root)
        if r == "other" and roles.get(parent, "run") != "run":
            r = roles[pid] = roles[parent]  # a job's own workers (the embedder, Beam's) count as the job
        try:
            pages = int(open(f"/proc/{pid}/statm").read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        out[r] = out.get(r, 0.0) + pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return out


def store_counts(data_dir: str) -> dict[str, int]:
    """Stored articles, articles in a live story, and articles in more than one live story."""
    db = os.path.join(data_dir, "newsroom.sqlite3")
    if not os.path.exists(db):
        return {"stored": 0, "assigned": 0, "in_two_stories": 0}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as c:
            stored = c.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
            live = "SELECT m.article_id FROM story_members m JOIN stories s USING (story_id) WHERE s.alias_of IS NULL"
            assigned = c.execute(f"SELECT COUNT(DISTINCT article_id) FROM ({live})").fetchone()[0]
            twice = c.execute(
                f"SELECT COUNT(*) FROM (SELECT article_id FROM ({live}) GROUP BY article_id HAVING COUNT(*) > 1)"
            ).fetchone()[0]
    except sqlite3.Error:
        return {"stored": -1, "assigned": -1, "in_two_stories": -1}
    return {"stored": stored, "assigned": assigned, "in_two_stories": twice}


class Run:
    """``newsroom run`` in a child process, its progress lines read on a thread."""

    def __init__(self, data_dir: str, minutes: float, speed: float, embedder: str):
        self.data_dir = data_dir
        cmd = [sys.executable, "-m", "pipelines.cli", "run", f"--data_dir={data_dir}", "--port=0"]
        cmd += [f"--speed={speed}", f"--minutes={minutes}", "--progress_s=60", f"--embedder={embedder}"]
        cmd += [f"--report={data_dir}/report.json"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.last, self.lines = "", []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if "released" in line:
                self.last = line.rstrip()


def minute_line(minute: int, run: Run) -> str:
    lat = LATENCY.search(run.last)
    rel = RELEASED.search(run.last)
    released, fetched = (int(rel.group(1)), int(rel.group(2))) if rel else (0, 0)
    c = store_counts(run.data_dir)
    rss = rss_by_role(run.proc.pid)
    backlog = f"ingest {released - fetched} items-raw {fetched - c['stored']} stories {c['stored'] - c['assigned']}"
    return (
        f"min {minute:3d} | release->page p50 {lat.group(1) if lat else '-'}s p95 {lat.group(2) if lat else '-'}s | "
        f"released {released} fetched {fetched} stored {c['stored']} assigned {c['assigned']} | backlog {backlog} | "
        "RSS MB " + " ".join(f"{k} {v:.0f}" for k, v in sorted(rss.items()))
    )


def report_of(data_dir: str) -> dict:
    try:
        return json.loads(Path(data_dir, "report.json").read_text())
    except (OSError, ValueError):
        return {}


def final(run: Run, fetched_before: int = 0, latency: dict | None = None) -> str:
    """The end accounting; ``fetched_before``: pages the soak phase fetched (the settle phase's run counts anew)."""
    report = report_of(run.data_dir)
    c = store_counts(run.data_dir)
    released, fetched = report.get("released", -1), report.get("pages_fetched", -1) + fetched_before
    report = {**report, **(latency or {})}
    ok = released == fetched == c["stored"] == c["assigned"] and c["in_two_stories"] == 0
    return (
        f"end: released {released} fetched {fetched} stored {c['stored']} assigned {c['assigned']} "
        f"in two live stories {c['in_two_stories']}: {'EQUAL, each once' if ok else 'NOT EQUAL (see above)'}; "
        f"release->page p50 {report.get('release_to_page_p50_s')}s p95 {report.get('release_to_page_p95_s')}s "
        f"over {report.get('release_to_page_n')} articles"
    )


def watch(run: Run, label: str) -> int:
    """A line a minute until the run exits; its exit status (the last lines of its output printed on failure)."""
    started, minute = time.time(), 0
    while run.proc.poll() is None:
        time.sleep(max(0.0, min(1.0, started + 60 * (minute + 1) - time.time())))
        if time.time() >= started + 60 * (minute + 1):
            minute += 1
            if run.proc.poll() is None:
                print(label + minute_line(minute, run), flush=True)
    status = run.proc.wait()
    if status != 0:
        print("\n".join(run.lines[-30:]))
        print(f"newsroom run exited {status}")
    return status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--speed", type=float, default=10.0, help="the world's speed (newsroom run --speed)")
    ap.add_argument("--embedder", default="hash", help="the stories job's --embedder (default hash: no model)")
    ap.add_argument("--data_dir", default=None, help="default: a temporary directory")
    ap.add_argument(
        "--settle_minutes",
        type=float,
        default=5.0,
        help="then run again this long with the world all but stopped, so the stories job stores what was fetched "
        "(newsroom run drains for 45 s at most); 0: account right after the soak",
    )
    args = ap.parse_args(argv)
    if args.minutes <= 0 or args.speed <= 0:
        ap.error("--minutes and --speed must be > 0")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        data_dir = args.data_dir or tmp
        run = Run(data_dir, args.minutes, args.speed, args.embedder)
        if watch(run, "") != 0:
            return 1
        soaked = report_of(data_dir)
        print("after the soak, before settling: " + final(run), flush=True)
        if args.settle_minutes > 0:  # the world all but stopped; the run replays its outbox, the job catches up
            settle = Run(data_dir, args.settle_minutes, SETTLE_SPEED, args.embedder)
            if watch(settle, "settle ") != 0:
                return 1
            keep = ("release_to_page_p50_s", "release_to_page_p95_s", "release_to_page_n")
            print(final(settle, soaked.get("pages_fetched", 0), {k: soaked.get(k) for k in keep}), flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
