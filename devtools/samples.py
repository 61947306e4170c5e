"""Synthetic snapshots (edition pages, candidate pools, story coverage, aliases) and a publisher for them.

Used by tests/serving, benchmarks/serve_bench.py and local demos of the origin before the ranking job has run.
Reads nothing; :func:`publish` writes a validated document to a SnapshotStore and moves its pointer by
compare-and-set, exactly like the snapshot publisher does (names from schemas/pages.py). Deterministic per seed.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import orjson

from schemas import pages as page_schemas

BASE_TIME = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TOPICS = ["politics", "climate", "football", "tech", "markets", "health", "science", "film", "energy", "transport"]
PLACES = ["london", "paris", "new-york", "berlin", "madrid", "rome", "tokyo", "lagos"]
# Entity ids as the alias table (transforms/articles/aliases.tsv) spells them: one id per entity across scripts.
ENTITIES = ["org:isro", "place:pune", "org:nasa", "person:ada-lovelace", "org:who", "place:lagos"]
WORDS = [
    "government",
    "council",
    "report",
    "vote",
    "storm",
    "market",
    "energy",
    "prices",
    "league",
    "final",
    "court",
    "ruling",
    "study",
    "vaccine",
    "launch",
    "strike",
    "border",
    "election",
    "minister",
    "budget",
    "water",
    "heat",
    "record",
    "rally",
    "talks",
    "deal",
    "investors",
    "museum",
    "festival",
    "rail",
]


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def card(rng: random.Random, article_id: str, publisher_id: str, published: datetime, words: int = 12) -> dict:
    title = " ".join(rng.choice(WORDS) for _ in range(words)).capitalize()
    return {
        "article_id": article_id,
        "url": f"https://{publisher_id}.example/news/{article_id}",
        "title": title,
        "lede": " ".join(rng.choice(WORDS) for _ in range(2 * words)).capitalize() + ".",
        "publisher_id": publisher_id,
        "publisher_name": publisher_id.replace("-", " ").title(),
        "image_url": None,
        "published_at": iso(published),
        "first_seen_at": iso(published + timedelta(seconds=30)),
        "language": "en",
        "labels": [],
    }


def story_id(i: int) -> str:
    return str(7_300_000_000_000_000_000 + i)


def edition_page(
    edition: str,
    section: str,
    version: int,
    n_stories: int = 30,
    seed: int = 1,
    first_story: int = 0,
    supporting: int = 4,
) -> dict:
    rng = random.Random(f"{edition}/{section}/{version}/{seed}")
    cycle = BASE_TIME + timedelta(minutes=version)
    stories = []
    for r in range(n_stories):
        sid = story_id(first_story + r)
        pubs = rng.sample([f"pub-{k}" for k in range(40)], 1 + supporting)
        t = cycle - timedelta(minutes=rng.randint(1, 600))
        stories.append(
            {
                "story_id": sid,
                "rank": r + 1,
                "score": round(100.0 - r, 3),
                "labels": [],
                "section": section,
                "representative": card(rng, f"a{sid}-0", pubs[0], t),
                "supporting": [
                    card(rng, f"a{sid}-{k}", pubs[k], t - timedelta(minutes=k)) for k in range(1, 1 + supporting)
                ],
                "article_count": 5 + rng.randint(0, 30),
                "publisher_count": 5,
                "updated_at": iso(t),
            }
        )
    return {
        "schema": "newsroom.edition_page/v1",
        "edition": edition,
        "section": section,
        "version": version,
        "cycle": iso(cycle),
        "generated_at": iso(cycle + timedelta(seconds=20)),
        "stories": stories,
    }


def unit(rng: random.Random, dim: int = 64) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(dim)]
    n = sum(x * x for x in v) ** 0.5
    return [round(x / n, 5) for x in v]


def candidate_pool(edition: str, version: int, n: int = 1000, seed: int = 1, publishers: int = 60) -> dict:
    """n candidates, score descending with rank; topics / places / publishers drawn at random; 64-d vectors built
    from one direction per topic plus noise, so stories of a topic are similar to each other."""
    rng = random.Random(f"pool/{edition}/{version}/{seed}")
    topic_dir = {t: unit(random.Random(f"topic/{t}")) for t in TOPICS}
    cycle = BASE_TIME + timedelta(minutes=version)
    stories = []
    for i in range(n):
        sid = story_id(i)
        topic = rng.choice(TOPICS)
        noise = unit(rng)
        vec = [0.8 * a + 0.6 * b for a, b in zip(topic_dir[topic], noise)]
        pubs = rng.sample([f"pub-{k}" for k in range(publishers)], 3)
        srng = random.Random(f"story/{sid}")  # the card of a story does not depend on the pool it is in
        stories.append(
            {
                "story_id": sid,
                "score": round(1000.0 / (1 + i) + rng.random() * 0.01, 4),
                "section": topic,
                "topics": [topic],
                "publishers": pubs,
                "places": [rng.choice(PLACES)] if rng.random() < 0.3 else [],
                "entities": _entities(sid),
                "vector": [round(x, 5) for x in vec],
                "labels": [],
                "representative": card(srng, f"a{sid}-0", pubs[0], cycle - timedelta(minutes=srng.randint(1, 600))),
            }
        )
    return {
        "schema": "newsroom.candidate_pool/v1",
        "edition": edition,
        "version": version,
        "cycle": iso(cycle),
        "stories": stories,
    }


def _entities(sid: str) -> list[str]:
    """0-2 entity ids of a pool story, from their own random stream (the rest of the pool does not move)."""
    erng = random.Random(f"entities/{sid}")
    return erng.sample(ENTITIES, erng.choice((0, 0, 1, 1, 2)))


def story_coverage(sid: str, version: int, articles: list[dict], title: str = "A story") -> dict:
    return {
        "schema": "newsroom.story_coverage/v1",
        "story_id": sid,
        "version": version,
        "language": "en",
        "title": title,
        "updated_at": max((a["published_at"] for a in articles), default=iso(BASE_TIME)),
        "links": [],
        "articles": articles,
    }


def storyline(storyline_id: str, version: int, n: int, language: str = "en", start: datetime = BASE_TIME) -> dict:
    """A storyline document of ``n`` episodes a week apart, newest first (as the publisher writes them); two of
    them share a first_at, to exercise the story id tie-break of the keyset."""
    episodes = []
    for k in range(n):
        first = start - timedelta(days=7 * (k // 2 * 2 if k % 4 == 1 else k))
        episodes.append(
            {
                "story_id": story_id(5000 + k),
                "title": f"Episode {k} of the subject",
                "first_at": iso(first),
                "last_at": iso(first + timedelta(hours=5)),
                "article_count": 3 + k,
                "publisher_count": 2 + k % 3,
            }
        )
    episodes.sort(key=lambda e: (e["first_at"], int(e["story_id"])), reverse=True)
    return {
        "schema": "newsroom.storyline/v1",
        "storyline_id": storyline_id,
        "language": language,
        "version": version,
        "title": episodes[0]["title"] if episodes else "",
        "updated_at": max((e["last_at"] for e in episodes), default=iso(start)),
        "episodes": episodes,
    }


def coverage_articles(sid: str, n: int, seed: int = 1, start: datetime = BASE_TIME, prefix: str = "c") -> list[dict]:
    """n cards, some sharing a published_at (to exercise the article_id tie-break)."""
    rng = random.Random(f"cov/{sid}/{seed}/{prefix}")
    out = []
    for k in range(n):
        t = start - timedelta(minutes=(k // 2) * 7)
        out.append(card(rng, f"{prefix}{sid}-{k:04d}", f"pub-{rng.randint(0, 30)}", t, words=6))
    return out


def aliases(version: int, mapping: dict[str, str]) -> dict:
    return {"schema": "newsroom.aliases/v1", "version": version, "aliases": dict(mapping)}


def pointer_and_path(doc: dict) -> tuple[str, str, str]:
    """(schema kind, pointer name, object path) of a snapshot document."""
    schema = doc["schema"]
    v = doc["version"]
    if schema == "newsroom.edition_page/v1":
        return (
            "edition_page",
            f"{doc['edition']}/{doc['section']}",
            page_schemas.page_path(doc["edition"], doc["section"], v),
        )
    if schema == "newsroom.candidate_pool/v1":
        return "candidate_pool", f"pool/{doc['edition']}", page_schemas.pool_path(doc["edition"], v)
    if schema == "newsroom.story_coverage/v1":
        return "story_coverage", f"story/{doc['story_id']}", page_schemas.story_path(doc["story_id"], v)
    if schema == "newsroom.aliases/v1":
        return "aliases", "aliases", page_schemas.aliases_path(v)
    if schema == "newsroom.topic_page/v1":
        name = f"topic/{doc['edition']}/{doc['topic']}"
        return "topic_page", name, page_schemas.topic_path(doc["edition"], doc["topic"], v)
    if schema == "newsroom.storyline/v1":
        name = f"storyline/{doc['language']}/{doc['storyline_id']}"
        return "storyline", name, page_schemas.storyline_path(doc["language"], doc["storyline_id"], v)
    if schema == "newsroom.storyline_index/v1":
        name = f"storyline_index/{doc['language']}/{doc['shard']}"
        return "storyline_index", name, page_schemas.storyline_index_path(doc["language"], doc["shard"], v)
    raise ValueError(f"unknown snapshot schema {schema!r}")


def publish(pointers, snapshots, doc: dict, validate: bool = True) -> str:
    """Validate, write the immutable object, move the pointer from whatever it was. Returns the pointer name."""
    kind, name, path = pointer_and_path(doc)
    if validate:
        from serving.state.validation import validate as check

        check(kind, doc)
    snapshots.put(path, orjson.dumps(doc))
    current = pointers.get(name)
    if not pointers.compare_and_set(name, current, doc["version"], reason="publish"):
        raise RuntimeError(f"pointer {name} moved concurrently")
    return name
