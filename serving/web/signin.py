"""Local sign-in: a reader token for this browser without pasting one, on a local stack only.

- ``GET /sign-in?next=/e/us-en/``: a private page (``Cache-Control: private, no-store``, never cached by the CDN)
  with a name field; its script (``/assets/signin.js``) posts the name and keeps the token it gets back in the
  browser's localStorage, where every page's ``reader.js`` (controls, read beacon, For you slice) and the For you
  page find it, then returns to ``next`` (a path on this origin only).
- ``POST /sign-in/token`` ``{"reader": "ana"}`` -> ``{"reader_id": "local:ana", "token": ...}``: a token signed with
  the origin's token secret (serving/http/auth.py), valid :data:`TOKEN_TTL_S`.

Why localStorage and an ``Authorization: Bearer`` header, not a cookie: the private endpoints already take bearer
tokens, and a header a script must add is not sent by a cross-site form or image, so the controls and events need
no CSRF token; no response of the origin ever sets a cookie, and shared pages never see the token (the browser
does not send localStorage), so they stay the same bytes for every reader. The trade: a script injected into the
page could read the token; the pages' Content-Security-Policy allows only the origin's own scripts and every
article text goes through autoescape or ``textContent``.

When it exists (``NEWSROOM_LOCAL_SIGN_IN``): ``"auto"`` (default) only on the embedded (local) backend whose token
secret is the generated local one (``{data_dir}/secrets.json``, as ``newsroom run`` and a bare ``newsroom serve``
use; no verifier); ``true`` on the embedded backend with any HMAC secret (tests); ``false`` never. Outside the embedded
backend it never exists: anyone reaching the origin could name any reader. Otherwise both routes answer 404.

The token POST checks that it comes from a page of this origin (CSRF, login-CSRF included): JSON only (a cross-site
form cannot send ``application/json`` without a CORS preflight, which the origin never grants here), and a
``Sec-Fetch-Site`` other than same-origin, or an ``Origin`` other than this host, is refused with 403. The body is
bounded like every private body (NEWSROOM_MAX_BODY_BYTES, 413).
"""

from __future__ import annotations

import re

import orjson
from flask import Blueprint, Response, request

from serving.http import auth
from serving.http import conventions as http
from serving.state.context import services
from serving.web.shell import SECURITY_HEADERS, lang_of, not_found, render

bp = Blueprint("signin", __name__, template_folder="templates")

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
NEXT = re.compile(r"^/(?:e/[a-z]{2}-[a-z]{2,3}/[A-Za-z0-9_./:%-]*|stories/[0-9]{1,20})?$")
TOKEN_TTL_S = 30 * 24 * 3600


def enabled(cfg) -> bool:
    """Whether this origin offers local sign-in (the module docstring's rule)."""
    setting = cfg.get("NEWSROOM_LOCAL_SIGN_IN", "auto")
    if (cfg.get("NEWSROOM_BACKEND") or "embedded") != "embedded" or cfg.get("NEWSROOM_TOKEN_VERIFIER") is not None:
        return False
    if setting in (True, "true", "1", 1):
        return True
    if setting != "auto":
        return False
    secret = cfg.get("NEWSROOM_TOKEN_SECRET")
    return not secret or secret == _local_token_secret(str(cfg.get("NEWSROOM_DATA_DIR") or ".newsroom"))


def _local_token_secret(data_dir: str) -> str | None:
    """The token secret of ``{data_dir}/secrets.json`` if that file exists (``newsroom run`` passes it to its
    origin explicitly: still the generated local one). Never creates the file."""
    import json
    import os

    from serving.state.secrets import SECRETS_FILE

    try:
        with open(os.path.join(data_dir, SECRETS_FILE)) as f:
            return json.load(f).get("token")
    except (OSError, ValueError, AttributeError):
        return None


def follow_target(topic_id: str, name: str) -> tuple[str, str, str] | None:
    """(kind, value, name) of ``POST /v1/me/follows`` for a topic page id: ``topic:tech`` -> a section,
    ``entity:org:who`` -> an entity, ``place:fr`` -> a place; None for anything else."""
    kind, _, value = topic_id.partition(":")
    found = {"topic": "topic", "entity": "entity", "place": "place"}.get(kind)
    return (found, value, name) if found and value else None


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path of this origin's pages, else ``/`` (never another host)."""
    return value if isinstance(value, str) and NEXT.match(value) else "/"


def _private(resp: Response) -> Response:
    resp.headers["Cache-Control"] = http.PRIVATE
    return resp


@bp.get("/sign-in")
def sign_in_page():
    if not services().local_sign_in:
        return not_found("There is no such page.")
    nxt = safe_next(request.args.get("next"))
    edition = nxt.split("/")[2] if nxt.startswith("/e/") else None
    lang = lang_of(edition) if edition else "en"
    body = render("web/signin.html", lang=lang, title=None, next_url=nxt, edition=edition)
    resp = Response(body, content_type="text/html; charset=utf-8")
    resp.headers.update(SECURITY_HEADERS)
    return _private(resp)


def _cross_site() -> str | None:
    """Why the request is not from a page of this origin, or None."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return f"Sec-Fetch-Site {site!r}"
    origin = request.headers.get("Origin")
    if origin is not None and origin != request.host_url.rstrip("/"):
        return f"Origin {origin!r}"
    return None


@bp.post("/sign-in/token")
def sign_in_token():
    from serving.api.foryou import TooLarge, json_body

    if not services().local_sign_in:
        return http.problem(404, "not_found", "local sign-in is off on this origin", cache_control=http.PRIVATE)
    why = _cross_site()
    if why is not None:
        return http.problem(
            403, "forbidden", f"sign-in only from this origin's pages ({why})", cache_control=http.PRIVATE
        )
    if request.mimetype != "application/json":
        return http.problem(415, "unsupported_media_type", "send application/json", cache_control=http.PRIVATE)
    try:
        name = json_body().get("reader")
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError("reader must be 1 to 64 letters, digits, '.', '_' or '-'")
    except TooLarge as exc:
        return http.problem(413, "body_too_large", str(exc), cache_control=http.PRIVATE)
    except ValueError as exc:
        return http.problem(400, "invalid_body", str(exc), cache_control=http.PRIVATE)
    reader = f"local:{name}"
    token = auth.issue_token(services().token_secret, reader, ttl_s=TOKEN_TTL_S)
    resp = Response(orjson.dumps({"reader_id": reader, "token": token}), content_type=http.JSON)
    return _private(resp)
