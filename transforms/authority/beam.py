"""The authority job's Beam stage: stored stories -> per (publisher, section) counts -> the authority document.

    ScanStoryIds (one worker pages through StoryStore.story_ids, logging progress) -> Reshuffle
    -> ReadStoryFacts (story row + its members' article records -> a story fact; aliases, empty stories and
       stories older than the window are skipped)
    -> StoryEvidence (per publisher and section counts of one story) -> SumCounts (per key)
    -> PublishAuthority (one element: shrink toward the hand-set prior, write authority/v{n}.json, move the
       ``authority`` pointer)

The scoring is plain Python (transforms/authority/scoring.py); the document and pointer, transforms/authority.
"""

from __future__ import annotations

import logging
import time

import apache_beam as beam
from apache_beam.metrics import Metrics

from stores import StoreConfig, open_store, open_stores
from transforms import authority as au
from transforms.authority import scoring as sc
from transforms.editions.vocabulary.config import default_config
from transforms.publishers import UNKNOWN_AUTHORITY, default_registry

log = logging.getLogger("newsroom.authority")


class ScanStoryIdsFn(beam.DoFn):
    """Impulse -> every stored story id, in pages of ``page_size`` (one row-range scan per page)."""

    def __init__(self, config: StoreConfig, page_size: int = 1000):
        self.config, self.page_size = config, page_size
        self.scanned = Metrics.counter("authority", "story_ids_scanned")

    def process(self, _):
        stories = open_store("stories", self.config)
        after, total, started = -1, 0, time.monotonic()
        while page := stories.story_ids(after=after, limit=self.page_size):
            total += len(page)
            self.scanned.inc(len(page))
            log.info("[authority] scanned %d stories (%.0f s)", total, time.monotonic() - started)
            yield from page
            after = page[-1]
        log.info("[authority] scan done: %d stories", total)


class ReadStoryFactFn(beam.DoFn):
    """Story id -> its story fact (scoring.story_fact), or nothing for an alias, an empty story or a story whose
    newest member is older than ``since_ms``."""

    def __init__(self, config: StoreConfig, editions_path: str | None = None, since_ms: int = 0):
        self.config, self.editions_path, self.since_ms = config, editions_path, since_ms
        self.read = Metrics.counter("authority", "stories_read")
        self.skipped = Metrics.counter("authority", "stories_skipped")
        self.articles = Metrics.counter("authority", "articles_read")

    def setup(self):
        self.stores = open_stores(self.config)
        cfg = default_config(self.editions_path)
        self.label_map = {k: v for k, v in cfg.label_sections().items() if v != "top"}
        self.section_order = [s.id for s in cfg.sections if s.id != "top"]

    def process(self, story_id: int):
        story = self.stores.stories.get_story(story_id)
        members = (story or {}).get("members") or {}
        if not members or story.get("alias_of") is not None:
            self.skipped.inc()
            return
        if self.since_ms and max(int(m.get("at") or 0) for m in members.values()) < self.since_ms:
            self.skipped.inc()
            return
        articles = {aid: self.stores.articles.get(aid) for aid in sorted(members)}
        self.articles.inc(len(articles))
        self.read.inc()
        yield sc.story_fact(story, articles, self.label_map, self.section_order)


def operator_registry(publishers_path: str | None, config: StoreConfig | None):
    """The operator's registry: the stored one (transforms/publisher_store.py), else the file, else the sample."""
    if config is None:
        return default_registry(publishers_path)
    from transforms.publisher_store import LiveRegistry

    return LiveRegistry(publishers_path, config).registry


class StoryEvidenceFn(beam.DoFn):
    """Story fact -> ((publisher_id, section key), counts) per publisher of the story."""

    def __init__(self, publishers_path: str | None = None, config: StoreConfig | None = None):
        self.publishers_path, self.config = publishers_path, config

    def setup(self):
        self.group_of = sc.group_function(operator_registry(self.publishers_path, self.config))

    def process(self, fact: dict):
        yield from sc.story_evidence(fact, self.group_of).items()


class SumCountsFn(beam.CombineFn):
    def create_accumulator(self):
        return dict.fromkeys(sc.COUNT_FIELDS, 0)

    def add_input(self, acc, counts):
        return sc.add_counts(acc, counts)

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for a in accs:
            out = sc.add_counts(out, a)
        return out

    def extract_output(self, acc):
        return acc


class PublishAuthorityFn(beam.DoFn):
    """All summed counts (one list) -> the computed document, published; yields ``{"version", "publishers"}``."""

    def __init__(self, config: StoreConfig, params: sc.AuthorityParams, publishers_path: str | None, window: dict):
        self.config, self.params, self.publishers_path, self.window = config, params, publishers_path, window

    def process(self, totals: list, n_stories: int):
        registry = operator_registry(self.publishers_path, self.config)
        rated = sc.compute(dict(totals), registry, self.params)
        doc = {
            "computed_at": int(time.time() * 1000),
            "params": self.params.to_dict(),
            "window": self.window,
            "stories": int(n_stories),
            "publishers": rated,
        }
        version = au.publish(open_stores(self.config), doc)
        moved = sorted(
            (round(r["authority"] - (registry.get(p).authority if registry.get(p) else UNKNOWN_AUTHORITY), 3), p)
            for p, r in rated.items()
        )
        log.info(
            "[authority] published v%d: %d stories, %d publishers; largest moves %s",
            version,
            n_stories,
            len(rated),
            ", ".join(f"{p} {d:+.3f}" for d, p in (moved[:3] + moved[-3:])),
        )
        yield {"version": version, "publishers": rated}


def add_authority(
    pbegin,
    config: StoreConfig,
    params: sc.AuthorityParams = sc.AuthorityParams(),
    publishers_path: str | None = None,
    editions_path: str | None = None,
    since_ms: int = 0,
    page_size: int = 1000,
) -> dict:
    """Adds the stage's steps to ``pbegin`` (a pipeline: its steps are then the job's top-level stages, as the
    Dataflow UI shows them); returns ``{"facts", "totals", "published"}``."""
    ids = (
        pbegin
        | "Start" >> beam.Impulse()
        | "ScanStoryIds" >> beam.ParDo(ScanStoryIdsFn(config, page_size))
        | "SpreadStories" >> beam.Reshuffle()
    )
    facts = ids | "ReadStoryFacts" >> beam.ParDo(ReadStoryFactFn(config, editions_path, since_ms))
    n_stories = facts | "CountStories" >> beam.combiners.Count.Globally()
    totals = (
        facts
        | "StoryEvidence" >> beam.ParDo(StoryEvidenceFn(publishers_path, config))
        | "SumCounts" >> beam.CombinePerKey(SumCountsFn())
        | "AllCounts" >> beam.combiners.ToList()
    )
    published = totals | "PublishAuthority" >> beam.ParDo(
        PublishAuthorityFn(config, params, publishers_path, {"since_ms": since_ms}),
        n_stories=beam.pvalue.AsSingleton(n_stories),
    )
    return {"facts": facts, "totals": totals, "published": published}
