"""The book: one language's live stories as the ranker knows them, folded from story changes and burst pulses.

- :mod:`.storybook`: :class:`StoryBook` (the fold; ``compact_change`` trims a change to what it keeps,
  ``event_sort_key`` orders the events it folds);
- :mod:`.tables`: the typed column tables the book holds (publishers, stories, articles, pairs, mentions);
- :mod:`.headlines`: the headline check (clickbait and quality scores) the book scores each article version with;
- :mod:`.storylines`: :class:`StorylineMap`, story -> storyline, folded from StorylineChange events.

Exports: the names below.
May import: the floor (:mod:`transforms.editions.vocabulary`), ``transforms.common``, ``transforms.publishers``.
"""

from transforms.editions.book.headlines import assess, demoted_ids, headline_quality
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.book.storylines import StorylineMap, compact_storyline, is_storyline_change

__all__ = [
    "StoryBook",
    "StorylineMap",
    "assess",
    "compact_change",
    "compact_storyline",
    "demoted_ids",
    "event_sort_key",
    "headline_quality",
    "is_storyline_change",
]
