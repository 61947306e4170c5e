"""Benchmark: one full ranking cycle for every edition (73 editions x 12 sections) over 300,000 live stories, on
one core, next to the same cycle written as a per-story Python loop.

Reads nothing; prints figures (never asserts times). A synthetic world is loaded straight into the StoryBook
columns (one book per language, as RankEditionsFn keeps one per edition; editions of a language share the same
book object here only to save memory -- every edition still computes all its own features, exactly as the DoFn
does). Language shares follow DESIGN.md (English ~40 %); per story 1 + Geometric(0.25) articles (15 % syndicated
copies), newest original uniformly within the 48 h live window, 384-d centroids, a synthetic registry of ~3,000
publishers (a quarter of each edition's local to a gazetteer city). What is timed, per edition, is
transforms.editions.cycle.run.run_cycle: features and scores, candidates,
smoothing, representatives, hysteresis + diversity + pins for all 12 pages, supporting links, page/pool documents,
coverage documents and the cycle's overlays as EditionRanker runs them (page sections and cities on the pool, the
trending topic pages, the storyline pages and their index; no controls or takedowns). Cycle 1 is cold (every pool story's coverage is emitted once); between cycle 1 and 2 the
next minute's ~1,400 articles are folded in (timed separately), and cycle 2 is the steady state.

The loop figure runs tests/transforms/editions/loop_reference.py's ``run_cycle_loop`` (per-story Python for scores,
candidates, smoothing and representatives; the page assembly and documents are the production code) on a sample
of editions and scales its ratio to the vectorised time of the same editions; ``--full-loop`` runs it on every
edition instead. It also checks both give the same pages.

    .venv/bin/python benchmarks/rank_bench.py                 # 300k stories, all editions
    .venv/bin/python benchmarks/rank_bench.py --stories 30000 --loop-editions 4
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # one core: numpy's BLAS (the few matmuls) must not fan out

import argparse
import copy
import gc
import hashlib
import resource
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

if "transforms" not in sys.modules:  # benchmarks/rank_compare.py imports another tree's code first
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.transforms.editions.loop_reference import LoopView, loop_memory, run_cycle_loop  # noqa: E402
from transforms.common import HOUR_MS, MINUTE_MS  # noqa: E402
from transforms.editions.book.storybook import TITLE_DIM, StoryBook, compact_change  # noqa: E402
from transforms.editions.cycle.context import Clock, CycleCache, CycleContext  # noqa: E402
from transforms.editions.cycle.run import EditionMemory, run_cycle  # noqa: E402
from transforms.editions.overlays.phases import Overlays  # noqa: E402
from transforms.editions.overlays.topics import city_codes  # noqa: E402
from transforms.editions.vocabulary import documents as docs  # noqa: E402
from transforms.editions.vocabulary.config import load_config  # noqa: E402
from transforms.editions.vocabulary.params import RankParams  # noqa: E402
from transforms.publishers import PublisherRegistry  # noqa: E402

NOW = 1_709_294_400_000  # 2024-03-01T12:00:00Z
LANG_SHARE = {
    "en": 0.40,
    "es": 0.09,
    "de": 0.06,
    "fr": 0.06,
    "pt": 0.05,
    "hi": 0.03,
    "ar": 0.03,
    "ja": 0.03,
    "zh": 0.03,
}


class LazyColumn(dict):
    """A list-like column whose first ``n0`` items are made on first access (cards, ids of 1 M+ articles). A dict
    of the items made so far, so reading one already made costs what a list's does (``__missing__`` only on a
    first read): the harness must not add Python calls to every card the cycle reads."""

    def __init__(self, n0: int, make):
        super().__init__()
        self.n0, self.make, self.extra = n0, make, []

    def __missing__(self, i):
        if i >= self.n0:
            return self.extra[i - self.n0]
        v = self[i] = self.make(i)
        return v

    def __len__(self):
        return self.n0 + len(self.extra)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def append(self, v):
        self.extra.append(v)


def make_registry(config, rng) -> PublisherRegistry:
    rows = []
    for e in config.editions:
        cities = ["-".join(n.split()) for n in config.regions[e.region].local_places]  # local publishers: k >= 30
        for k in range(40):
            auth = float(np.clip(rng.beta(2, 3) + (0.35 if k < 4 else 0.0), 0.05, 0.98))
            rows.append(
                {
                    "publisher_id": f"{e.id}-p{k}",
                    "name": f"{e.id} P{k}",
                    "hosts": [f"{e.id}-p{k}.test"],
                    "region": e.region,
                    "language": e.language,
                    "authority": round(auth, 3),
                    **({"city": cities[k % len(cities)]} if k >= 30 and cities else {}),
                }
            )
    for lang in sorted({e.language for e in config.editions}):
        for k in range(4):
            rows.append(
                {
                    "publisher_id": f"wire-{lang}-{k}",
                    "name": f"Wire {lang} {k}",
                    "hosts": [f"wire-{lang}-{k}.test"],
                    "region": "",
                    "language": lang,
                    "authority": 0.9,
                    "is_wire": True,
                }
            )
    return PublisherRegistry.from_dicts(rows)


def preallocate(table, size: int) -> None:
    """Numpy columns of ``size`` rows at their fill values (the benchmark fills them directly, then sets
    ``table.size``): what Table.add leaves, every column ``table.capacity`` rows long and the spare ones at fill, so
    the articles and stories the measured minutes fold grow the table as a folded book's would."""
    for name, (_, fill, _) in table.COLUMNS.items():
        arr = getattr(table, name)
        setattr(table, name, np.full((size,) + arr.shape[1:], fill, arr.dtype))
    table.capacity = size


def load_book(config, registry, language: str, n: int, rng, dim: int, id_base: int) -> StoryBook:
    """Fill a StoryBook's columns for ``n`` live stories directly (what folding their changes would give)."""
    book = StoryBook(config, registry, language, dim=dim)
    pubs = [p.publisher_id for p in registry if p.language == language]
    for pid in pubs:
        book.publisher(pid)
    P = len(pubs)
    S = book.n_sections
    regions_of_lang = sorted({book.region_index[e.region] for e in config.editions_for_language(language)})
    # stories
    sid = id_base + np.arange(n, dtype=np.int64)
    newest = NOW - rng.integers(0, 48 * HOUR_MS, n)
    n_art = 1 + rng.geometric(0.25, n)
    n_art = np.minimum(n_art, 200)
    A = int(n_art.sum())
    a_story = np.repeat(np.arange(n, dtype=np.int32), n_art)
    spread = rng.exponential(2 * HOUR_MS, n).astype(np.int64)
    a_fs = newest[a_story] - (rng.random(A) * spread[a_story]).astype(np.int64)
    first_in_story = np.r_[0, np.cumsum(n_art)[:-1]]
    a_fs[first_in_story] = newest  # each story's newest original
    a_copy = rng.random(A) < 0.15
    a_copy[first_in_story] = False
    home = rng.integers(0, max(1, P - 4), n)  # a story's articles mostly come from a neighbourhood of publishers
    a_pub = ((home[a_story] + rng.integers(0, 40, A)) % P).astype(np.int32)
    story_sec = rng.integers(0, S, n)
    a_sec = np.where(rng.random(A) < 0.8, story_sec[a_story], rng.integers(-1, S, A)).astype(np.int16)
    base_t = rng.standard_normal((n, TITLE_DIM)).astype(np.float32)
    tv = base_t[a_story] + 0.7 * rng.standard_normal((A, TITLE_DIM)).astype(np.float32)
    tv /= np.linalg.norm(tv, axis=1, keepdims=True)
    cen = rng.standard_normal((n, dim)).astype(np.float32)
    cen /= np.linalg.norm(cen, axis=1, keepdims=True)

    preallocate(book.stories, n)
    book.stories.centroid = cen
    book.stories.size = n
    book.stories.id[:] = sid
    book.stories.last_seq[:] = 1.0
    book.stories.expire_seq[:] = -1.0
    book.stories.centroid_seq[:] = 1.0
    orig = ~a_copy
    np.add.at(book.stories.section_counts, (a_story[a_sec >= 0], a_sec[a_sec >= 0]), 1)
    book.stories.labelled[:] = book.stories.section_counts.sum(axis=1)
    counts = book.stories.section_counts
    book.stories.primary_section[:] = np.where(book.stories.labelled > 0, np.argmax(counts, axis=1), -1)
    book.stories.n_articles[:] = n_art
    book.stories.n_originals[:] = np.bincount(a_story[orig], minlength=n)
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, a_story[orig], a_fs[orig])
    book.stories.first_seen[:] = first
    book.stories.newest_seen[:] = newest
    np.add.at(book.stories.title_sum, a_story, tv)
    book.stories.version[:] = newest // MINUTE_MS + 1
    book.stories.structural_minute[:] = first // MINUTE_MS + 1
    book.stories.created_at[:] = first
    opinion = rng.random(A) < 0.03
    fact = rng.random(A) < 0.005
    book.stories.n_opinion[:] = np.bincount(a_story[opinion], minlength=n)
    book.stories.n_fact_checks[:] = np.bincount(a_story[fact], minlength=n)
    recent = np.flatnonzero(NOW - newest < 90 * MINUTE_MS)
    brk = rng.choice(recent, size=min(3, recent.size), replace=False) if recent.size else []
    for r in brk:
        book.stories.breaking_start[r] = (newest[r] // MINUTE_MS) * MINUTE_MS
    # articles
    # spare room for the next minutes' articles, as the book's doubling growth would have left
    preallocate(book.articles, A + 65536)
    book.articles.size = A
    book.articles.story[:A] = a_story
    book.articles.seq[:A] = 1.0
    book.articles.has_data[:A] = True
    book.articles.version[:A] = 1
    book.articles.publisher[:A] = a_pub
    book.articles.first_seen[:A] = a_fs
    book.articles.published_at[:A] = a_fs - rng.integers(0, 10 * MINUTE_MS, A)
    book.articles.is_copy[:A] = a_copy
    book.articles.section[:A] = a_sec
    book.articles.title_vector[:A] = tv
    book.articles.headline_quality[:A] = rng.uniform(0.3, 1.0, A).astype(np.float32)
    book.articles.is_opinion[:A] = opinion
    book.articles.is_fact_check[:A] = fact
    book.articles.key[:A] = rng.integers(0, 1 << 60, A)
    book.articles.event_minute[:A] = a_fs // MINUTE_MS + 1

    def make_id(i):
        return hashlib.sha256(f"{language}/{i}".encode()).hexdigest()[:32]

    def make_card(i):
        aid = make_id(i)
        return {
            "article_id": aid,
            "url": f"https://{book.publishers.id[book.articles.publisher[i]]}.test/{aid[:10]}",
            "title": f"Headline {i} of the story {int(book.stories.id[book.articles.story[i]])}, as reported in "
            f"{language}",
            "lede": "A synthetic lede of about one sentence, like the ones publishers write.",
            "publisher_id": book.publishers.id[book.articles.publisher[i]],
            "publisher_name": book.publishers.name[book.articles.publisher[i]],
            "image_url": None,
            "published_at": int(book.articles.published_at[i]),
            "language": language,
        }

    book.articles.id = LazyColumn(A, make_id)
    book.articles.card = LazyColumn(A, make_card)
    book.articles.places = LazyColumn(A, lambda i: ())
    # two entity ids per article, shared by its story's articles (pool entries count them per story)
    book.articles.entities = LazyColumn(
        A, lambda i: (f"org:e{int(a_story[i]) % 997}", f"person:p{(int(a_story[i]) * 7 + i % 3) % 1999}")
    )
    book.stories.row_of = dict(zip(sid.tolist(), range(n)))
    order = np.argsort(a_story, kind="stable")
    bounds = np.r_[0, np.cumsum(n_art)]
    book.stories.members = [set(order[bounds[i] : bounds[i + 1]].tolist()) for i in range(n)]
    book.stories.links = [set() for _ in range(n)]
    # story x publisher pairs of originals, in story order (as folding would allocate them)
    key = a_story[orig].astype(np.int64) * P + a_pub[orig]
    uniq, inv = np.unique(key, return_inverse=True)
    latest = np.full(uniq.size, np.iinfo(np.int64).min)
    np.maximum.at(latest, inv, a_fs[orig])
    ns = uniq.size
    book.pairs.size = ns
    book.pairs.story = (uniq // P).astype(np.int32)
    book.pairs.publisher = (uniq % P).astype(np.int32)
    book.pairs.region = book.publishers.region[book.pairs.publisher]
    book.pairs.latest_first_seen = latest
    book.pairs.n_originals = np.bincount(inv, minlength=ns).astype(np.int32)
    book.pairs.live = np.ones(ns, bool)
    book.pairs.capacity = ns  # every column set above holds exactly the rows in use
    sp_bounds = np.searchsorted(book.pairs.story, np.arange(n + 1))
    book.stories.pair_rows = [list(range(sp_bounds[i], sp_bounds[i + 1])) for i in range(n)]
    # (story row, publisher row) -> pair row, as folding keeps it: without it, folding a new article of a publisher
    # the story already has appended a second pair row and that voice counted twice in coverage
    book.pairs.row_of = dict(zip(zip(book.pairs.story.tolist(), book.pairs.publisher.tolist()), range(ns)))
    # place mentions: ~40 % of stories name a place of one of the language's regions
    has = np.flatnonzero(rng.random(n) < 0.4)
    nr = has.size
    book.mentions.size = nr
    book.mentions.story = has.astype(np.int32)
    book.mentions.region = rng.choice(regions_of_lang, nr).astype(np.int16)
    book.mentions.count = np.maximum(1, (rng.random(nr) * n_art[has]).astype(np.int32))
    book.mentions.local_count = (book.mentions.count * (rng.random(nr) < 0.3)).astype(np.int32)
    book.mentions.live = np.ones(nr, bool)
    book.mentions.capacity = nr
    book.mentions.row_of = dict(zip(zip(has.tolist(), book.mentions.region.tolist()), range(nr)))
    book.stories.mention_rows = [[] for _ in range(n)]
    for k, r in enumerate(has.tolist()):
        book.stories.mention_rows[r].append(k)
    return book


def next_minute_events(books, registry, rng, count: int, minute: int = 1) -> dict:
    """~``count`` ASSIGN events for minute ``minute`` after NOW (1: the minute after it), spread over languages by
    story share. Each minute's articles, change ids and sequence numbers are its own: a later minute folds new
    articles into the book, not the same ones again (which a book takes as repeats: nothing changes)."""
    out = {}
    seq = 10_000_000 * minute
    total = sum(b.stories.size for b in books.values())
    for lang, book in books.items():
        k = int(round(count * book.stories.size / total))
        recent = np.flatnonzero(NOW - book.stories.newest_seen[: book.stories.size] < 6 * HOUR_MS)
        pubs = [p.publisher_id for p in registry if p.language == lang]
        evs = []
        for j in range(k):
            seq += 1
            row = int(rng.choice(recent))
            fs = NOW + (minute - 1) * MINUTE_MS + int(rng.integers(0, MINUTE_MS))
            aid = hashlib.sha256(f"new/{lang}/{minute}/{j}".encode()).hexdigest()[:32]
            art = {
                "article_id": aid,
                "version": 1,
                "canonical_url": f"https://x.test/{aid}",
                "publisher_id": pubs[j % len(pubs)],
                "publisher_name": None,
                "language": lang,
                "title": f"Update {j} on story {int(book.stories.id[row])}",
                "lede": "",
                "image_url": None,
                "published_at": fs,
                "first_seen_at": fs,
                "section": "world",
                "topics": [],
                "is_opinion": False,
                "is_fact_check": False,
                "copy_of": None,
                "entities": [],
            }
            ch = {
                "change_id": f"bench-{seq}",
                "language": lang,
                "seq": seq,
                "kind": "ASSIGN",
                "story_id": int(book.stories.id[row]),
                "article_id": aid,
                "article": art,
                "is_copy": False,
                "at": fs,
                "centroid": [],
            }
            evs.append(compact_change(ch))
        out[lang] = evs
    return out


class GcMeter:
    """CPU seconds spent in CPython's cyclic garbage collector (gc.callbacks), and full collections."""

    def __init__(self):
        self.seconds, self.full, self._t = 0.0, 0, 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase, info):
        if phase == "start":
            self._t = time.process_time()
        else:
            self.seconds += time.process_time() - self._t
            self.full += int(info.get("generation") == 2)

    def reset(self):
        self.seconds, self.full = 0.0, 0


def summarise(out) -> dict:
    """What the benchmark keeps of a cycle's output (a DoFn hands the documents on and forgets them)."""
    return {
        "coverage": len(out.coverage),
        "pages": len(out.pages),
        "entries": sum(len(p["stories"]) for p in out.pages.values()),
        "pool": len(out.pool["stories"]),
        "ids": {
            sec: [(s["story_id"], s["representative"]["article_id"]) for s in p["stories"]]
            for sec, p in out.pages.items()
        },
    }


def first_difference(editions, out_v: dict, out_l: dict) -> str:
    """The first edition, section and slot where the vectorised pages (``out_v``) and the loop's differ."""
    for e in editions:
        v, lp = out_v[e.id]["ids"], out_l[e.id]["ids"]
        for sec in sorted(set(v) | set(lp)):
            a, b = v.get(sec), lp.get(sec)
            if a is None or b is None:
                return f"{e.id} page {sec!r} only from the {'vectorised cycle' if b is None else 'loop'}"
            for k in range(max(len(a), len(b))):
                x, y = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)
                if x != y:
                    return f"{e.id} {sec} slot {k}: vectorised (story, representative) {x}, loop {y}"
    return "none"


def publish_work(out) -> float:
    """CPU seconds PublishSnapshots spends on one edition's documents before any I/O: digest, canonical bytes,
    schema validation (what it does for every changed document)."""
    t = time.process_time()
    kinds = [("edition_page", d) for d in out.pages.values()] + [("candidate_pool", out.pool)]
    kinds += [("topic_page", d) for d in getattr(out, "topic_docs", ())]
    for kind, doc in kinds + [("story_coverage", d) for d in out.coverage]:
        docs.content_digest(doc)
        data = docs.canonical_bytes(doc)
        try:
            docs.validate(kind, doc, None, 0, data)
        except docs.SnapshotRejected:
            pass
    return time.process_time() - t


def group_storylines(books, size: int = 3) -> None:
    """Every story of each book in a storyline of ``size`` consecutive stories (untimed setup), so a cycle's
    storyline pages cost what a cycle with storylines costs: each story whose coverage is emitted rebuilds its
    storyline's episodes (transforms/editions/overlays/storyline_pages.py)."""
    for book in books.values():
        smap = book.storylines
        for sid in book.stories.id[: book.stories.size].tolist():
            smap._put(int(sid), (1 << 50) + int(sid) // size)
            smap.grown.add((1 << 50) + int(sid) // size)
        smap.take()


def static_tables(config) -> None:
    """Build the process's static tables a first cycle would build lazily (the gazetteer behind the city codes,
    ~140,000 objects), so they are frozen with the world: left in the collector's oldest generation they were a
    quarter of what each full collection traversed, in a cycle's CPU."""
    from transforms.editions.vocabulary.cities import config_cities

    city_codes(config)
    config_cities(config)


def worker_collector() -> None:
    """The collector setting a ranking worker's process runs at, as RankEditionsFn.setup makes it
    (transforms/editions/cycle/collector.py ``space_worker_collections``); nothing for a tree without one (a baseline
    tree of benchmarks/rank_compare.py runs as its own worker would)."""
    from transforms.editions.cycle import collector

    setting = getattr(collector, "space_worker_collections", None)
    if setting is not None:
        setting()


@dataclass(frozen=True)
class Run:
    """One minute of the benchmark over some editions: what every edition's cycle context is built from."""

    books: dict  # language -> StoryBook
    config: object
    params: RankParams
    memories: dict  # edition id -> EditionMemory (LoopMemory for the loop)
    caches: dict  # edition id -> CycleCache (a DoFn keeps one next to its book)
    cities: dict = field(default_factory=dict)


def run_all(editions, run: Run, now: int, loop: bool = False, views=None, timings=None, publish=None):
    """Run every edition's cycle (``loop``: the per-story reference); per-edition CPU seconds of this process (the
    machine is shared: wall time includes other processes' turns on the cores, CPU time is what one core spent on
    the cycle). The vectorised cycle includes its overlays, as EditionRanker runs it: cities, the topic pages
    (``timings["topic pages"]``; trending only, no reader follows in a synthetic world) and the storyline pages
    (``timings["storyline pages"]``: every story in a storyline of three, :func:`group_storylines`); the loop has
    none (it is the reference for the ranking)."""
    per = {}
    outs = {}
    for e in editions:
        cache = run.caches.setdefault(e.id, CycleCache())
        book, memory = run.books[e.language], run.memories[e.id]
        t = time.process_time()
        if loop:
            ctx = CycleContext(book, e, run.config, run.params, memory, now, cache, Clock(timings))
            out = run_cycle_loop(ctx, (views or {}).get(e.language))
        else:
            overlays = Overlays(followed={}, cities=run.cities)
            out = run_cycle(
                CycleContext(book, e, run.config, run.params, memory, now, cache, Clock(timings), None, overlays)
            )
            if timings is not None:
                timings["topic pages built"] = timings.get("topic pages built", 0) + len(out.topic_pages)
                timings["storyline pages built"] = timings.get("storyline pages built", 0) + len(out.storylines)
        per[e.id] = time.process_time() - t
        out.topic_docs = [item["doc"] for item in out.topic_pages]
        if publish is not None:
            publish[e.id] = publish_work(out)  # outside the cycle's timing
        outs[e.id] = summarise(out)
        del out
    return per, outs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stories", type=int, default=300_000)
    ap.add_argument("--dim", type=int, default=384, help="centroid dimension (MiniLM: 384)")
    ap.add_argument("--loop-editions", type=int, default=6, help="editions the per-story loop runs on (sample)")
    ap.add_argument("--full-loop", action="store_true", help="run the loop on every edition (minutes)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--publish-cost",
        action="store_true",
        help="also time PublishSnapshots' CPU work (digest, canonical JSON, schema validation) on cycle 2's documents",
    )
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    config = load_config()
    params = RankParams.from_config(config)
    editions = list(config.editions)
    languages = sorted({e.language for e in editions})
    rest = (1.0 - sum(LANG_SHARE.values())) / max(1, len([lang for lang in languages if lang not in LANG_SHARE]))
    share = {lang: LANG_SHARE.get(lang, rest) for lang in languages}
    registry = make_registry(config, rng)
    t = time.perf_counter()
    books, id_base = {}, 1 << 40
    for lang in languages:
        n = max(50, int(round(args.stories * share[lang])))
        books[lang] = load_book(config, registry, lang, n, rng, args.dim, id_base)
        id_base += n + 1
    n_stories = sum(b.stories.size for b in books.values())
    n_articles = sum(b.articles.size for b in books.values())
    print(
        f"world: {n_stories:,} live stories, {n_articles:,} articles, {len(languages)} languages, "
        f"{len(editions)} editions x {len(config.sections)} sections = {len(config.pages())} pages, "
        f"{len(registry):,} publishers, centroids {args.dim}-d (built in {time.perf_counter() - t:.1f} s)"
    )
    print(
        f"largest book: {max(b.stories.size for b in books.values()):,} stories (English); "
        f"story-edition pairs scored per cycle: {sum(books[e.language].stories.size for e in editions):,}"
    )

    group_storylines(books)
    # The world is static for the run: move it out of the cyclic GC's scans (a DoFn would do the same after a
    # book rebuild); per-cycle garbage is still collected as usual.
    static_tables(config)
    gc.collect()
    gc.freeze()
    worker_collector()
    meter = GcMeter()
    memories = {e.id: EditionMemory() for e in editions}
    caches: dict = {}
    run = Run(books, config, params, memories, caches, city_codes(config))
    timings1: dict = {}
    t, w = time.process_time(), time.perf_counter()
    per1, outs1 = run_all(editions, run, NOW, timings=timings1)
    c1, w1 = time.process_time() - t, time.perf_counter() - w
    cov1 = sum(o["coverage"] for o in outs1.values())
    del outs1
    gc.collect()
    events = next_minute_events(books, registry, rng, 1400)
    t = time.process_time()
    n_ev = 0
    for lang, evs in events.items():
        for e in evs:
            books[lang].apply(e)
            n_ev += 1
        books[lang].flush()
    fold = time.process_time() - t
    timings2: dict = {}
    meter.reset()
    t, w = time.process_time(), time.perf_counter()
    per2, outs2 = run_all(editions, run, NOW + MINUTE_MS, timings=timings2)
    c2, w2 = time.process_time() - t, time.perf_counter() - w
    gc2, full2 = meter.seconds, meter.full
    cov2 = sum(o["coverage"] for o in outs2.values())
    pages = sum(o["pages"] for o in outs2.values())
    stories_on_pages = sum(o["entries"] for o in outs2.values())
    pool = sum(o["pool"] for o in outs2.values())
    load = os.getloadavg()[0]
    print(f"vectorised cycle 1 (cold, {cov1:,} coverage docs): {c1:.2f} s CPU ({w1:.2f} s wall)")
    print(f"fold of the next minute's {n_ev:,} articles (all books): {fold * 1000:.0f} ms CPU")
    print(
        f"vectorised cycle 2 (steady, {cov2:,} coverage docs): {c2:.2f} s CPU ({w2:.2f} s wall, load average "
        f"{load:.1f} on {os.cpu_count()} cores)  <- seconds per cycle, one core"
    )
    print(f"  of which cyclic GC: {gc2:.2f} s ({full2} full collections); without it {c2 - gc2:.2f} s")
    print(f"  {pages} pages, {stories_on_pages:,} page entries, {pool:,} pool entries")
    print(
        "  phases of cycle 2 (CPU): "
        + ", ".join(f"{k} {v:.2f} s" if isinstance(v, float) else f"{k} {v}" for k, v in timings2.items())
    )
    if args.publish_cost:
        # PublishSnapshots' CPU on the documents of two more cycles (the second shows the steady state, where
        # entries validated before are not validated again); the cycles' own time is not counted here.
        for k in (2, 3):
            publish: dict = {}
            run_all(editions, run, NOW + k * MINUTE_MS, publish=publish)
            print(
                f"  publishing work, cycle {k + 1} (digest + canonical JSON + schema validation of every document, no "
                f"I/O; PublishSnapshots, parallel across workers): {sum(publish.values()):.2f} s CPU"
            )
    slow = sorted(per2.items(), key=lambda t: -t[1])[:3]
    print("  slowest editions: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in slow))

    # ---- the per-story loop: same cycle, same memories' starting point (fresh), on a sample of editions
    if args.full_loop:
        sample = editions
    else:
        by_size = sorted(editions, key=lambda e: (-books[e.language].stories.size, e.id))
        k = max(1, args.loop_editions)
        sample = [by_size[int(i * (len(by_size) - 1) / max(1, k - 1))] for i in range(k)] if k > 1 else by_size[:1]
    views = {}
    t = time.perf_counter()
    for lang in sorted({e.language for e in sample}):
        views[lang] = LoopView(books[lang])
    view_s = time.perf_counter() - t
    # Both start from cycle 2's memories (smoothing history, last pages, emitted coverage): the steady state.
    mem_v = {e.id: copy.deepcopy(memories[e.id]) for e in sample}
    mem_l = {e.id: loop_memory(memories[e.id]) for e in sample}
    t_cmp = NOW + (4 if args.publish_cost else 2) * MINUTE_MS  # the minute after the last cycle run above
    per_v, out_v = run_all(sample, replace(run, memories=mem_v), t_cmp)
    per_l, out_l = run_all(sample, replace(run, memories=mem_l), t_cmp, loop=True, views=views)
    sv, sl = sum(per_v.values()), sum(per_l.values())
    same = all(out_v[e.id]["ids"] == out_l[e.id]["ids"] for e in sample)
    ratio = sl / sv if sv else float("nan")
    scope = "every edition" if args.full_loop else f"{len(sample)} sampled editions ({', '.join(e.id for e in sample)})"
    print(
        f"per-story loop on {scope}: {sl:.2f} s CPU vs vectorised {sv:.2f} s CPU on the same editions "
        f"-> ratio {ratio:.1f}x (plain-Python views built outside the timing in {view_s:.1f} s)"
    )
    if not args.full_loop:
        print(f"per-story loop, full cycle extrapolated by that ratio: {c2 * ratio:.1f} s CPU (vectorised {c2:.2f} s)")
    print(f"same pages and representatives from both: {'yes' if same else 'NO'}")
    if not same:
        print("  first difference: " + first_difference(sample, out_v, out_l))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
