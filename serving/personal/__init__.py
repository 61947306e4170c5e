"""For you's model, plain Python and numpy: a reader's profile and the ranking of an edition's pool against it.

- :mod:`.ranking`: re-rank an edition's candidate pool against one reader's profile (no Flask, no store);
- :mod:`.readers`: reader state in the origin (a short-TTL profile cache, the background folder of read events,
  co-visitation neighbours);
- :mod:`.clusters`: the population signals ("readers like you" clusters, trend blending);
- :mod:`.feed`: For you pages: a cursor bound to what the reader has been shown.

The endpoints that serve it are :mod:`serving.api.foryou`.

Exports: the modules.
May import: :mod:`serving.http`, :mod:`serving.state`, ``stores``, ``schemas``.
"""
