"""Fixtures for the editions tests: a small world of StoryChange records built by hand.

``world`` builds schema-checked StoryChange records (schemas/avro/story_change.avsc) with a writer sequence, for
stories whose articles come from the packaged sample-world publishers (transforms/data/publishers.json) or from
unknown publishers (authority 0.1). ``ranker`` folds a world's changes into a StoryBook and runs cycles of one
edition, keeping the edition's memory between cycles, without Beam.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from schemas import codec
from tests.transforms.editions.loop_reference import LoopMemory, run_cycle_loop
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle.context import CycleCache, CycleContext
from transforms.editions.cycle.run import EditionMemory, run_cycle
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry

T0 = 1_709_294_400_000  # 2024-03-01T12:00:00Z, a minute (and hour) boundary
MIN = 60_000
HOUR = 3_600_000
DIM = 24

AUTHORITATIVE_EN = ["wirepress", "daily-herald", "pacific-times", "capital-post", "london-chronicle", "mumbai-daily"]


def unit(key, dim: int = DIM) -> list[float]:
    seed = int(hashlib.sha256(str(key).encode()).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


def near(base: list[float], cosine: float, key) -> list[float]:
    """A unit vector at exactly ``cosine`` from ``base``."""
    b = np.asarray(base)
    r = np.asarray(unit(("orth", key), len(base)))
    r = r - (r @ b) * b
    r /= np.linalg.norm(r)
    v = cosine * b + np.sqrt(1 - cosine**2) * r
    return v.tolist()


class World:
    T0, MIN, HOUR, DIM = T0, MIN, HOUR, DIM
    AUTHORITATIVE_EN = AUTHORITATIVE_EN
    unit = staticmethod(unit)
    near = staticmethod(near)

    def __init__(self, language: str = "en"):
        self.language = language
        self.seq = 0
        self.changes: list[dict] = []
        self.centroids: dict[int, list[float]] = {}
        self.labels: dict[int, str | None] = {}  # story -> the section label its articles carry (randomise)
        self.n = 0

    def article(
        self,
        publisher: str,
        first_seen: int,
        title: str | None = None,
        section: str | None = "world",
        places=(),
        article_id: str | None = None,
        published_at: int | None = None,
        copy_of: str | None = None,
        opinion: bool = False,
        fact_check: bool = False,
        version: int = 1,
    ) -> dict:
        self.n += 1
        aid = article_id or hashlib.sha256(f"{publisher}/{self.n}".encode()).hexdigest()[:32]
        return {
            "article_id": aid,
            "version": version,
            "canonical_url": f"https://{publisher}.test/a/{aid[:8]}",
            "canonical_source": "rel_canonical",
            "fetched_url": f"https://{publisher}.test/a/{aid[:8]}",
            "publisher_id": publisher,
            "publisher_name": publisher.replace("-", " ").title(),
            "language": self.language,
            "title": title or f"Officials describe the response to the event number {self.n} in detail",
            "lede": f"Lede of article {self.n}.",
            "body": "Body text. " * 20,
            "published_at": published_at if published_at is not None else first_seen,
            "first_seen_at": first_seen,
            "content_hash": hashlib.sha256(f"content/{aid}".encode()).hexdigest(),
            "section": section,
            "entities": [{"id": p, "name": p, "kind": "PLACE"} for p in places],
            "is_opinion": opinion,
            "is_fact_check": fact_check,
            "copy_of": copy_of,
        }

    def _change(self, kind: str, story_id: int, at: int, **kw) -> dict:
        self.seq += 1
        rec = {
            "change_id": f"{self.language}-{self.seq}-{kind}",
            "language": self.language,
            "seq": self.seq,
            "kind": kind,
            "story_id": story_id,
            "at": at,
        }
        rec.update(kw)
        rec = codec.check("StoryChange", rec)
        self.changes.append(rec)
        return rec

    def add(self, story_id: int, art: dict, is_copy: bool = False, centroid=None) -> dict:
        """NEW_STORY for the story's first article, ASSIGN after."""
        if centroid is not None:
            self.centroids[story_id] = list(centroid)
        c = self.centroids.setdefault(story_id, unit(story_id))
        kind = "ASSIGN" if any(ch["story_id"] == story_id for ch in self.changes) else "NEW_STORY"
        return self._change(
            kind,
            story_id,
            art["first_seen_at"],
            article_id=art["article_id"],
            article=art,
            is_copy=is_copy or bool(art.get("copy_of")),
            centroid=c,
        )

    def story(self, story_id: int, publishers, start: int, step: int = MIN, **art_kw) -> list[dict]:
        """One original per publisher, first seen at start, start + step, ..."""
        out = []
        for i, pub in enumerate(publishers):
            out.append(self.add(story_id, self.article(pub, start + i * step, **art_kw)))
        return out

    def merge(self, survivor: int, absorbed: int, at: int) -> dict:
        return self._change("MERGE", survivor, at, other_story_id=absorbed, centroid=self.centroids.get(survivor, []))

    def split(self, keep: int, new: int, article_ids: list[str], at: int) -> dict:
        return self._change("SPLIT", keep, at, other_story_id=new, article_ids=article_ids)

    def expire(self, story_id: int, at: int) -> dict:
        return self._change("EXPIRE", story_id, at)

    def link(self, story_id: int, other: int, at: int) -> dict:
        return self._change("LINK", story_id, at, other_story_id=other)

    def randomise(self, seed: int, stories: int, start: int, end: int, near_duplicates: int = 0) -> None:
        """A random world: stories of 1-8 articles from the sample publishers and unknown ones, some copies,
        sections, places, and ``near_duplicates`` stories whose centroid is within 0.86-0.95 of another's."""
        rng = np.random.default_rng(seed)
        pubs = [p.publisher_id for p in default_registry() if p.language == self.language] + [
            f"blog-{k}" for k in range(6)
        ]
        sections = ["world", "business", "sports", "technology", "health", "politics", None]
        places = [(), ("california",), ("london",), ("united states",), ("mumbai",), ("texas", "usa")]
        sids = list(range(1000, 1000 + stories))
        for n, sid in enumerate(sids):
            if near_duplicates and n >= stories - near_duplicates:
                twin = sids[int(rng.integers(0, stories - near_duplicates))]
                self.centroids[sid] = near(self.centroids[twin], float(rng.uniform(0.86, 0.95)), sid)
            t = int(rng.integers(start, end))
            sec = sections[int(rng.integers(len(sections)))]
            self.labels[sid] = sec
            pl = places[int(rng.integers(len(places)))]
            first = None
            for k in range(int(rng.integers(1, 9))):
                pub = pubs[int(rng.integers(len(pubs)))]
                fs = t + int(rng.integers(0, 90 * MIN))
                copy = first is not None and rng.random() < 0.15
                art = self.article(
                    pub,
                    fs,
                    section=sec,
                    places=pl,
                    copy_of=first if copy else None,
                    title=f"Story {sid} report {k}: " + "officials say more " * int(rng.integers(1, 5)),
                )
                first = first or art["article_id"]
                self.add(sid, art, is_copy=copy)

    def sorted_changes(self) -> list[dict]:
        return sorted(self.changes, key=lambda c: (c["at"], c["seq"]))


class Ranker:
    """Runs cycles of one edition over a world, folding the changes due before each cycle."""

    def __init__(self, world: World, edition: str = "us-en", mode: str = "vector", **overrides):
        self.world = world
        self.config = load_config()
        self.registry = default_registry()
        self.params = RankParams.from_config(self.config, **overrides)
        self.edition = self.config.edition(edition)
        self.book = StoryBook(self.config, self.registry, self.edition.language)
        self.memory = LoopMemory() if mode == "loop" else EditionMemory()
        self.cache = CycleCache()
        self.mode = mode
        self.pulses: list[dict] = []

    def breaking(self, story_id: int, window_end: int, kind: str = "breaking") -> None:
        self.pulses.append(
            {
                "type": "pulse",
                "id": f"pulse|{kind}|{story_id}|{window_end}",
                "kind": kind,
                "story_id": story_id,
                "language": self.world.language,
                "window_end": window_end,
                "at": window_end - 1,
            }
        )

    @staticmethod
    def ids(out, section: str = "top") -> list[int]:
        return [int(s["story_id"]) for s in out.pages[section]["stories"]]

    def cycle(self, now: int):
        events = [compact_change(c) for c in self.world.changes] + self.pulses
        for e in sorted((e for e in events if e["at"] < now), key=event_sort_key):
            self.book.apply(e)
        ctx = CycleContext(self.book, self.edition, self.config, self.params, self.memory, now, cache=self.cache)
        return run_cycle_loop(ctx) if self.mode == "loop" else run_cycle(ctx)


@pytest.fixture
def world():
    return World()


@pytest.fixture
def make_ranker():
    return Ranker
