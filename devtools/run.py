"""``newsroom run``: the whole system on this machine -- publishers, ingest, stories, editions and the origin.

Starts, in order:

1. the Pub/Sub emulator (``devtools/emulators.py``), the bus between the jobs;
2. the origin (``serving.create_app``) on ``--port``, which also takes the sample world's WebSub deliveries and
   pings;
3. the local publisher world (``devtools/world``: 15 publishers in en/es/de/fr releasing articles over time,
   ``--speed`` times faster than the wall clock), unless ``--feeds`` points at a real feed list;
4. the ingest job (``pipelines.ingest_local.LocalIngest``) polling the world's feeds and fetching each new page once;
5. the stories job (``pipelines/stories.py``, streaming on BundleBasedDirectRunner in a child process):
   normalise, dedupe, syndication, embed, cluster, cross-language links (every 10 virtual minutes of the world),
   bursts, minute ranking, snapshots and pointers;
6. the co-visitation job (``pipelines/covisit.py``, streaming in a child process too): the origin publishes each
   reader's reads to the read-events topic, the job turns them into "read together" neighbours per story, which
   For you shows as "also read" (:func:`job_plan` lists both jobs' command lines);
7. the user-cluster job (``pipelines/userclusters.py``, batch, a child process per run) for For you's "readers like
   you": Cloud Scheduler runs it daily; here :class:`UserClusterSchedule` runs it as soon as the profile store
   holds reads (at start on a resumed run, else once the first reader has read something), then every
   ``--userclusters_every_min`` wall minutes (10) while reads exist. Local readers are few and read in bursts, so a
   day would leave a demo without the source; a run takes a few CPU seconds (FnApiRunner). Its clusters keep the
   job's privacy floor (5 members), so the source shows once five local readers share reading.

Every table lives in ``{data_dir}/newsroom.sqlite3`` and every snapshot under ``{data_dir}/snapshots/`` (the
embedded backends). The one thing that is not embedded is the bus: Beam 2.77's Python local runner can host no
live source but Pub/Sub (PeriodicImpulse and splittable DoFns fail on BundleBasedDirectRunner, and its realtime
timers stop once a bounded root is exhausted: see pipelines/ingest.py), so the items-raw and fetch-requests topics
run on the Pub/Sub emulator that the machine image ships (``--bus=pubsub``). A heartbeat keeps the stories job's
watermark moving when nothing is published (LOCAL_STACK.md). The ingest job runs as an in-process loop over the
same functions as its Beam graph, for the same reason.

Progress is printed every ``--progress_s`` seconds: what the world released, what ingest polled and fetched, the
articles, stories and live pages, and the time from an article's release to its first appearance on a page
(p50/p95). Ctrl-C stops ingest first, lets the stories job drain what was already fetched, then stops the rest.
One run per data directory: ``newsroom run`` holds ``{data_dir}/run.lock`` (devtools/runlock.py) and a second one
refuses with one line (exit status 2); its jobs are tied to it (the kernel stops them when it dies, even by
``kill -9``), and the jobs a run recorded that still run when the next one starts are stopped, and it says so.
A crash loses nothing either: every page ingest claimed is held in its outbox until the stories job has stored it,
and republished after ``--replay_after_s`` if it was lost (pipelines/ingest_local.py).
A later run with the same ``--data_dir`` resumes: feed validators, guids and schedules, seen-URL claims, articles
and stories come back from the stores, so nothing is fetched or assigned twice.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from devtools.runlock import DataDirBusy, JobRecord, RunLock, tied_to_parent
from transforms.stories.embed.embedder_specs import EMBEDDER_CHOICES, embedder_arg

log = logging.getLogger("newsroom.run")

TOPICS = ("items-raw", "fetch-requests", "dead-letter", "read-events")  # the bus topics of the jobs and the origin


def add_arguments(parser) -> None:
    parser.add_argument(
        "--data_dir", default=".newsroom", help="Where tables, snapshots and logs go. Default: .newsroom"
    )
    parser.add_argument("--port", type=int, default=8080, help="Origin port on 127.0.0.1 (0 = any free). Default: 8080")
    parser.add_argument(
        "--speed",
        type=float,
        default=None,
        help="How much faster than the wall clock the world releases; on a resumed world, its pace from now on "
        "(what it released keeps its dates). Default: 10, or the resumed world's pace",
    )
    parser.add_argument(
        "--feeds",
        default=None,
        help="Feeds to ingest instead of the sample world: a publishers file (JSON, docs/operations.md), a feeds "
        "file (JSON) or OPML; imported into --data_dir's stores first (its publishers reach every job). Default: "
        "the world.",
    )
    parser.add_argument(
        "--allow_hosts",
        default="",
        help="With --feeds: comma-separated host[:port] (127.0.0.1:8765) that may be private or loopback addresses "
        "(feeds served on this machine); every other private address is refused, and said at once. Default: none.",
    )
    parser.add_argument(
        "--embedder",
        default=None,
        type=embedder_arg,
        help=f"The stories job's --embedder, one of {EMBEDDER_CHOICES}. Default: the job's own default.",
    )
    parser.add_argument(
        "--minutes", type=float, default=None, help="Stop by itself after this many minutes. Default: run until Ctrl-C."
    )
    parser.add_argument("--progress_s", type=float, default=10.0, help="Seconds between progress lines. Default: 10")
    parser.add_argument(
        "--userclusters_every_min",
        type=float,
        default=10.0,
        help="Wall minutes between runs of the user-cluster job (For you's 'readers like you'); the first runs as "
        "soon as reads exist; 0 = never. Default: 10",
    )
    parser.add_argument(
        "--replay_after_s",
        type=float,
        default=600.0,
        help="Ingest republishes a claimed page the article store does not have this many seconds later (lost by a "
        "killed job; what the previous run held is republished at start, its bus being gone). Default: 600",
    )
    parser.add_argument(
        "--report", default=None, help="Write the final figures (counts, latencies) as JSON to this file."
    )


def _pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q / 100 * (len(v) - 1) + 0.5))] if v else float("nan")


class PageWatcher:
    """Reads the live pages through the pointers (as the origin does) and records when each article first shows
    on a page: as a story's representative or supporting link, or in the coverage of a story that is on a page."""

    def __init__(self, stores):
        self.stores = stores
        self.first_on_page: dict[str, int] = {}  # article url -> ms
        self.before_run: set[str] = set()  # on a page when this run started (a resumed run): not timed
        self.pages = 0
        self.breaking_on_top: dict[str, str] = {}  # edition -> title of a Breaking story ranked 1 on top
        self.merged: dict[str, str] = {}  # merged story id -> survivor, as the origin serves them (aliases pointer)
        self.announced: set[str] = set()  # merged ids already printed

    def poll(self) -> None:
        from schemas.pages import page_path, story_path

        now = int(time.time() * 1000)
        versions = self.stores.pointers.versions("")
        self._read_aliases(versions.get("aliases"))
        pages = {n: v for n, v in versions.items() if n.count("/") == 1 and not n.startswith(("pool/", "story/"))}
        self.pages = len(pages)
        on_page: set[str] = set()
        for name, v in pages.items():
            edition, section = name.split("/")
            try:
                doc = json.loads(self.stores.snapshots.get(page_path(edition, section, v)))
            except Exception:  # a page being written: next poll
                continue
            for entry in doc.get("stories", []):
                on_page.add(entry["story_id"])
                for card in [entry["representative"], *entry.get("supporting", [])]:
                    self.first_on_page.setdefault(card["url"], now)
                if section == "top" and entry["rank"] == 1 and "breaking" in entry.get("labels", []):
                    self.breaking_on_top[edition] = entry["representative"]["title"]
        for sid in on_page:
            v = versions.get(f"story/{sid}")
            if v is None:
                continue
            try:
                cov = json.loads(self.stores.snapshots.get(story_path(sid, v)))
            except Exception:
                continue
            for card in cov.get("articles", []):
                self.first_on_page.setdefault(card["url"], now)

    def _read_aliases(self, version: int | None) -> None:
        """The aliases map the origin serves (merged id -> survivor, one hop): what a reader can try a 301 on."""
        from schemas.pages import aliases_path

        if version is None:
            return
        try:
            self.merged = dict(json.loads(self.stores.snapshots.get(aliases_path(version)))["aliases"])
        except Exception:  # being written: next poll
            pass

    def new_merges(self) -> list[tuple[str, str]]:
        """(merged id, survivor) of the merges not printed yet, oldest merged id first; marks them printed."""
        fresh = sorted((k for k in self.merged if k not in self.announced), key=int)
        self.announced.update(fresh)
        return [(k, self.merged[k]) for k in fresh]


def main(args) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request would drown the progress
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    data_dir = os.path.abspath(args.data_dir)
    say = lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)  # noqa: E731
    lock = RunLock(data_dir)
    try:
        lock.acquire()
    except DataDirBusy as exc:
        print(f"newsroom run: {exc}", file=sys.stderr)
        return 2
    try:
        return _main_locked(args, data_dir, say)
    finally:
        lock.release()


def _main_locked(args, data_dir: str, say) -> int:
    """``newsroom run`` once it holds the data directory: stop what an earlier run left, then start everything."""
    logs = Path(data_dir, "logs")
    logs.mkdir(parents=True, exist_ok=True)
    say(f"holding {data_dir} (pid {os.getpid()}): another newsroom run on it refuses to start")
    record = JobRecord(data_dir)
    left = record.stop_leftovers()
    if left:
        say(f"stopped the jobs an earlier run of {data_dir} left running: {', '.join(left)}")

    from devtools import emulators as stack
    from stores import StoreConfig, open_stores

    if args.feeds is not None:  # refusals and bad rows are said now, before anything starts
        from devtools.run_feeds import prepare

        status = prepare(args, StoreConfig(backend="embedded", data_dir=data_dir), say)
        if status:
            return status
    say("starting the Pub/Sub emulator (the bus between the jobs) ...")
    try:
        state = stack.start(os.path.join(data_dir, "stack"), tie_to_parent=True)
    except stack.StackError as exc:
        print(f"newsroom run: cannot start the local Pub/Sub emulator: {exc}", file=sys.stderr)
        return 3
    os.environ.update(state.env())
    config = StoreConfig(backend="embedded", data_dir=data_dir, bus="pubsub", project=state.project)
    stores = open_stores(config)
    for topic in TOPICS:
        stores.bus.ensure_topic(topic)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    stores.bus.ensure_subscription("read-events", "covisit-read-events")  # reads kept from the origin's start

    stopping = threading.Event()
    cleanups: list = []

    def cleanup() -> None:
        while cleanups:
            fn = cleanups.pop()
            try:
                fn()
            except Exception as exc:  # keep stopping the rest
                log.warning("while stopping: %s", exc)

    cleanups.append(lambda: stack.stop(os.path.join(data_dir, "stack")))
    try:
        return _run(args, config, stores, state, (logs, record), stopping, cleanups, say)
    finally:
        say("stopping ...")
        cleanup()
        say(f"stopped; everything is in {data_dir} (run again to resume, {afresh(data_dir)})")


def afresh(data_dir: str) -> str:
    """How to start afresh from ``data_dir`` (absolute): `make clean` removes only the repository's ``.newsroom``."""
    if data_dir == os.path.abspath(".newsroom") and os.path.exists("Makefile"):
        return "`make clean` to start afresh"
    return f"`rm -rf {shlex.quote(data_dir)}` to start afresh"


def _run(args, config, stores, state, where, stopping, cleanups, say) -> int:
    """The phases of ``newsroom run`` after the bus is up; each phase registers how to stop what it started.
    ``where``: (the logs directory, the JobRecord of the child jobs)."""
    logs, record = where
    ping_keys = _ping_keys(args)
    origin = _start_origin(args, config, state, ping_keys, cleanups, say)
    watcher = PageWatcher(stores)
    watcher.poll()
    watcher.before_run = set(watcher.first_on_page)
    world, ingest = _start_ingest(args, config, state, origin, ping_keys, cleanups, say)
    _start_heartbeat(stores, stopping, cleanups)
    plan = job_plan(args, config, state.project, world)
    jobs = {name: _start_job(name, argv, logs, cleanups, record) for name, argv in plan}
    if getattr(args, "userclusters_every_min", 0) > 0:
        UserClusterSchedule(config, args.userclusters_every_min * 60, logs).start(stopping, cleanups)
    job = jobs["stories"]
    cleanups.append(lambda: _drain(ingest, job, config))
    _say_where_to_look(args, origin, logs, say)
    return _watch(args, job, world, ingest, watcher, config, logs, say, origin)


def _ping_keys(args) -> dict:
    """The sample world's WebSub ping keys (none with ``--feeds``)."""
    if args.feeds is not None:
        return {}
    from devtools.world.server import make_ping_keys

    return make_ping_keys()


def _start_origin(args, config, state, ping_keys: dict, cleanups, say) -> str:
    """The origin (serving.create_app) on ``--port`` (any free port when taken); returns its base URL."""
    from werkzeug.serving import make_server

    from serving import create_app, local_secrets
    from stores import config_to_env

    secret = local_secrets(config.data_dir)  # stable across runs, so tokens and cursors survive a restart
    app = create_app(
        {
            **config_to_env(config),
            "NEWSROOM_PROJECT": state.project,
            "NEWSROOM_WATCH_INTERVAL_S": 1.0,
            "NEWSROOM_PING_KEYS": ping_keys,
            "NEWSROOM_TOKEN_SECRET": secret["token"],
            "NEWSROOM_CURSOR_SECRET": secret["cursor"],
        }
    )
    try:
        server = make_server("127.0.0.1", args.port, app, threaded=True)
    except OSError:
        server = make_server("127.0.0.1", 0, app, threaded=True)
        say(f"port {args.port} is taken; the origin uses {server.server_port}")
    threading.Thread(target=server.serve_forever, name="origin", daemon=True).start()
    cleanups.append(lambda: app.extensions["newsroom"].close())
    cleanups.append(server.shutdown)
    args.origin_app = app  # the sample world, started next, gives it NEWSROOM_WORLD_URL (_start_ingest)
    return f"http://127.0.0.1:{server.server_port}"


def _start_ingest(args, config, state, origin: str, ping_keys: dict, cleanups, say):
    """The sample world (unless ``--feeds``) and the local ingest job polling it; returns (world or None, ingest)."""
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions

    ingest_args = [
        f"--data_dir={config.data_dir}",
        "--bus=pubsub",
        f"--project={state.project}",
        "--min_host_delay_s=0.1",
        f"--websub_callback_base={origin}",
        "--request_poll_s=0.2",
        f"--replay_after_s={getattr(args, 'replay_after_s', 600.0)}",
        "--replay_held_at_start",  # the Pub/Sub emulator started with this run: what an earlier run held is gone
    ]
    world = overrides = None
    if args.feeds is None:
        world = _start_world(args, config.data_dir, origin, ping_keys, say)
        cleanups.append(world.stop)
        overrides = world.host_overrides
        if getattr(args, "origin_app", None) is not None:  # cards link to the world's pages on this machine
            args.origin_app.config["NEWSROOM_WORLD_URL"] = world.base_url
        # the world's clock runs `speed` times faster than the wall clock: so does every schedule duration
        ingest_args += [f"--schedule_scale={1.0 / args.speed}", "--poll_max_s=300"]
    else:  # devtools/run_feeds.py imported the file into the feeds table
        ingest_args += ["--feeds=table", f"--allow_hosts={args.allow_hosts}"]
    ingest = LocalIngest.from_options(IngestOptions(ingest_args), host_overrides=overrides)
    ingest.start()
    cleanups.append(ingest.stop)
    return world, ingest


WORLD_STATE = "world.json"
WORLD_SEED = 1


def _start_world(args, data_dir: str, origin: str, ping_keys: dict, say):
    """The sample world, endless (generated news after the scripted articles) and resumed from
    ``{data_dir}/world.json``: a rerun continues the clock of the first run, so every item keeps its dates and
    nothing is fetched twice. A resumed world keeps its pace unless ``--speed`` is given, and then goes on at that
    one from now (what it released keeps its dates); ``args.speed`` is set to the pace it runs at."""
    from devtools.world.server import start_world

    state_path = Path(data_dir, WORLD_STATE)
    resumed = state_path.exists()
    world = start_world(
        speed=args.speed, seed=WORLD_SEED, state_path=state_path, ping_url=origin + "/v1/ping", ping_keys=ping_keys
    )
    args.speed = world.clock.speed
    age = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(world.clock.start_s))
    say(
        f"sample world: {len(world.registry)} publishers on {world.base_url} (open it in a browser), releasing at "
        f"x{args.speed:g}, " + (f"resumed (started {age})" if resumed else "new")
    )
    return world


HEARTBEAT_S = 5.0  # the stories job's watermark (and so its minute cycle's timers) lags the wall clock <= this


def _start_heartbeat(stores, stopping, cleanups) -> None:
    """Pub/Sub's watermark follows the wall clock only while messages flow: an empty message every
    :data:`HEARTBEAT_S` seconds. Not every second: on BundleBasedDirectRunner each message pulled is a bundle through
    every step of the stories job (empty bundles are committed downstream too), and the runner's per-bundle set-up
    of each ParDo (DoFn signature inspection, a pickling round trip, setup/teardown) cost ~13 CPU s a minute idle at
    one a second (docs/operations.md, the soak)."""
    from stores.beam_io import HEARTBEAT_ATTRIBUTE

    def heartbeat() -> None:
        while not stopping.wait(HEARTBEAT_S):
            try:
                stores.bus.publish("items-raw", b"", {HEARTBEAT_ATTRIBUTE: "1"})
            except Exception as exc:
                log.warning("heartbeat: %s", exc)

    threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
    cleanups.append(stopping.set)


def job_plan(args, config, project: str, world) -> list[tuple[str, list[str]]]:
    """The streaming jobs ``newsroom run`` starts, as (name, command line): the stories job and the co-visitation
    job, both on the embedded stores of ``config`` and the Pub/Sub emulator's bus."""
    common = [f"--data_dir={config.data_dir}", "--bus=pubsub", f"--project={project}"]
    stories = [sys.executable, "-m", "pipelines.stories", *common]
    if args.embedder:
        stories.append(f"--embedder={args.embedder}")
    if world is not None:  # cross-language link ticks every 10 virtual minutes of the world, like its schedules
        stories.append(f"--link_interval_s={600.0 / args.speed:g}")
    covisit = [sys.executable, "-m", "pipelines.covisit", *common]
    return [("stories", stories), ("covisit", covisit)]


class UserClusterSchedule:
    """``newsroom run``'s stand-in for the daily Cloud Scheduler launch of the user-cluster job: every
    ``check_s`` it looks whether the profile store holds reads; the first time it does, and then every ``every_s``,
    it runs ``python -m pipelines.userclusters`` on the run's stores in a child process (output appended to
    ``logs/userclusters-job.log``). One run at a time: a tick while a run is going starts nothing."""

    LOOKBACK_MS = 30 * 86_400_000  # the profile store's reads (the job also reads its click log, 90 days)

    def __init__(self, config, every_s: float, logs, check_s: float = 15.0):
        self.config, self.every_s, self.logs, self.check_s = config, float(every_s), Path(logs), float(check_s)
        self.last_start: float | None = None
        self.runs = 0
        self.proc: subprocess.Popen | None = None
        self.stopped = threading.Event()
        self.lock = threading.Lock()  # a spawn and stop() never interleave: nothing starts after stop()

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pipelines.userclusters",
            "--backend=embedded",
            f"--data_dir={self.config.data_dir}",
        ]

    def has_reads(self, now_s: float) -> bool:
        from stores.profiles import open_profile_store

        store = open_profile_store(self.config)
        try:
            return next(iter(store.scan_reads(int(now_s * 1000) - self.LOOKBACK_MS)), None) is not None
        finally:
            store.close()

    def tick(self, now_s: float | None = None) -> subprocess.Popen | None:
        """Start a run when one is due (reads exist; none yet, or the last started ``every_s`` ago); returns it."""
        now_s = time.time() if now_s is None else now_s
        if self.stopped.is_set() or (self.proc is not None and self.proc.poll() is None):
            return None
        if self.last_start is not None and now_s - self.last_start < self.every_s:
            return None
        if not self.has_reads(now_s):
            return None
        with self.lock, open(self.logs / "userclusters-job.log", "ab") as out:
            if self.stopped.is_set():
                return None
            self.last_start, self.runs = now_s, self.runs + 1
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=tied_to_parent(os.getpid()),  # the schedule's thread lives until stop()
            )
        return self.proc

    def stop(self) -> None:
        with self.lock:
            self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def start(self, stopping: threading.Event, cleanups) -> None:
        def loop() -> None:
            while not (stopping.is_set() or self.stopped.is_set()):
                try:
                    self.tick()
                except Exception as exc:  # a locked store or a failed spawn: try again next tick
                    log.warning("user-cluster schedule: %s", exc)
                stopping.wait(self.check_s)

        threading.Thread(target=loop, name="userclusters-schedule", daemon=True).start()
        cleanups.append(self.stop)


def _start_job(name: str, argv: list[str], logs, cleanups, record=None) -> subprocess.Popen:
    """One streaming job in a child process (its own session, stopped by the kernel if this process dies), its
    output in logs/{name}-job.log; recorded in ``record`` (a devtools.runlock.JobRecord)."""
    job_log = open(logs / f"{name}-job.log", "ab")  # noqa: SIM115 - the child writes it until stop()
    job = subprocess.Popen(
        argv,
        stdout=job_log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
        start_new_session=True,
        preexec_fn=tied_to_parent(os.getpid()),  # started from the main thread, which lives as long as the run
    )
    if record is not None:
        record.add(name, job.pid)

    def stop_job() -> None:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            try:
                job.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
        job_log.close()

    cleanups.append(stop_job)
    return job


def _drain(ingest, job, config) -> None:
    """Ingest stopped: give the stories job time to process what was already published. Done as soon as the
    ingest outbox holds nothing (every claimed page stored or dead-lettered); else once the article count has
    not moved for 10 s (a job that fell behind), at most 45 s."""
    from stores import open_store

    ingest.stop()
    outbox = open_store("feeds", config)
    last, quiet_since, deadline = None, time.time(), time.time() + 45
    while time.time() < deadline and job.poll() is None:
        if not _held(outbox):
            break
        n = _article_count(config)
        if n != last:
            last, quiet_since = n, time.time()
        elif time.time() - quiet_since > 10:
            break
        time.sleep(1)


def _say_where_to_look(args, origin: str, logs, say) -> None:
    say(f"stories job: streaming on BundleBasedDirectRunner, log {logs / 'stories-job.log'}")
    say(f"co-visitation job (For you's 'also read'): streaming, log {logs / 'covisit-job.log'}")
    if getattr(args, "userclusters_every_min", 0) > 0:
        say(
            f"user-cluster job (For you's 'readers like you'): once reads exist, then every "
            f"{args.userclusters_every_min:g} min, log {logs / 'userclusters-job.log'}"
        )
    say("open:")
    say(f"  {origin}/e/us-en/                             the reader pages ('warming up' until the first are live)")
    say(f"  {origin}/sign-in                              sign this browser in (follow, hide, For you on the top page)")
    say(f"  {origin}/v1/editions/us-en/sections/top      the US English front page (also gb-en, es-es, de-de ...)")
    say(f"  {origin}/v1/editions/us-en/version            the version endpoint behind the 'new stories' pill")
    say(f"  {origin}/openapi.json                         the API; story pages at /v1/stories/{{id}}")
    say(f"progress every {args.progress_s:g}s; Ctrl-C to stop (a later run resumes)")


def _watch(args, job, world, ingest, watcher, config, logs, say, origin: str = "") -> int:
    """Print progress until Ctrl-C, ``--minutes`` or the job's exit; write ``--report``. Returns the exit status."""
    started = time.time()
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    signal.signal(signal.SIGTERM, lambda *_: interrupted.set())
    figures: dict = {}
    try:
        while not interrupted.is_set():
            if job.poll() is not None:
                say(f"the stories job exited with status {job.returncode}; see {logs / 'stories-job.log'}")
                return 1
            if args.minutes is not None and time.time() - started > args.minutes * 60:
                break
            interrupted.wait(args.progress_s)
            try:
                watcher.poll()
            except Exception as exc:
                log.warning("page watcher: %s", exc)
            figures = _progress(world, ingest, watcher, config, started)
            say(figures["line"])
            for gone, survivor in watcher.new_merges():  # the repair merged two stories: try the 301
                say(f"merged story {gone} into {survivor}: {origin}/stories/{gone} answers 301 to /stories/{survivor}")
    finally:
        signal.signal(signal.SIGINT, previous)
    if args.report:
        Path(args.report).write_text(json.dumps({k: v for k, v in figures.items() if k != "line"}, indent=2))
    return 0


def _article_count(config) -> int:
    import sqlite3

    try:
        with sqlite3.connect(os.path.join(config.data_dir, "newsroom.sqlite3"), timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
    except sqlite3.Error:
        return -1


def _held(outbox) -> bool:
    """Whether the ingest outbox (a FeedStore) still holds a claimed page (True when it cannot be read)."""
    try:
        return bool(outbox.due(2**62, limit=1))
    except Exception:  # a busy or missing database: the article-count rule decides
        return True


def _story_count(config) -> int:
    import sqlite3

    try:
        with sqlite3.connect(os.path.join(config.data_dir, "newsroom.sqlite3"), timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM stories WHERE alias_of IS NULL").fetchone()[0]
    except sqlite3.Error:
        return -1


def _progress(world, ingest, watcher, config, started: float) -> dict:
    st = ingest.stats()
    latencies = []
    released = 0
    if world is not None:
        releases = world.release_times()
        released = len(releases)
        for url, first in watcher.first_on_page.items():
            art = None if url in watcher.before_run else world.article_by_url(url)
            if art is None:
                continue
            at = world.released_ms(art)
            if at >= started * 1000:  # released during this run (earlier ones were on pages before we looked)
                latencies.append((first - at) / 1000)
    polls, n304 = st.get("polls", 0), st.get("not_modified", 0)
    figures = {
        "elapsed_s": round(time.time() - started),
        "released": released,
        "polls": polls,
        "polls_304": n304,
        "pages_fetched": st.get("pages_fetched", 0),  # every fetch published, of which:
        "pages_new": st.get("pages_new", 0),  # a new page's first (each page once)
        "pages_updated": st.get("pages_updated", 0),  # a correction's (the same page again, on purpose)
        "pages_replayed": st.get("pages_replayed", 0),  # republished from the outbox (not stored in time, or held
        # when the previous run stopped: its bus is gone)
        "articles": _article_count(config),
        "stories": _story_count(config),
        "live_pages": watcher.pages,
        "release_to_page_n": len(latencies),
        "release_to_page_p50_s": round(_pct(latencies, 50), 1) if latencies else None,
        "release_to_page_p95_s": round(_pct(latencies, 95), 1) if latencies else None,
        "breaking_on_top": dict(watcher.breaking_on_top),
        "burst_requests": st.get("requests:BURST", 0),  # the stories job's burst pulls that reached ingest
        "fetch_requests_without_feed": st.get("dead_letter:no_feed", 0),
        "merged": dict(watcher.merged),  # merged story id -> survivor (the origin answers 301 from one to the other)
    }
    lat = (
        f"release->page p50 {figures['release_to_page_p50_s']}s p95 {figures['release_to_page_p95_s']}s "
        f"(n={len(latencies)})"
        if latencies
        else "release->page: none yet"
    )
    brk = "; ".join(f"{e}: {t[:50]}" for e, t in sorted(watcher.breaking_on_top.items())[:3])
    figures["line"] = (
        f"released {released} | polls {polls} ({n304} x 304) fetched {figures['pages_fetched']} "
        f"(new {figures['pages_new']} corrections {figures['pages_updated']} replays {figures['pages_replayed']}) | "
        f"articles {figures['articles']} stories {figures['stories']} live pages {watcher.pages} | {lat}"
        + (f" | merged stories {len(watcher.merged)}" if watcher.merged else "")
        + (f" | BREAKING on top: {brk}" if brk else "")
    )
    return figures
