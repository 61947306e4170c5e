"""Liveness and readiness (for the load balancer and gunicorn's supervisor). Never cached.

- ``GET /healthz``: 200 while the process answers.
- ``GET /readyz``: 200 once the catalog holds at least one edition page (loaded from the snapshots), else 503 (a
  ``not_ready`` problem, serving/http/conventions.py, carrying the same fields).
  Once ready it stays ready when the stores go away (the origin keeps serving the last loaded pages); the body then
  reports how long ago the stores last answered so that monitoring can alert on it.
"""

from __future__ import annotations

import time

import orjson
from flask import Blueprint, Response

from serving.http import conventions as http
from serving.state.context import services

bp = Blueprint("health", __name__)


def _json(doc: dict, status: int) -> Response:
    resp = Response(orjson.dumps(doc), status=status, content_type=http.JSON)
    resp.headers["Cache-Control"] = http.NO_STORE
    return resp


@bp.get("/healthz")
def healthz():
    return _json({"status": "ok"}, 200)


@bp.get("/readyz")
def readyz():
    ext = services()
    holder = ext.holder
    cat = holder.current
    last = holder.last_success
    doc = {
        "ready": cat.ready,
        "pages": len(cat.pages),
        "pools": len(cat.pools),
        "stories": len(cat.stories),
        "stories_on_demand": len(ext.watcher.story_cache),
        "aliases_version": cat.aliases_version,
        "stores_last_answered_s": None if last is None else round(time.monotonic() - last, 3),
        "last_error": holder.last_error,
        "shed": ext.shedder.shed,
    }
    if not cat.ready:
        return http.problem(503, "not_ready", "no edition page is loaded yet", **doc)
    return _json(doc, 200)
