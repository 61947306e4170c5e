"""Synthetic articles with precomputed vectors for the stories tests (fast: no model). Imported by the tests as
``tests.transforms.stories.synth``; the fixtures live in conftest.py next to it.

``make_articles(...)`` draws events (a random unit direction, a vocabulary and entity keys of their own), then
articles of each event: the event's direction plus noise, some of its terms and entities, a publisher, a time.
Everything is seeded: the same call always returns the same articles.
"""

from __future__ import annotations

import numpy as np

from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer.cluster import ClusterConfig

DIM = 32
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MIN = 60_000
HOUR = 3_600_000

# A calibration for the synthetic vectors (the "test" model): joins what is clearly one event, merges fragments.
# The second opinion (join_pair_margin) is calibrated on real encoders; the synthetic vectors keep the profile score.
TEST_CONFIG = ClusterConfig(
    join=1.2, join_headline=1.2, merge=1.3, merge_headline=1.3, merge_size_slope=0.0, join_pair_margin=None
)


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


def article(
    aid: str,
    vector,
    at: int,
    language: str = "en",
    terms=("alpha",),
    entities=("acme",),
    source: str | None = None,
    copy_of: str | None = None,
    time_known: bool = True,
    link_vector=None,
) -> ArticleFeatures:
    return ArticleFeatures(
        article_id=aid,
        language=language,
        first_seen_at=at,
        time_known=time_known,
        title=f"title {aid}",
        lede="",
        source=source or f"pub-{aid}",
        copy_of=copy_of,
        terms=tuple(sorted(terms)),
        term_tf=tuple(1 for _ in terms),
        entities=tuple(sorted(entities)),
        vector=unit(vector),
        link_vector=None if link_vector is None else unit(link_vector),
        model="test",
        has_body=True,
    )


def make_articles(
    n_events: int = 6,
    per_event: int = 8,
    seed: int = 7,
    spread_ms: int = 40 * MIN,
    noise: float = 0.35,
    language: str = "en",
    start: int = T0,
    gap_ms: int = 20 * MIN,
) -> tuple[list[ArticleFeatures], dict[str, int]]:
    """(articles in arrival order, article -> event). Events start ``gap_ms`` apart and overlap in time."""
    rng = np.random.default_rng(seed)
    arts, gold = [], {}
    for e in range(n_events):
        centre = rng.standard_normal(DIM)
        vocab = [f"e{e}w{i}" for i in range(12)]
        ents = [f"e{e}name{i}" for i in range(5)]
        t_start = start + e * gap_ms
        for k in range(per_event):
            v = centre / np.linalg.norm(centre) + noise * rng.standard_normal(DIM) / np.sqrt(DIM)
            terms = sorted(set(rng.choice(vocab, 6, replace=False)) | {"news", "said"})
            entities = sorted(set(rng.choice(ents, 3, replace=False)))
            at = t_start + int(rng.integers(0, spread_ms))
            aid = f"{language}-e{e:02d}-a{k:02d}"
            arts.append(article(aid, v, at, language, terms, entities, source=f"pub{int(rng.integers(0, 40))}"))
            gold[aid] = e
    order = rng.permutation(len(arts))
    return [arts[i] for i in order], gold


def translated_events(language: str, rng, start: int = T0, n: int = 3, entities=lambda e: (f"name{e}",)):
    """One article per event ``e`` < ``n`` in ``language``: its own dense vector, but a multilingual link vector
    near axis ``e`` and the entity keys ``entities(e)`` shared by every language (translations of one event)."""
    return [
        article(
            f"{language}{e}",
            rng.standard_normal(DIM),
            start + e * 1000,
            language=language,
            terms=(f"{language}w{e}",),
            entities=entities(e),
            link_vector=np.eye(DIM)[e] * 4 + 0.1 * rng.standard_normal(DIM),
        )
        for e in range(n)
    ]


def pair_model_file(tmp_path, bias: float = -6.0) -> str:
    """A learned pair score (transforms/stories/writer/pairscore.py) that weighs dense, entity and term similarity
    alike, written where a ClusterConfig's ``pair_score`` reads it."""
    import json

    from transforms.stories.writer import pairscore

    model = pairscore.PairScore(1, (4.0, 4.0, 4.0, 0.0, 0.0), bias, {"body": 0.0, "headline": 0.0}, {})
    path = tmp_path / f"model{bias}.json"
    path.write_text(json.dumps(model.to_dict()), encoding="utf-8")
    return str(path)


def gated_config(tmp_path):
    """The test configuration with the learned pair score of :func:`pair_model_file` asked, as shipped, only where
    the evidence naming an event conflicts (the shipped gates: places, ages), at the join and merge bars (margins 0)
    and with the merge repair."""
    import dataclasses

    shipped = ClusterConfig()
    return dataclasses.replace(
        TEST_CONFIG,
        join=0.5,
        pair_score=pair_model_file(tmp_path),
        repair_mode="merge",
        join_pair_margin=0.0,
        merge_pair_margin=0.0,
        opinion_places=shipped.opinion_places,
        opinion_ages=shipped.opinion_ages,
    )


def one_kind_run(word: str, prefix: str = "name", time_known: bool = True) -> list:
    """Three events of one kind, two reports each, an hour apart: one direction (the kind) and a shared ``word``,
    but each event its own names and terms. The profile score chains them; the pair score does not."""
    rng = np.random.default_rng(5)
    kind = rng.standard_normal(DIM)
    arts = []
    for e in range(3):
        for k in range(2):
            v = unit(kind + 0.05 * rng.standard_normal(DIM))
            at = T0 + (2 * e + k) * HOUR
            arts.append(
                article(f"e{e}-{k}", v, at, terms=(f"t{e}", word), entities=(f"{prefix}{e}",), time_known=time_known)
            )
    return arts
