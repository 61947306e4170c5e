"""Articles: normalise fetched pages and deduplicate them (exact, versions, syndicated copies).

Plain-Python domain logic (no Beam import at package import time, so ``newsroom extract`` stays light):
- :mod:`.page` (bytes -> tree, dead-letter reasons), :mod:`.structured` (meta, JSON-LD), :mod:`.urls` (canonical
  URL), :mod:`.dates` (UTC times), :mod:`.body` (article text), :mod:`.language`, :mod:`.entities`,
  :mod:`.normalize` (RawItem -> Article), :mod:`.dedupe` (new / update / duplicate against the ArticleStore),
  :mod:`.syndication` (MinHash + LSH copies).
- :mod:`.ptransforms`: the Beam PTransforms ``NormalizeArticles``, ``DedupeArticles``, ``DetectSyndication`` and
  ``ProcessArticles`` (all three in a row; also importable from this package, resolved lazily).
- :mod:`.extract`: the ``newsroom extract`` subcommand.
"""

_LAZY = {"NormalizeArticles", "DedupeArticles", "DetectSyndication", "ProcessArticles", "ARTICLES", "DEAD_LETTER"}


def __getattr__(name):  # PEP 562: import Beam only when a PTransform is asked for
    if name in _LAZY:
        from transforms.articles import ptransforms

        return getattr(ptransforms, name)
    raise AttributeError(name)
