"""A WSGI layer in front of Flask for the hottest shared GETs: edition section pages, the edition version and the
edition discovery documents (``/v1/editions``, ``/v1/editions/{edition}``).

Reads the in-memory catalog only; writes responses. Why: behind the CDN the origin still answers a few hundred
requests a second (revalidations, misses, every edition's pages), and a Flask request costs ~2x the bare WSGI work
(URL map, request context, signals, header objects). This layer answers only requests it fully understands — GET,
no Cookie, no Authorization, the exact path shape, no query string or exactly ``limit=N`` — with the pre-serialised
bytes and pre-built header lists; anything else (errors, 404s, HEAD, other parameters, rejections) goes to the
Flask blueprints (serving/api/editions.py), which implement the same contract. tests/serving/test_fastpath.py checks
that both answer byte-identical bodies and identical headers.
"""

from __future__ import annotations

import re

from schemas.pages import MAX_LIMIT
from serving.http.conventions import CORS_HEADERS, JSON, etag_matches
from stores.cdn import cache_tag

PAGE = re.compile(r"^/v1/editions/([a-z]{2}-[a-z]{2,3})/sections/([a-z][a-z0-9_-]{0,31})$")
VERSION = re.compile(r"^/v1/editions/([a-z]{2}-[a-z]{2,3})/version$")
EDITION = re.compile(r"^/v1/editions/([a-z]{2}-[a-z]{2,3})$")
INDEX = "/v1/editions"
LIMIT_DIGITS = len(str(MAX_LIMIT))
NOSNIFF = ("X-Content-Type-Options", "nosniff")  # same header serving.create_app adds to every Flask response
# Same headers as serving.http.conventions.shared_cors adds to the shared blueprints' answers.
TAIL = [*CORS_HEADERS, NOSNIFF]


class FastSharedPages:
    def __init__(self, wsgi_app, ext):
        self.wsgi_app = wsgi_app
        self.ext = ext

    def __call__(self, environ, start_response):
        if (
            environ.get("REQUEST_METHOD") != "GET"
            or environ.get("HTTP_COOKIE")
            or environ.get("HTTP_AUTHORIZATION")
            or not environ.get("PATH_INFO", "").startswith(INDEX)
        ):
            return self.wsgi_app(environ, start_response)
        found = self.answer(environ["PATH_INFO"], environ.get("QUERY_STRING", ""), environ.get("HTTP_IF_NONE_MATCH"))
        if found is None:
            return self.wsgi_app(environ, start_response)
        status, headers, body = found
        start_response(status, headers)
        return [body] if body else []

    def answer(self, path: str, qs: str, if_none_match: str | None) -> tuple[str, list, bytes] | None:
        """(status, headers, body) of a cookie-less, unauthenticated GET of ``path?qs`` this layer answers, or None
        (Flask answers). Also called by the origin's gunicorn poller (serving/worker/gworker.py), which answers these
        requests without a thread."""
        if not path.startswith(INDEX):
            return None
        found = self._find(path, qs)
        if found is None:
            return None
        body, etag, cc = found
        tag = ("Cache-Tag", cache_tag(path))  # as serving.http.conventions.tag_shared
        if if_none_match and etag_matches(if_none_match, etag):
            return "304 NOT MODIFIED", [("ETag", etag), ("Cache-Control", cc), tag, *TAIL], b""
        headers = [
            ("Content-Type", JSON),
            ("Content-Length", str(len(body))),
            ("ETag", etag),
            ("Cache-Control", cc),
            tag,
        ]
        return "200 OK", [*headers, *TAIL], body

    def _find(self, path: str, qs: str) -> tuple[bytes, str, str] | None:
        """(body, ETag, Cache-Control) of a loaded page or edition document this layer answers; None: Flask."""
        cat = self.ext.holder.current
        m = PAGE.match(path)
        if m is not None:
            limit = None
            if qs:
                raw = qs[6:]
                # length first: int() of a long digit string is slow, and over 4,300 digits raises
                ok = qs.startswith("limit=") and 0 < len(raw) <= LIMIT_DIGITS and raw.isascii() and raw.isdigit()
                if not (ok and 1 <= int(raw) <= MAX_LIMIT):
                    return None
                limit = int(raw)
            page = cat.pages.get((m.group(1), m.group(2)))
            return None if page is None else (*page.body(limit), self.ext.section_cache_control(page))
        if qs:
            return None
        cc = self.ext.page_cache_control
        if path == INDEX:
            return (cat.index.body, cat.index.etag, cc) if cat.ready else None
        m = VERSION.match(path)
        if m is not None:
            info = cat.editions.get(m.group(1))
            return None if info is None else (info.body, info.etag, cc)
        m = EDITION.match(path)
        info = cat.editions.get(m.group(1)) if m is not None else None
        return None if info is None else (info.doc_body, info.doc_etag, cc)
