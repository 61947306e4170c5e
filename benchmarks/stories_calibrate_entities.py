"""``stories_calibrate.py`` on the production path's evidence: each labelled record's features gain what
:func:`transforms.stories.vocabulary.features.from_article` adds for an Article of the articles stage, the terms of
the entities :func:`transforms.articles.entities.extract` finds and the places of those entities
(``places_of(..., entities)``), instead of the labelled path's own keys and ``quick_places`` only. The labelled path
(:func:`~transforms.stories.vocabulary.features.from_labelled`) never reads extracted entities, so a change to the
extractor moves nothing in ``stories_calibrate.py``; this shows what it moves in production.

Same arguments as ``stories_calibrate.py`` (it runs that script's ``main``), for example:

    NEWSROOM_STORIES_CACHE=/work/cache/stories .venv/bin/python benchmarks/stories_calibrate_entities.py \\
        --max-articles 300 --data ../shared/data/stories
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stories_calibrate as sc  # noqa: E402

from transforms.articles import entities  # noqa: E402
from transforms.stories.vocabulary import features as F  # noqa: E402
from transforms.stories.vocabulary import places as placemod  # noqa: E402
from transforms.stories.vocabulary import text as textmod  # noqa: E402

_labelled = F.from_labelled


def with_entities(record: dict, first_seen_at: int, time_known: bool) -> F.ArticleFeatures:
    """The labelled features plus the extracted entities' terms and places, as ``from_article`` adds them."""
    f = _labelled(record, first_seen_at, time_known)
    body = record.get("text") or ""
    ents = entities.extract(record.get("title") or "", body, f.language)
    extra = {p for e in ents for p in textmod.terms(e.get("name") or "", f.language)}
    keys = tuple(sorted(set(f.entities) | extra)[: F.MAX_ENTITIES]) if extra else f.entities
    return dataclasses.replace(f, entities=keys, places=placemod.chains(f.title, body or f.lede, f.language, ents))


if __name__ == "__main__":
    sc.F.from_labelled = with_entities
    sys.exit(sc.main())
