"""A soak of the whole local system: ``newsroom run`` for ``--minutes`` with the sample
world releasing at ``--speed`` (its generated events: devtools/world/generated.py, one every 4 virtual minutes, 2-4
reports each, follow-ups and corrections) through the real ingest path, the stories job, the editions stage and the
origin; prints by minute and checks at the end that nothing was lost or stored twice.

Runs the real command (``python -m pipelines.cli run``, a child process: origin, world and ingest in it, the
stories and co-visitation jobs and the Pub/Sub emulator in its children) with ``--progress_s 15 --report``, and
every minute prints:

- release -> page p50 / p95 (s), from the run's own progress line (an article's release by the world to its first
  appearance on a published page, seen by the run's page watcher every 15 s);
- every page the world released so far followed through the stores (:func:`account`: the world is rebuilt from
  the run's world.json, its releases being a function of its clock): released, fetched (claimed by ingest),
  stored, assigned (in a live story);
- the backlog of each stage, as counts: ``ingest`` = released - fetched (pages not polled yet), ``items-raw`` =
  pages held in ingest's outbox (fetched and published on the items-raw topic, not stored by the stories job yet),
  ``stories`` = stored - assigned (stored articles in no story yet). The emulator keeps no per-topic backlog
  metric, so the backlogs are read off the stores on either side;
- the load average, and the RSS (MB) and CPU seconds over the minute of each process of the run's tree, by role
  (run = origin + world + ingest, stories-job, covisit-job, pubsub emulator, other): CPU seconds are the figure
  that holds on a shared machine.

At the end (the run stops ingest, drains the stories job for at most 45 s and exits), then again after a settle
run (``--settle_minutes`` at most: the same data directory, the world all but stopped with ``--speed 0.001``; the
run republishes what its outbox holds, the bus being new, and the stories job catches up; stopped by SIGINT once
nothing is held and everything stored is assigned): released = fetched = stored = assigned, held, lost (fetched,
neither stored nor held), pages fetched twice (ingest's new-page fetches over both runs, corrections and outbox
replays counted apart, against the pages claimed) and articles in two live stories. The world's pages that must not
be stored are counted apart: exact copies of a stored page (same text: the scripted wire copies, and the generated
reports that repeat an earlier event's word for word), the members page (robots.txt), the future-dated page.

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
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # devtools (the sample world) is not installed: it is read from the checkout
SETTLE_SPEED = 0.001  # the world's clock all but stopped: the settle run releases nothing new
LATENCY = re.compile(r"release->page p50 ([\d.]+)s p95 ([\d.]+)s")
PROGRESS_S = 15  # the run's progress line (and page watcher: the release -> page figures' resolution)
SETTLED_CHECKS = 2  # the settle run stops once this many checks in a row find nothing held and nothing unassigned
# scripted pages of the sample world that must not be stored, by what marks them in devtools/world/content.py
COPIES = "exact copies (same text as a stored page: wire copies, repeated generated reports)"
REFUSED = (("members", "members pages (robots.txt disallows them)"), ("future_days", "future-dated (refused)"))


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


def usage_by_role(root: int) -> tuple[dict[str, float], dict[str, float]]:
    """(RSS MB, CPU s used so far (user + system)) of the run's process tree, summed by role."""
    rss: dict[str, float] = {}
    cpu: dict[str, float] = {}
    roles: dict[int, str] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid, parent in tree(root):
        r = roles[pid] = role(pid, root)
        if r == "other" and roles.get(parent, "run") != "run":
            r = roles[pid] = roles[parent]  # a job's own workers (the embedder, Beam's) count as the job
        try:
            pages = int(open(f"/proc/{pid}/statm").read().split()[1])
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue
        rss[r] = rss.get(r, 0.0) + pages * os.sysconf("SC_PAGE_SIZE") / 2**20
        cpu[r] = cpu.get(r, 0.0) + sum(int(f) for f in fields[11:15]) / tick  # its and its reaped children's
    return rss, cpu


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


def world_of(data_dir: str):
    """The run's sample world as world.json has it (not started: its releases are a function of its clock)."""
    from devtools.world.server import SampleWorld, world_state

    path = Path(data_dir, "world.json")
    if not path.exists():
        return None
    st = world_state(path, None, None)
    return SampleWorld(speed=st["speed"], start_s=st["start_s"], seed=st["seed"], changes=st["changes"])


def feed_counts(data_dir: str) -> tuple[set[str], set[str]]:
    """(the URLs ingest claimed as new pages (a correction's claim is ``url#fingerprint``), the URLs held in the
    outbox: claimed, not settled by the stories job yet)."""
    db = os.path.join(data_dir, "newsroom.sqlite3")
    if not os.path.exists(db):
        return set(), set()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as c:
            keys = {json.loads(v)["key"] for (v,) in c.execute("SELECT claim FROM feeds_claims")}
            held = {json.loads(r)["discovery"]["url"] for (r,) in c.execute("SELECT record FROM feeds_outbox")}
    except sqlite3.Error:
        return set(), set()
    return {k for k in keys if "#" not in k}, held


def families(articles) -> dict[str, set[str]]:
    """Each world page's id -> the article ids of every page of the same text: a scripted wire copy (``copy_of``)
    with its original, and pages whose headline and paragraphs are the same (the generator draws an event's names from
    short lists, so an event's report can repeat an earlier one word for word, ~170 events apart)."""
    from transforms.articles.urls import article_id

    root: dict[str, str] = {}

    def find(x: str) -> str:
        while root.setdefault(x, x) != x:
            x = root[x]
        return x

    first_of_text: dict[tuple, str] = {}
    for a in articles:
        if a.get("copy_of"):
            root[find(a["id"])] = find(a["copy_of"])
        text = (a.get("headline"), tuple(a.get("paras") or ()))
        root[find(a["id"])] = find(first_of_text.setdefault(text, a["id"]))
    members: dict[str, set[str]] = {}
    for a in articles:
        members.setdefault(find(a["id"]), set()).add(article_id(a["url"]))
    return {a["id"]: members[find(a["id"])] for a in articles}


def refusal(a: dict, stored: set[str], family: dict[str, set[str]]) -> str | None:
    """Why the world's page ``a`` (not stored) was meant not to be: REFUSED, or an exact copy of a page stored."""
    from transforms.articles.urls import article_id

    kind = next((why for field, why in REFUSED if a.get(field)), None)
    copies = family.get(a["id"], set())
    if kind is None and len(copies) > 1 and stored & (copies - {article_id(a["url"])}):
        kind = COPIES
    return kind


def account(data_dir: str, at_ms: int | None = None) -> dict:
    """Every page the world released by ``at_ms`` (default now), followed through: claimed by ingest (fetched),
    stored, in a live story; a page not stored is one the world meant to be refused (REFUSED, COPIES), held (in the
    outbox: claimed, to be stored) or lost."""
    from transforms.articles.urls import article_id

    world = world_of(data_dir)
    if world is None:
        return {}
    claimed, held = feed_counts(data_dir)
    db = os.path.join(data_dir, "newsroom.sqlite3")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as c:
        stored = {r[0] for r in c.execute("SELECT article_id FROM articles")}
        live = "SELECT m.article_id FROM story_members m JOIN stories s USING (story_id) WHERE s.alias_of IS NULL"
        assigned = {r[0] for r in c.execute(live)}
    released = world.release_times(at_ms)  # first: it adds the generated events released by then
    family = families(world.articles.values())
    out = {"released": 0, "fetched": 0, "stored": 0, "assigned": 0, "held": 0, "lost": [], "refused": {}}
    # lost: fetched (claimed), neither stored nor held, so nothing would ever store it; released - fetched is the
    # ingest backlog (pages not polled yet)
    for url in released:
        a = world.article_by_url(url)
        aid, link = article_id(a["url"]), world.feed_link(a)
        kind = None if aid in stored else refusal(a, stored, family)
        if kind is not None:
            out["refused"][kind] = out["refused"].get(kind, 0) + 1
            continue
        fetched = link in claimed or a["url"] in claimed
        out["released"] += 1
        out["fetched"] += fetched
        out["stored"] += aid in stored
        out["assigned"] += aid in assigned
        if aid not in stored and (link in held or a["url"] in held):
            out["held"] += 1
        elif aid not in stored and fetched:
            out["lost"].append(a["url"])
    return out


class Run:
    """``newsroom run`` in a child process, its progress lines read on a thread."""

    def __init__(self, data_dir: str, minutes: float, speed: float, embedder: str):
        self.data_dir = data_dir
        cmd = [sys.executable, "-m", "pipelines.cli", "run", f"--data_dir={data_dir}", "--port=0"]
        cmd += [f"--speed={speed}", f"--minutes={minutes}", f"--progress_s={PROGRESS_S}", f"--embedder={embedder}"]
        cmd += [f"--report={data_dir}/report.json"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.last, self.lines = "", []
        self.cpu: dict[str, float] = {}  # CPU s by role at the last minute line
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if "released" in line:
                self.last = line.rstrip()


def minute_line(minute: int, run: Run) -> str:
    lat = LATENCY.search(run.last)
    acc = account(run.data_dir)
    c = store_counts(run.data_dir)
    rss, cpu = usage_by_role(run.proc.pid)
    used = {k: v - run.cpu.get(k, 0.0) for k, v in cpu.items()}  # CPU s over the last minute
    run.cpu = cpu
    if acc:
        backlog = f"ingest {acc['released'] - acc['fetched']} items-raw {acc['held']} "
    else:  # no world.json yet: nothing to follow the pages from
        backlog = "ingest - items-raw - "
    backlog += f"stories {c['stored'] - c['assigned']}"
    return (
        f"min {minute:3d} | release->page p50 {lat.group(1) if lat else '-'}s p95 {lat.group(2) if lat else '-'}s | "
        + " ".join(f"{k} {acc.get(k, '-')}" for k in ("released", "fetched", "stored", "assigned"))
        + f" | backlog {backlog} | load {os.getloadavg()[0]:.1f} | "
        "RSS MB "
        + " ".join(f"{k} {v:.0f}" for k, v in sorted(rss.items()))
        + " | CPU s "
        + " ".join(f"{k} {v:.1f}" for k, v in sorted(used.items()))
    )


def report_of(data_dir: str) -> dict:
    try:
        return json.loads(Path(data_dir, "report.json").read_text())
    except (OSError, ValueError):
        return {}


def final(data_dir: str, new_fetches: int, latency: dict) -> str:
    """The end accounting. ``new_fetches``: new pages fetched over the runs (ingest's pages_new: a page once
    each; corrections and outbox replays are counted apart). A page claimed is fetched at most once by its
    claim, so ``new_fetches`` above the pages claimed would be pages fetched twice."""
    acc = account(data_dir)
    c = store_counts(data_dir)
    claimed = len(feed_counts(data_dir)[0])
    twice = max(0, new_fetches - claimed)
    ok = acc["released"] == acc["fetched"] == acc["stored"] == acc["assigned"] and not acc["lost"]
    ok = ok and twice == 0 and c["in_two_stories"] == 0
    refused = ", ".join(f"{n} {why}" for why, n in sorted(acc["refused"].items()))
    return (
        f"end: released {acc['released']} fetched {acc['fetched']} stored {acc['stored']} assigned {acc['assigned']}"
        f" held {acc['held']} lost {len(acc['lost'])} {acc['lost'][:5]} | fetched twice {twice} (new-page fetches "
        f"{new_fetches}, pages claimed {claimed}), in two live stories {c['in_two_stories']}: "
        f"{'EQUAL, each once' if ok else 'NOT EQUAL'} | not counted, refused as the world meant: {refused or 'none'}"
        f" | release->page p50 {latency.get('release_to_page_p50_s')}s p95 {latency.get('release_to_page_p95_s')}s "
        f"over {latency.get('release_to_page_n')} articles"
    )


def settled(data_dir: str) -> bool:
    acc = account(data_dir)
    c = store_counts(data_dir)
    return bool(acc) and acc["held"] == 0 and acc["released"] == acc["fetched"] and c["stored"] == c["assigned"]


def watch(run: Run, label: str, stop_when_settled: bool = False) -> int:
    """A line a minute until the run exits; its exit status (the last lines of its output printed on failure).
    ``stop_when_settled``: interrupt the run (as Ctrl-C does) once everything fetched is stored and assigned."""
    started, minute, calm = time.time(), 0, 0
    while run.proc.poll() is None:
        time.sleep(max(0.0, min(10.0, started + 60 * (minute + 1) - time.time())))
        if stop_when_settled and time.time() - started > 30:
            calm = calm + 1 if settled(run.data_dir) else 0
            if calm >= SETTLED_CHECKS and run.proc.poll() is None:
                print(f"{label}settled after {time.time() - started:.0f} s: stopping the run", flush=True)
                run.proc.send_signal(signal.SIGINT)
                break
        if time.time() >= started + 60 * (minute + 1):
            minute += 1
            if run.proc.poll() is None:
                print(label + minute_line(minute, run), flush=True)
    status = run.proc.wait()
    if status != 0:
        print("\n".join(run.lines[-30:]))
        print(f"newsroom run exited {status}")
    return status


def kept_logs(data_dir: str, tmp: str) -> int:
    """A failed run's logs, copied out of the temporary data directory before it is removed (the run's own message
    names a log in it); 1, the soak's exit status."""
    logs = Path(data_dir) / "logs"
    if data_dir == tmp and logs.is_dir():
        kept = Path(tempfile.mkdtemp(prefix="soak-logs-"))
        shutil.copytree(logs, kept, dirs_exist_ok=True)
        print(f"the run's logs are kept in {kept}", flush=True)
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--speed", type=float, default=10.0, help="the world's speed (newsroom run --speed)")
    ap.add_argument("--embedder", default="hash", help="the stories job's --embedder (default hash: no model)")
    ap.add_argument("--data_dir", default=None, help="default: a temporary directory")
    ap.add_argument(
        "--settle_minutes",
        type=float,
        default=10.0,
        help="then run again at most this long with the world all but stopped (--speed 0.001), until everything "
        "fetched is stored and assigned (newsroom run drains for 45 s at most); 0: account right after the soak",
    )
    args = ap.parse_args(argv)
    if args.minutes <= 0 or args.speed <= 0:
        ap.error("--minutes and --speed must be > 0")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        data_dir = args.data_dir or tmp
        run = Run(data_dir, args.minutes, args.speed, args.embedder)
        if watch(run, "") != 0:
            return kept_logs(data_dir, tmp)
        soaked = report_of(data_dir)
        new_fetches = soaked.get("pages_new", 0)
        print(f"soak run: {json.dumps({k: v for k, v in soaked.items() if k.startswith('pages')})}")
        print("after the soak, before settling: " + final(data_dir, new_fetches, soaked), flush=True)
        if args.settle_minutes > 0:  # the world all but stopped; the run replays its outbox, the job catches up
            settle = Run(data_dir, args.settle_minutes, SETTLE_SPEED, args.embedder)
            if watch(settle, "settle ", stop_when_settled=True) != 0:
                return kept_logs(data_dir, tmp)
            again = report_of(data_dir)
            print(f"settle run: {json.dumps({k: v for k, v in again.items() if k.startswith('pages')})}")
            print(final(data_dir, new_fetches + again.get("pages_new", 0), soaked), flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
