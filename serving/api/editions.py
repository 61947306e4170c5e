"""Edition pages, the edition version document and edition discovery (shared endpoints).

Reads the in-memory catalog (:mod:`serving.state.catalog`) and, for editions not live, the publisher registry's
languages (:class:`PublisherLanguages`, one small document every few minutes). Writes responses.

- ``GET /v1/editions``: discovery, every edition the origin has loaded (its discovery document, below), by id.
- ``GET /v1/editions/{edition}``: one edition's discovery document: cycle, pool version, the URL of its version
  document, and its sections (``top`` first) with their page versions and URLs.
- ``GET /v1/editions/{edition}/sections/{section}?limit=k``: the page's current version, pre-serialised bytes,
  strong ETag per (version, k), 304 on If-None-Match.
- An edition or section of the editions file with no live page yet answers 503 ``warming_up`` (Retry-After,
  never cached), not a 404 the CDN would keep: it exists and its first page is on its way.
- ``GET /v1/editions/{edition}/version``: a few hundred bytes (cycle, version per section, pool version) that open
  apps poll to show a "new stories" pill; cached like the pages so the pill and the pages move together.

Every answer here is shared (serving/http/conventions.py): the page Cache-Control, a strong ETag with 304, CORS for any origin.
"""

from __future__ import annotations

import logging
import time

from flask import request

from schemas.pages import MAX_LIMIT
from serving.http import conventions as http
from serving.state.context import services

log = logging.getLogger(__name__)

bp = http.shared_blueprint("editions", __name__)


def configured_pages() -> dict[str, frozenset[str]]:
    """Edition id -> its section ids, from the editions file the editions stage ranks (packaged
    transforms/editions/vocabulary/editions.json): what will exist, whether or not a page of it is live yet."""
    from transforms.editions.vocabulary.config import default_config

    return {e.id: frozenset(e.sections) for e in default_config().editions}


def local_cities() -> dict[str, frozenset[str]]:
    """Edition id -> the city codes of its region's gazetteer (editions.json ``local_places``, hyphens for spaces):
    the ``place:{code}`` pages that are local pages (serving/api/topics.py: 5 minutes at the edge)."""
    from transforms.editions.vocabulary.config import default_config
    from transforms.publishers import city_code

    config = default_config()
    regions = config.regions
    return {
        e.id: frozenset(city_code(n) for n in (regions[e.region].local_places if e.region in regions else ()))
        for e in config.editions
    }


class PublisherLanguages:
    """The languages the publisher registry has publishers in (the stored registry when one was imported, else the
    packaged sample: transforms/publisher_store.py), read again at most every ``refresh_s``. An edition is fed by
    the publishers of its language (transforms/editions/vocabulary/config.py ``editions_for_language``), so a
    configured edition of a language without one will not warm up: it has no publishers yet (jp-ja locally)."""

    def __init__(self, stores, refresh_s: float = 180.0, clock=time.monotonic):
        self.stores, self.refresh_s, self.clock = stores, refresh_s, clock
        self._langs: frozenset[str] | None = None
        self._at = 0.0

    def get(self) -> frozenset[str]:
        if self._langs is None or self.clock() - self._at >= self.refresh_s:
            self._langs, self._at = self._read(), self.clock()
        return self._langs

    def _read(self) -> frozenset[str]:
        from transforms import publisher_store
        from transforms.publishers import default_registry

        try:
            _, rows = publisher_store.load(self.stores)
        except Exception as exc:  # a store that cannot be read: keep what we had (or assume publishers)
            log.warning("publisher registry unreadable (%s): editions keep warming up", exc)
            return self._langs if self._langs is not None else frozenset({"*"})
        if rows is not None:
            return frozenset(str(r.get("language") or "") for r in rows)
        return frozenset(p.language for p in default_registry())


def has_publishers(ext, edition: str) -> bool:
    """Whether a configured edition has publishers of its language (else it says so instead of warming up)."""
    langs = ext.publisher_languages.get()
    return "*" in langs or edition.rsplit("-", 1)[-1] in langs


def pending(ext, edition: str, what: str):
    """The API's answer for a configured edition or page that is not live: 503 ``warming_up`` (Retry-After) while
    it will come, 404 ``no_publishers`` (briefly cached, no retry loop) when its language has no publisher."""
    if has_publishers(ext, edition):
        return http.warming_up(what)
    return http.problem(
        404,
        "no_publishers",
        f"edition {edition} has no publishers yet: none in its language is registered",
        cache_control=http.NEGATIVE,
    )


def is_configured(ext, edition: str, section: str | None = None) -> bool:
    sections = ext.configured.get(edition)
    return sections is not None and (section is None or section in sections)


@bp.get("/v1/editions")
def editions_index():
    ext = services()
    cat = ext.holder.current
    if not cat.ready:
        return http.not_ready()
    return http.shared_response(cat.index.body, cat.index.etag, ext.page_cache_control)


@bp.get("/v1/editions/<edition>")
def edition_document(edition: str):
    return _edition_answer(edition, lambda info: (info.doc_body, info.doc_etag))


def _edition_answer(edition: str, pick):
    """One of the edition's shared bodies, ``pick(info) -> (body, etag)``; an edition not held is explained."""
    ext = services()
    cat = ext.holder.current
    info = cat.editions.get(edition)
    if info is None:
        return _unknown_edition(cat, edition)
    body, etag = pick(info)
    return http.shared_response(body, etag, ext.page_cache_control)


def _unknown_edition(cat, edition: str):
    if is_configured(services(), edition):
        return pending(services(), edition, f"edition {edition}")
    if not cat.ready:
        return http.not_ready()
    return http.problem(404, "unknown_edition", f"no edition {edition}", cache_control=http.NEGATIVE)


@bp.get("/v1/editions/<edition>/sections/<section>")
def section_page(edition: str, section: str):
    ext = services()
    cat = ext.holder.current
    page = cat.pages.get((edition, section))
    if page is None:
        if is_configured(ext, edition, section):
            return pending(ext, edition, f"page {edition}/{section}")
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_page", f"no page {edition}/{section}", cache_control=http.NEGATIVE)
    try:
        limit = http.parse_limit(request.args.get("limit"), MAX_LIMIT)
    except ValueError as exc:
        return http.problem(400, "invalid_limit", str(exc))
    body, etag = page.body(limit)
    return http.shared_response(body, etag, ext.section_cache_control(page))


@bp.get("/v1/editions/<edition>/version")
def edition_version(edition: str):
    return _edition_answer(edition, lambda info: (info.body, info.etag))
