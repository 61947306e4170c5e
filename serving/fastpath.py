"""A WSGI layer in front of Flask for the hottest shared GETs: edition section pages and the edition version.

Reads the in-memory catalog only; writes responses. Why: behind the CDN the origin still answers a few hundred
requests a second (revalidations, misses, every edition's pages), and a Flask request costs ~2x the bare WSGI work
(URL map, request context, signals, header objects). This layer answers only requests it fully understands — GET,
no Cookie, no Authorization, the exact path shape, no query string or exactly ``limit=N`` — with the pre-serialised
bytes and pre-built header lists; anything else (errors, 404s, HEAD, other parameters, rejections) goes to the
Flask blueprints (serving/editions.py), which implement the same contract. tests/serving/test_fastpath.py checks
that both answer byte-identical bodies and identical headers.
"""

from __future__ import annotations

import re

from serving.http import JSON, etag_matches

PAGE = re.compile(r"^/v1/editions/([a-z]{2}-[a-z]{2,3})/sections/([a-z][a-z0-9_-]{0,31})$")
VERSION = re.compile(r"^/v1/editions/([a-z]{2}-[a-z]{2,3})/version$")
MAX_LIMIT = 100
NOSNIFF = ("X-Content-Type-Options", "nosniff")  # same header serving.create_app adds to every Flask response


class FastSharedPages:
    def __init__(self, wsgi_app, ext):
        self.wsgi_app = wsgi_app
        self.ext = ext

    def __call__(self, environ, start_response):
        if (
            environ.get("REQUEST_METHOD") != "GET"
            or environ.get("HTTP_COOKIE")
            or environ.get("HTTP_AUTHORIZATION")
            or not environ.get("PATH_INFO", "").startswith("/v1/editions/")
        ):
            return self.wsgi_app(environ, start_response)
        path = environ["PATH_INFO"]
        qs = environ.get("QUERY_STRING", "")
        cat = self.ext.holder.current
        m = PAGE.match(path)
        if m is not None:
            limit = None
            if qs:
                raw = qs[6:]
                if not (qs.startswith("limit=") and raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_LIMIT):
                    return self.wsgi_app(environ, start_response)
                limit = int(raw)
            page = cat.pages.get((m.group(1), m.group(2)))
            if page is None:
                return self.wsgi_app(environ, start_response)
            body, etag = page.body(limit)
        else:
            m = VERSION.match(path)
            info = cat.editions.get(m.group(1)) if m is not None and not qs else None
            if info is None:
                return self.wsgi_app(environ, start_response)
            body, etag = info.body, info.etag
        cc = self.ext.page_cache_control
        inm = environ.get("HTTP_IF_NONE_MATCH")
        if inm and etag_matches(inm, etag):
            start_response("304 NOT MODIFIED", [("ETag", etag), ("Cache-Control", cc), NOSNIFF])
            return []
        start_response(
            "200 OK",
            [
                ("Content-Type", JSON),
                ("Content-Length", str(len(body))),
                ("ETag", etag),
                ("Cache-Control", cc),
                NOSNIFF,
            ],
        )
        return [body]
