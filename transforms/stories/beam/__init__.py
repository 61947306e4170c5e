"""The stories stage's Beam layer, one module per concern; the plain-Python stage it runs is transforms/stories/.

- :mod:`~transforms.stories.beam.embed`: EmbedArticles (ArticleFeatures dicts -> the same with vectors);
- :mod:`~transforms.stories.beam.writer`: ClusterStories (the per-language story writer as a stateful DoFn);
- :mod:`~transforms.stories.beam.apply`: ApplyStoryChanges (writer outputs -> the story store, in seq order);
- :mod:`~transforms.stories.beam.links`: LinkStories (the streaming cross-language linker);
- :mod:`~transforms.stories.beam.storylines`: Storylines (writer outputs and links -> StorylineChange records);
- :mod:`~transforms.stories.beam.backfill`: the backfill's files (ReadArticles, the result writer, progress lines).

The streaming job (pipelines/stories.py) runs EmbedArticles -> ClusterStories -> ApplyStoryChanges, LinkStories and
Storylines; the backfill (pipelines/backfill.py) the same writer and applier over ReadArticles. The names here are
what those jobs import (``from transforms.stories import beam as sb``).

Exports: the stage's PTransforms (below); the DoFns from their modules.
May import: every room of the stories stage, Beam, ``stores`` (through stores.beam_io), ``transforms.common`` and
``transforms.timers``.
"""

from transforms.common import DEAD_LETTER
from transforms.stories.beam.apply import ApplyStoryChanges, ApplyStoryChangesFn
from transforms.stories.beam.common import STAGE
from transforms.stories.beam.embed import EmbedArticles, EmbedBatchFn
from transforms.stories.beam.links import LinkStories, LinkStoriesFn
from transforms.stories.beam.writer import ClusterStories, ClusterStoriesFn

__all__ = [
    "DEAD_LETTER",
    "STAGE",
    "ApplyStoryChanges",
    "ApplyStoryChangesFn",
    "ClusterStories",
    "ClusterStoriesFn",
    "EmbedArticles",
    "EmbedBatchFn",
    "LinkStories",
    "LinkStoriesFn",
]
