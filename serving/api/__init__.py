"""The JSON API: one Flask blueprint per resource.

Shared endpoints (the same bytes for every reader, cached at the edge): :mod:`.editions` (edition pages, the
version document, discovery), :mod:`.stories` (Full Coverage), :mod:`.storylines`, :mod:`.topics`. Private ones:
:mod:`.foryou` (the For you feed, the reader's controls and read events). :mod:`.push` (WebSub callbacks and
publisher pings), :mod:`.health` (liveness, readiness), :mod:`.openapi` (the OpenAPI document, its schemas in
:mod:`.openapi_schemas`).

Exports: the modules (each a ``bp`` and what the web pages reuse: ``story_entry``, ``storyline_doc``...).
May import: :mod:`serving.http`, :mod:`serving.state`, :mod:`serving.personal`, ``stores``, ``schemas``,
``transforms`` (plain values).
"""
