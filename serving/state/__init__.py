"""What the origin holds in memory and how it gets there: the catalog of every shared page, the pointer watcher
that loads it (the only reader of the pointer and snapshot stores), the schema validation of what it loads, the
process-wide resources' accessor and the secrets.

- :mod:`.catalog`: :class:`~.catalog.Catalog` and :class:`~.catalog.CatalogHolder` (prepared, immutable, swapped
  whole);
- :mod:`.watcher`: :class:`~.watcher.PointerWatcher`; :mod:`.validation`: snapshot documents' schema check;
- :mod:`.context`: :func:`~.context.services`, the one accessor of ``app.extensions["newsroom"]``;
- :mod:`.secrets`: the token and cursor secrets (generated once for a local origin).

Exports: the modules.
May import: :mod:`serving.http`, ``schemas``, ``stores``, ``transforms`` (plain values: the editions config).
"""
