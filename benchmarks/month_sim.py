"""A simulated month of news through the real stories graph: what every per-minute cost and keyed state does as
history grows.

A generated history (benchmarks/history_gen.py: four languages, long-tailed story sizes, wire copies, bursts,
follow-ups days apart, stories the repair must merge or split) goes through ``newsroom backfill --links
--snapshots DIR`` in this process (pipelines/backfill.py on FnApiRunner): the writer with its repair ticks and
expiry, the cross-language linker, the storyline stage, the editions ranker minute by minute (change-only replay)
and the snapshot publisher into an embedded store. The hash embedder stands in for the encoders, the
links' too (hashed bag of words: no model, its cost is printed apart). The stages' own methods are wrapped in this process (never changed) to
charge their CPU time to the simulated day of the time they work at, and to measure each keyed state once a day:

- CPU per article per stage (µs): embed (HashEmbedder.encode), writer (StoryClusterer.advance: decisions, repair,
  expiry), links (StoryLinker.observe + link_changes), storylines (StorylineWriter.observe + tick), publisher
  (SnapshotPublisher.publish), per article of the day;
- ranking cycle: CPU ms per edition cycle (EditionRanker.cycle, the minute's fold + rank + documents);
- keyed state, bytes per key (pickled, as Beam stores it): writer stories per language key and the whole writer
  (stories, statistics, index, maps), linker view, storyline writer, each edition's EditionMemory, and each
  edition's event LOG (events held, and bytes: a compaction's SNAPSHOT holds a storyline's member ids);
- what those must follow, per day: the live stories of the 48 h window and their articles (the writers', at the
  day's first decision), the stories the storyline writer indexes (its ~22-day horizon); and each state normalised
  by it (writer B per live story and article, storylines B per indexed story, ranker memory per live story, LOG
  events and bytes per live article of the ranker's own book: one change an article, the mean over all the
  day's cycles, as the hourly compaction saw-tooths LOG between the live events and twice them), so that a state
  growing with history shows as a normalised figure that grows, one following the live stories or a burst as one
  that stays flat;
- snapshot bytes per simulated minute (the documents published) and per item;
- the cyclic garbage collector's CPU per day and its full collections, apart: a stage's CPU is its own work, not
  the collections that start while it allocates (a full collection traverses every object of the process, and this
  one-process backfill holds the run's PCollections too, so its cost follows the run's length; measured over a
  40-day run: a few full collections of ~0.2 s, none on the days the repair spikes);
- at the end, the origin's memory (RSS) after loading the snapshots (a child process: serving.create_app over DIR,
  one watcher poll of the run's pointers, the first pages served; ``warming_up`` says if it found none).

A warm-up (``--warmup``, :data:`WARMUP_DAYS` = 23 simulated days by default: the storyline stage's horizon) runs
before day 1 and is printed (days <= 0) but never a baseline. Why: from an empty system, day 1 is not a fair
baseline for the costs that must follow the live stories (48 h window): on day 1 a repair tick compares a handful of
one-article stories, a page lists three stories and the ranker's LOG holds a few events, so day 30 / day 1 was
1.5-8x for figures that are flat from day 3 on, and the ratio could not tell that from growth with history. The
generator's follow-ups come 1-10 days after their subject, so the storyline events of the live stories (in the
ranker's LOG) fill for ten days (with 3 days of warm-up, LOG per live article was 1.31-1.33x day 1). And the
storyline stage's index holds every story of its horizon (transforms/stories/storylines/storyline.py
``HORIZON_MS``, 22.2 days: a story leaves it that long after its last article), so its cost per decision follows the
stories indexed, which fill for 22 days and are flat after: with 10 days of warm-up the index grew from ~200 to
~450 stories during the month and storylines µs/article was 1.01-1.41x day 1 over three runs (1.21x in a fourth,
days 13-30 flat at 123-171 µs, 2026-12-07 09:04, the run of this docstring's change); the default covers the
horizon, so day 1 ranks, links and indexes a full live window and a full horizon. Nothing is hidden by it: every
state is also normalised by what it must follow (below), so a cost that grows with history still grows from day 1
to day 30, and ``--warmup 0`` prints the empty start.

Then last day / day 1 for each figure (the acceptance's ratio), last day / day 3, and the median of the last 7
days / the median of days 3-9 (a burst on one day weighs less), with each
figure's kind: ``flat`` (must stay <= 1.3x: ``GROWS`` when day 30 / day 1 or / day 3 is above), ``follows`` (a raw
state that must grow with live stories; its normalised figure is the flat one), ``run`` (embedding and linking
work once for the whole backfill: printed per article of the run). ``--steady`` generates a fixed rate (every day
``per_day`` articles, stories of at most 20: no burst); ``--sagas N`` adds N long sagas (an English story every
50 h from the first warm-up day to the last, chained into one storyline: benchmarks/history_gen.py), so that a
state keeping a storyline's history would grow through the month (``largest storyline``: the storyline stage's
biggest, its stories within the horizon; ``rank log storyline max B``: the ranker's largest storyline event, a
compaction's SNAPSHOT, which lists members and aliases by id for FORGET_MS = 30 days and counts the older members:
it rose with the saga while the SNAPSHOT kept every alias, one an episode, before 5df2a28);
``--profile 3,30`` prints the cProfile top of the storyline and repair stages on those days.

    .venv/bin/python benchmarks/month_sim.py --days 30 --per_day 1500      # a month (docs/operations.md)
    .venv/bin/python benchmarks/month_sim.py --days 30 --per_day 60 --steady --editions us-en   # a fixed rate
    .venv/bin/python benchmarks/month_sim.py --days 12 --per_day 40 --profile 3,12 --no_origin   # where it goes

Prints, never asserts; takedowns and controls are generated (counted) but not applied (the backfill skips
taken-down articles at read; controls steer the live job's pages only).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
import pstats  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.history_gen import EPOCH_S, History  # noqa: E402

DAY_MS = 86_400_000
# The default warm-up: the storyline stage's horizon in whole days (its index full on day 1; module docstring).
WARMUP_DAYS = 23
EDITIONS = ["us-en", "es-es", "fr-fr", "de-de"]
CPU_STAGES = ("embed", "writer", "repair", "links", "storylines")
# The backfill embeds every article in one batch ahead of the writer (charged to the day the writer had reached) and
# links once at the end of its bounded replay: per day these are not a day's cost; printed per article of the run.
RUN_ONLY = ("embed us/article", "links us/article")
FLAT = {  # figures that must not grow with history (per article, per cycle, per key, per minute)
    **{f"{s} us/article": True for s in CPU_STAGES},
    "rank ms/cycle": True,
    "publish us/item": True,
}
# The states normalised by what they must follow (_norm): flat. The writer's bytes follow its live articles (each
# member's features), not its stories: per live story is printed too, but a day of big stories raises it. Snapshot
# KB a minute follows the items published a minute; per item it must stay flat.
NORMALISED = (
    "writer stories B/fit",
    "writer state B/fit",
    "storylines B/indexed story",
    "rank memory B/live story",
    "rank log events/live article",
    "rank log B/live article",
    "snapshot KB/item",
)
# The writer's states against a linear model of the live window (:func:`fit_live`): (figure, with a constant term).
# Its stories are a part per story (centroid, statistics) and a part per member, and the whole writer holds arrays
# of its own besides, so dividing by one count reads a quiet day of small stories as growth: the bursty month of
# 2026-12-07 09:17 printed writer stories B/live article 1.73x and writer state B/live article 1.92x on a day 30
# whose first decision found 18 live stories of 2.0 articles (day 1: 33 of 6.3) while both states were 0.30x and
# 0.33x of day 1 per key. Per live article and per live story stay printed (``info``).
FITTED = (("writer stories B/key", False), ("writer state B/key", True))
FIT_LAST_DAY = 10  # the model is fitted on the warm-up and days 1-10, then read on every day: out of sample after


class Probe:
    """CPU seconds and state sizes per (figure, simulated day), filled by the wrappers of :func:`install`."""

    def __init__(self, start_ms: int, warmup: int = 0):
        self.start_ms = start_ms  # day 1's first ms: the warm-up days before it are days 1 - warmup .. 0
        self.warmup = warmup
        self.cpu = defaultdict(float)  # (stage, day) -> CPU s
        self.calls = defaultdict(int)  # (stage, day) -> calls
        self.state = defaultdict(dict)  # (state, day) -> {key: bytes}
        self.snap = defaultdict(int)  # day -> document bytes
        self.seen = {}  # (state, key) -> last day measured
        self.count = defaultdict(dict)  # (what, day) -> {key: number held}: live stories, indexed stories
        self.ranker = defaultdict(lambda: [0, 0, 0, 0])  # day -> [LOG events, LOG bytes, live stories, live articles]
        # summed over the day's cycles of every edition (the ranker's own book, after each cycle)
        self.profile_days: set[int] = set()  # days whose calls of profile_stages run under cProfile
        self.profile_stages: set[str] = set()
        self.profiles: dict = {}  # (stage, day) -> cProfile.Profile
        # CPython's cyclic collector (gc.callbacks): its CPU is charged to the day it ran on, never to the stage
        # that happened to allocate when it started (a full collection traverses the whole process: its cost
        # follows the process's heap, which in this one-process backfill holds the run's PCollections too)
        self.gc_cpu = defaultdict(float)  # day -> CPU s in collections
        self.gc_full = defaultdict(int)  # day -> full (generation 2) collections
        self.gc_total = 0.0
        self.current_day = -warmup
        self._gc_t0: float | None = None

    def on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_t0 = time.process_time()
            return
        if self._gc_t0 is None:
            return
        spent, self._gc_t0 = time.process_time() - self._gc_t0, None
        self.gc_total += spent
        self.gc_cpu[self.current_day] += spent
        self.gc_full[self.current_day] += info.get("generation") == 2

    def day(self, ms) -> int:
        return max(-self.warmup, (int(ms) - self.start_ms) // DAY_MS)

    def timed(self, stage: str, day_of, pre_day=None):
        """A wrapper charging the call's CPU time to ``day_of(args)``; a call whose ``pre_day(args)`` is one of
        ``profile_days`` runs under that (stage, day)'s cProfile when the stage is one of ``profile_stages``."""

        def wrap(fn):
            @functools.wraps(fn)
            def inner(*a, **kw):
                prof = None
                if pre_day is not None and stage in self.profile_stages and pre_day(a) in self.profile_days:
                    prof = self.profiles.setdefault((stage, pre_day(a)), cProfile.Profile())
                c0, g0 = time.process_time(), self.gc_total
                try:
                    if prof is None:
                        return fn(*a, **kw)
                    return prof.runcall(fn, *a, **kw)
                finally:
                    # before day_of: its state measurement is not the stage's; the collector's time is apart
                    spent = time.process_time() - c0 - (self.gc_total - g0)
                    d = day_of(a)
                    self.current_day = d
                    self.cpu[(stage, d)] += spent
                    self.calls[(stage, d)] += 1

            return inner

        return wrap

    def held(self, what: str, key, day: int, n: int) -> None:
        """How many ``what`` (live stories, indexed stories) ``key`` holds on ``day``: the first call of the day."""
        self.count[(what, day)].setdefault(key, n)

    def measure(self, state: str, key, day: int, obj) -> None:
        """Pickled bytes of ``obj`` for ``key`` on ``day``: once a day per key (the first call of the day)."""
        if self.seen.get((state, key)) == day:
            return
        self.seen[(state, key)] = day
        try:
            self.state[(state, day)][key] = len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception:  # noqa: BLE001  (an unpicklable field: the figure is left out, not the run)
            pass


def _version_day(probe: Probe, version: int) -> int:
    v = int(version)
    ms = v if v > 10**11 else v * 1000 if v > 10**8 else v * 60_000
    return probe.day(ms)


def install(probe: Probe) -> None:
    """Wrap the stages' methods (class attributes: every instance in this process, FnApiRunner's workers too)."""
    from transforms.editions.publish.snapshots import SnapshotPublisher
    from transforms.editions.ranker.rank import EditionRanker
    from transforms.stories.embed.embed import HashEmbedder
    from transforms.stories.links.links import StoryLinker
    from transforms.stories.storylines.storyline import StorylineWriter
    from transforms.stories.writer import cluster
    from transforms.stories.writer.cluster import StoryClusterer

    last = {"day": 0}  # the embedder works ahead of time: charged to the latest day the writer reached

    def writer_day(a):  # _decide(self, pending article): the backfill advances once, to the end of time
        last["day"] = d = probe.day(a[1].first_seen_at)
        w, lang = a[0], a[0].language
        if probe.seen.get(("writer stories", lang)) != d:  # the first decision of the day
            probe.measure("writer stories", lang, d, dict(w.stories))
            probe.measure("writer state", lang, d, w)  # the whole writer: stories, statistics, index, maps
            probe.held("live stories", lang, d, len(w.stories))
            probe.held("live articles", lang, d, sum(len(s.members) for s in w.stories.values()))
        return d

    def cycle_day(a):
        ranker, state, now = a
        key, mem, log = state.key, state.mem, state.event_log
        d = probe.day(now)
        probe.measure("rank memory", key, d, mem)
        events = list(log.read())
        if probe.seen.get(("rank log", key)) != d:
            probe.measure("rank log", key, d, events)  # bytes: a compaction's SNAPSHOT holds its members' ids
            probe.state[("rank log events", d)][key] = len(events)
            # the largest storyline event (a saga's SNAPSHOT lists its members of the last FORGET_MS by id)
            sizes = [len(pickle.dumps(e, protocol=pickle.HIGHEST_PROTOCOL)) for e in events if "storyline_id" in e]
            probe.state[("rank log storyline max", d)][key] = max(sizes, default=0)
        # LOG against the ranker's own live set at every cycle: the hourly compaction saw-tooths it between the
        # live stories' events and twice them, so one sample a day is noise; events follow the live articles
        book = state.cached.book
        live = book.live_mask(now, ranker.params.live_window_ms)
        acc = probe.ranker[d]
        acc[0] += len(events)
        acc[1] += len(pickle.dumps(events, protocol=pickle.HIGHEST_PROTOCOL))
        acc[2] += int(live.sum())
        acc[3] += int(book.stories.n_articles[: book.stories.size][live].sum())
        return d

    def link_day(a):
        d = probe.day(a[1])
        probe.measure("linker view", "all", d, a[0].stories)
        return d

    def storyline_day(a):
        d = probe.day(a[1])
        probe.measure("storylines", "all", d, a[0])
        probe.held("storyline stories", "all", d, len(a[0].stories))
        probe.held("largest storyline", "all", d, max(map(len, a[0].members_of.values()), default=0))
        return d

    def change_day(a):
        ch = a[1].get("change") or {}
        return probe.day(ch.get("at") or probe.start_ms)

    def publish_day(a):
        item = a[1]
        d = _version_day(probe, item["version"])
        probe.snap[d] += len(json.dumps(item["doc"], separators=(",", ":"), default=str))
        return d

    wraps = [
        (HashEmbedder, "encode", "embed", lambda a: last["day"]),
        (StoryClusterer, "_decide", "writer", writer_day),
        (StoryClusterer, "_expire", "writer", lambda a: probe.day(a[2])),
        (cluster, "repair_tick", "repair", lambda a: probe.day(a[1])),
        (cluster, "recluster_tick", "repair", lambda a: probe.day(a[1])),
        (StoryLinker, "observe", "links", change_day),
        (StoryLinker, "link_changes", "links", link_day),
        (StorylineWriter, "observe", "storylines", change_day),
        (StorylineWriter, "tick", "storylines", storyline_day),
        (EditionRanker, "cycle", "rank", cycle_day),
        (SnapshotPublisher, "publish", "publisher", publish_day),
    ]
    pre = {  # the day a call works on, known before it runs (for --profile)
        "storylines": lambda a: change_day(a) if isinstance(a[1], dict) else probe.day(a[1]),
        "repair": lambda a: probe.day(a[1]),
        "writer": lambda a: probe.day(a[1].first_seen_at) if hasattr(a[1], "first_seen_at") else probe.day(a[2]),
    }
    for cls, name, stage, day_of in wraps:
        setattr(cls, name, probe.timed(stage, day_of, pre.get(stage))(getattr(cls, name)))


def hash_links() -> None:
    """Link vectors from the hash embedder too: the embedding stage's default is the multilingual USE model, whose
    forward pass per article would be most of the run (and is the encoder's cost, not the graph's)."""
    from transforms.stories.beam.embed import EmbedBatchFn

    EmbedBatchFn.__init__.__defaults__ = ("auto", "hash:64", "auto", False)


def only_editions(editions: list[str]) -> None:
    """Rank only ``editions`` (one or two per generated language): the backfill's --snapshots ranks all 73."""
    from transforms.editions.vocabulary import settings

    settings.RankSettings = functools.partial(settings.RankSettings, editions_only=editions)


def write_history(
    path: str, days: int, per_day: int, seed: int, steady: bool = False, warmup: int = 0, sagas: int = 0
) -> tuple[dict, History]:
    """The history as labelled JSONL at ``path``; returns (articles per day: day 0 is the first after the
    ``warmup`` days, which are -warmup .. -1, the generator with its counts). ``steady``: every day ``per_day``
    articles, stories of at most 20 (no burst: a fixed rate). ``sagas``: long sagas from the first warm-up day
    to the last (benchmarks/history_gen.py)."""
    n = days + warmup
    shape = {"spread": 0.0, "max_story": 20} if steady else {}
    h = History(n, per_day, seed, sagas=sagas, **shape)
    per = defaultdict(int)
    with open(path, "w", encoding="utf-8") as f:
        for r in h.articles():
            t = int(time.mktime(time.strptime(r["published_at"], "%Y-%m-%dT%H:%M:%SZ"))) - time.timezone
            per[(t - EPOCH_S) // 86_400 - warmup] += 1
            f.write(json.dumps(r) + "\n")
    return dict(per), h


def accounting(history: Path, assignments: Path) -> str:
    """Zero loss: every generated article assigned exactly once, to a story (assignments.jsonl, in input order)."""
    ids = [json.loads(line)["id"] for line in open(history, encoding="utf-8")]
    seen = defaultdict(int)
    for line in open(assignments, encoding="utf-8"):
        a = json.loads(line)
        if a.get("story_id") is not None:
            seen[a["article_id"]] += 1
    lost = sum(1 for i in ids if i not in seen)
    twice = sum(1 for n in seen.values() if n > 1)
    once = sum(1 for i in ids if seen.get(i) == 1)
    return f"accounting: generated {len(ids)}, assigned once {once}, lost {lost}, twice {twice}"


ORIGIN_CHILD = r"""
import gc, json, resource, sys
sys.path.insert(0, sys.argv[2])
from serving import create_app
app = create_app({"NEWSROOM_DATA_DIR": sys.argv[1], "NEWSROOM_BACKGROUND": False,
                  "NEWSROOM_TOKEN_SECRET": "demo-token-secret-0123456789abcdef",
                  "NEWSROOM_CURSOR_SECRET": "demo-cursor-0123456789"})
app.extensions["newsroom"].watcher.poll_once()  # what the background watcher does first (not started here)
cat = app.extensions["newsroom"].holder.current
client = app.test_client()
pages = {p: client.get(p) for p in ("/", sys.argv[3], "/v1/editions/us-en/sections/top")}
codes = [r.status_code for r in pages.values()]
warming = any(b"Warming up" in r.data or b"warming_up" in r.data for r in pages.values())
gc.collect()
rss = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
print(json.dumps({"rss_mb": rss / 2**20, "codes": codes, "warming_up": warming, "pointers_loaded": len(cat.loaded)}))
"""


def origin_memory(data_dir: str, edition: str = "us-en") -> dict:
    """The origin's RSS after loading the published snapshots (a fresh process, one watcher poll over the run's
    pointers, then the first pages served: ``warming_up`` true means it found none of them, and the figure is
    not one of a loaded origin)."""
    try:
        argv = [sys.executable, "-c", ORIGIN_CHILD, data_dir, str(ROOT), f"/e/{edition}/"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001  (reported, not fatal: the day table stands without it)
        return {"error": f"{type(e).__name__}: {e}"}


def _norm(row: dict, probe: Probe, d: int) -> None:
    """The state figures normalised by what they must follow: the writer's stories and the ranker's memory and LOG
    by the live stories of the 48 h window (the writers' stories, all languages), the storyline writer's state by
    the stories it indexes (its ~22-day horizon); a figure that grows with history grows here too, one that
    follows live stories or bursts does not."""
    live = row.get("live stories") or 0
    if live and row.get("live articles"):
        row["live articles/live story"] = row["live articles"] / live  # a burst: a few stories of many articles
    total = {state: sum(sizes.values()) for (state, day), sizes in probe.state.items() if day == d and sizes}
    if live and "writer stories" in total:
        row["writer stories B/live story"] = total["writer stories"] / live
    if row.get("live articles") and "writer state" in total:
        row["writer state B/live article"] = total["writer state"] / row["live articles"]
    if row.get("live articles") and "writer stories" in total:
        row["writer stories B/live article"] = total["writer stories"] / row["live articles"]
    if row.get("storyline stories") and "storylines" in total:
        row["storylines B/indexed story"] = total["storylines"] / row["storyline stories"]
    if live and "rank memory B/key" in row:
        row["rank memory B/live story"] = row["rank memory B/key"] / live
    events, size, ranked_live, ranked_articles = probe.ranker.get(d, (0, 0, 0, 0))
    if ranked_articles:  # summed over the day's cycles: the day's mean LOG per live article of the ranker's book
        row["rank live stories"] = ranked_live / max(probe.calls[("rank", d)], 1)
        row["rank log events/live article"] = events / ranked_articles
        row["rank log B/live article"] = size / ranked_articles


def day_rows(probe: Probe, per_day: dict, days: int) -> list[dict]:
    """One dict of figures per simulated day, the warm-up's first (day <= 0; see the module docstring)."""
    rows = []
    for d in range(-probe.warmup, days):
        n = max(per_day.get(d, 0), 1)
        row = {"day": d + 1, "articles": per_day.get(d, 0)}
        for what in ("live stories", "live articles", "storyline stories", "largest storyline"):
            if probe.count.get((what, d)):
                row[what] = sum(probe.count[(what, d)].values())
        for s in CPU_STAGES:
            row[f"{s} us/article"] = probe.cpu[(s, d)] / n * 1e6
        cycles = probe.calls[("rank", d)]
        row["rank ms/cycle"] = probe.cpu[("rank", d)] / max(cycles, 1) * 1000
        row["rank cycles"] = cycles
        for (state, day), sizes in probe.state.items():
            if day == d and sizes:
                name = {"rank log events": "rank log events/key", "rank log storyline max": "rank log storyline max B"}
                name = name.get(state, f"{state} B/key")
                row[name] = sum(sizes.values()) / len(sizes)
        row["gc ms"] = probe.gc_cpu[d] * 1000
        row["gc full collections"] = probe.gc_full[d]
        row["publish us/item"] = probe.cpu[("publisher", d)] / max(probe.calls[("publisher", d)], 1) * 1e6
        row["items/min"] = probe.calls[("publisher", d)] / 1440
        row["snapshot KB/min"] = probe.snap[d] / 1440 / 1024
        row["snapshot KB/item"] = probe.snap[d] / max(probe.calls[("publisher", d)], 1) / 1024
        _norm(row, probe, d)
        rows.append(row)
    return rows


def fit_live(rows: list[dict], figure: str, constant: bool, last_day: int = FIT_LAST_DAY) -> None:
    """Add ``<figure without B/key> B/fit`` to each row: the figure over a least-squares model ``a * live stories +
    b * live articles (+ c)`` fitted on the days up to ``last_day`` (the warm-up's included, the first warm-up day
    left out: an empty system). A state that follows the live window reads ~1 on every day however the live
    stories and their sizes move; one that grows with history reads more and more above 1 after ``last_day``,
    where the model never saw it. Nothing is added when fewer than four days can be fitted."""
    import numpy as np

    def x(r):
        return [r["live stories"], r["live articles"]] + ([1.0] if constant else [])

    usable = [r for r in rows if r.get(figure) and r.get("live stories") and r.get("live articles")]
    train = [r for r in usable[1:] if r["day"] <= last_day]
    if len(train) < 4:
        return
    coef, *_ = np.linalg.lstsq(np.array([x(r) for r in train]), np.array([r[figure] for r in train]), rcond=None)
    name = figure.replace(" B/key", " B/fit")
    for r in usable:
        predicted = float(np.dot(coef, x(r)))
        if predicted > 0:
            r[name] = r[figure] / predicted


def kind_of(c: str) -> str:
    """What a figure must do as history grows: ``flat`` (a per-minute cost or a normalised size), ``follows`` (a
    state that must grow with the live stories, or the stories within the storyline horizon, and no more: its
    normalised column is the flat one), ``run`` (the stage works once for the whole run in the backfill: its day is
    not a day's cost, :func:`print_run_costs`), ``info`` (counts)."""
    if c in RUN_ONLY:
        return "run"
    if c in FLAT or c in NORMALISED:
        return "flat"
    if "B/key" in c or "events/key" in c or c in ("snapshot KB/min", "rank log storyline max B"):
        return "follows"
    return "info"


def print_table(rows: list[dict]) -> None:
    cols = [k for k in rows[0] if k != "day"]
    for r in rows[1:]:
        cols += [k for k in r if k not in cols and k != "day"]
    print("\nper simulated day:")
    print("day " + " ".join(f"{c[:22]:>22s}" for c in cols))
    for r in rows:
        print(f"{r['day']:3d} " + " ".join(f"{r.get(c, float('nan')):22.1f}" for c in cols))
    rows = [r for r in rows if r["day"] >= 1]  # the warm-up's days are printed, never a baseline
    first, last = rows[0], rows[-1]
    third = rows[min(2, len(rows) - 1)]
    n = len(rows)
    early, late = rows[2 : min(9, n)], rows[max(n - 7, 3) :]  # days 3-9 and the last 7: bursts weigh less in medians
    print(f"\nday {last['day']} / day 1 (the acceptance's ratio; day 1 follows the warm-up), / day {third['day']}, and")
    print(
        f"the median of days {late[0]['day']}-{last['day']} / the median of days 3-{early[-1]['day']}:" if late else ""
    )
    print("  flat: must stay <= 1.3x (GROWS if not); follows: grows with live stories (its normalised figure is flat)")
    for c in cols:
        a, b, z = first.get(c), third.get(c), last.get(c)
        if z is None:
            continue
        m0, m1 = _median(early, c), _median(late, c)
        r1 = f"{z / a:6.2f}x" if a else "     -"
        r3 = f"{z / b:6.2f}x" if b else "     -"
        rm = f"{m1 / m0:6.2f}x" if m0 and m1 is not None else "     -"
        kind = kind_of(c)
        flag = "GROWS" if kind == "flat" and ((a and z / a > 1.3) or (b and z / b > 1.3)) else ""
        print(f"  {c:34s} {r1}  {r3}  {rm}  {kind:8s} {flag}")


def _median(rows: list[dict], c: str) -> float | None:
    vals = sorted(r[c] for r in rows if r.get(c) is not None)
    return vals[len(vals) // 2] if vals else None


def print_run_costs(probe: Probe, articles: int) -> None:
    """The stages that work once for the whole run in the backfill (:data:`RUN_ONLY`): CPU per article of the run."""
    for c in RUN_ONLY:
        stage = c.split()[0]
        spent = sum(v for (s, _), v in probe.cpu.items() if s == stage)
        print(f"  {c:34s} {spent / max(articles, 1) * 1e6:9.1f} over the run (one batch in the backfill, not per day)")


def print_profiles(probe: Probe, top: int = 14) -> None:
    """The cumulative-time top of each profiled (stage, day): where a cost that grows is spent."""
    for (stage, day), prof in sorted(probe.profiles.items()):
        print(f"\nprofile: {stage}, simulated day {day + 1}")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(top)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--per_day", type=int, default=1500, help="articles a simulated day (+-20 %%)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--warmup",
        type=int,
        default=WARMUP_DAYS,
        help="simulated days run before day 1 (printed, not a baseline; 0: none)",
    )
    ap.add_argument("--steady", action="store_true", help="a fixed rate: per_day every day, stories <= 20, no burst")
    ap.add_argument("--sagas", type=int, default=0, help="long sagas: an episode every 50 h for the whole run")
    ap.add_argument("--editions", default=",".join(EDITIONS), help="editions ranked (comma-separated)")
    ap.add_argument("--dir", default=None, help="keep the input, outputs and snapshots here (default: a temp dir)")
    ap.add_argument("--no_origin", action="store_true", help="skip the origin's memory after loading")
    ap.add_argument("--profile", default="", help="simulated days (1-based, comma-separated) to profile")
    ap.add_argument("--profile_stages", default="storylines,repair", help="stages profiled on those days")
    args = ap.parse_args(argv)
    if args.days <= 0 or args.per_day <= 0 or args.warmup < 0:
        ap.error("--days and --per_day must be > 0, --warmup >= 0")
    t_wall, c_all = time.time(), time.process_time()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="month-sim-") as tmp:
        d = Path(args.dir or tmp)
        d.mkdir(parents=True, exist_ok=True)
        per_day, h = write_history(
            str(d / "history.jsonl"), args.days, args.per_day, args.seed, args.steady, args.warmup, args.sagas
        )
        c = h.counts
        print(
            f"history: {sum(per_day.values())} articles over {args.warmup} warm-up + {args.days} days, {c.stories} stories, "
            f"{c.wire_copies} wire copies, {c.follow_ups} follow-ups, {c.merges} to merge, {c.splits} to split, {c.saga_episodes} saga episodes, "
            f"{len(c.takedowns)} takedowns and {len(c.controls)} controls generated (not applied)",
            flush=True,
        )
        probe = Probe(EPOCH_S * 1000 + args.warmup * DAY_MS, args.warmup)
        probe.profile_days = {int(x) - 1 for x in args.profile.split(",") if x.strip()}
        probe.profile_stages = set(args.profile_stages.split(","))
        install(probe)
        gc.callbacks.append(probe.on_gc)
        only_editions(args.editions.split(","))
        hash_links()
        from pipelines.backfill import run

        argv_bf = [f"--input={d / 'history.jsonl'}", "--embedder=hash:64", "--links=on"]
        argv_bf += [f"--snapshots={d / 'snapshots'}", f"--output={d / 'out'}", "--overwrite"]
        status = run(argv_bf)
        if status != 0:
            raise SystemExit(f"backfill exited {status}")
        manifest = json.load(open(d / "out" / "manifest.json"))
        print(f"backfill counts: {json.dumps(manifest.get('counts', {}))}", flush=True)
        print(accounting(d / "history.jsonl", d / "out" / "assignments.jsonl"), flush=True)
        rows = day_rows(probe, per_day, args.days)
        for figure, constant in FITTED:
            fit_live(rows, figure, constant)
        print_table(rows)
        print_run_costs(probe, sum(per_day.values()))
        print_profiles(probe)
        if not args.no_origin:
            origin = origin_memory(str(d / "snapshots"), args.editions.split(",")[0])
            print(f"\norigin after loading the snapshots: {json.dumps(origin)}")
    print(
        f"\n{time.time() - t_wall:.0f} s wall, {time.process_time() - c_all:.0f} s CPU; "
        f"load average at end: {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
