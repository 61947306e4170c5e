"""Edition pages and the edition version document (shared endpoints).

Reads the in-memory catalog only (:mod:`serving.catalog`); never a store. Writes responses.

- ``GET /v1/editions/{edition}/sections/{section}?limit=k``: the page's current version, pre-serialised bytes,
  strong ETag per (version, k), 304 on If-None-Match.
- ``GET /v1/editions/{edition}/version``: a few hundred bytes (cycle, version per section, pool version) that open
  apps poll to show a "new stories" pill; cached like the pages so the pill and the pages move together.
"""

from __future__ import annotations

from flask import Blueprint, current_app, request

from serving import http

bp = Blueprint("editions", __name__)
bp.before_request(http.reject_personal_headers)

MAX_LIMIT = 100


@bp.get("/v1/editions/<edition>/sections/<section>")
def section_page(edition: str, section: str):
    ext = current_app.extensions["newsroom"]
    cat = ext.holder.current
    page = cat.pages.get((edition, section))
    if page is None:
        if not cat.ready:
            return http.not_ready()
        return http.error(404, f"no page {edition}/{section}", cache_control=http.NEGATIVE)
    try:
        limit = http.parse_limit(request.args.get("limit"), MAX_LIMIT)
    except ValueError as exc:
        return http.error(400, str(exc))
    body, etag = page.body(limit)
    return http.shared_response(body, etag, ext.page_cache_control)


@bp.get("/v1/editions/<edition>/version")
def edition_version(edition: str):
    ext = current_app.extensions["newsroom"]
    cat = ext.holder.current
    info = cat.editions.get(edition)
    if info is None:
        if not cat.ready:
            return http.not_ready()
        return http.error(404, f"no edition {edition}", cache_control=http.NEGATIVE)
    return http.shared_response(info.body, info.etag, ext.page_cache_control)
