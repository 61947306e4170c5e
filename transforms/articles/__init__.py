"""Articles: normalise fetched pages and deduplicate them (exact, versions, syndicated copies).

Plain-Python domain logic (no Beam import at package import time, so ``newsroom extract`` stays light):
- :mod:`.page` (bytes -> tree, dead-letter reasons), :mod:`.structured` (meta, JSON-LD), :mod:`.urls` (canonical
  URL), :mod:`.dates` (UTC times), :mod:`.body` (article text), :mod:`.language`, :mod:`.entities` (with its word
  lists in :mod:`.entity_words`), :mod:`.normalize` (RawItem -> Article), :mod:`.dedupe` (new / update / duplicate
  against the ArticleStore), :mod:`.syndication` (MinHash + LSH copies), :mod:`.worker` (the extraction budget).
- :mod:`.beam`: the stage's one Beam module, with the PTransforms ``NormalizeArticles``, ``DedupeArticles``,
  ``DetectSyndication`` and ``ProcessArticles`` (all three in a row). Import them from there
  (``from transforms.articles.beam import ProcessArticles``): this package never imports Beam.
- :mod:`.extract`: the ``newsroom extract`` subcommand.
"""
