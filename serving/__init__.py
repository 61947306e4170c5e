"""The origin: a Flask app that serves shared pages from memory and the private For you feed.

Rooms, bottom to top (a room imports only the rooms below it; tests/test_layering.py holds the order):
:mod:`serving.http` (HTTP conventions, cursors, auth, shedding, telemetry), :mod:`serving.state` (the catalog, the
pointer watcher, the services accessor, secrets), :mod:`serving.personal` (For you's model: profiles, ranking,
clusters, feed pages), :mod:`serving.api` (the JSON blueprints), :mod:`serving.web` (the reader HTML pages),
:mod:`serving.worker` (gunicorn worker, fast path); this face, the app factory, stands on all of them.

``create_app(test_config=None)`` builds the app (flaskr-style factory). Resources are attached by :class:`Newsroom`
``.init_app(app)`` and live for the process (``app.extensions["newsroom"]``, read through
:func:`serving.state.context.services`): the catalog holder, the pointer watcher thread, the profile store and its cache, the
event folder thread, the load shedder, the token verifier. Blueprints, one per resource: editions, stories, topics,
foryou (feed, controls, events), health, openapi, and ``serving.api.push`` (WebSub callbacks and publisher pings).

Configuration: ``app.config`` keys ``NEWSROOM_*`` (see DEFAULTS and :data:`serving.api.push.PUSH_DEFAULTS`); each one in
:data:`ENV_SETTINGS` can also come from an environment variable of the same name (JSON-parsed when it parses:
``NEWSROOM_PAGE_S_MAXAGE=2``, ``NEWSROOM_PING_KEYS={"pub": "key"}``). ``test_config`` wins over both.

Secrets (:func:`resolve_secrets`): ``NEWSROOM_TOKEN_SECRET`` signs reader tokens, ``NEWSROOM_CURSOR_SECRET`` signs
cursors; every origin process behind the CDN needs the same two. Outside the embedded (local) backend the origin
refuses to start without both (unless ``TESTING``/``DEBUG``): a missing secret must not fall back to a value anyone
can read in the source. The embedded backend, when they are not given, creates random ones once in
``{data_dir}/secrets.json`` (mode 0600; the same file ``newsroom run`` uses), so every worker and restart of a local
origin agrees on them.
Stores: ``NEWSROOM_STORES`` (an object with ``.pointers`` and ``.snapshots``), ``NEWSROOM_PROFILE_STORE`` and
``NEWSROOM_COVISIT_STORE`` (co-visitation neighbours for For you; ``"off"``: none) and ``NEWSROOM_TAKEDOWN_STORE``
(tombstones the watcher filters loaded pages with, stores/takedowns.py; ``"off"``: none) may be given as objects
(tests); otherwise they are opened from the backend keys, like ``newsroom serve`` does.

Never: a Flask session (the session interface is a null one: nothing reads or writes a cookie), a Set-Cookie header
(asserted on every response), a store read on a shared request, with one exception: Full Coverage of an existing
story the origin no longer holds in memory is loaded from the snapshot store on demand (serving/state/watcher.py).
"""

from __future__ import annotations

import atexit
import importlib
import json
import logging
import os

from flask import Flask
from flask.sessions import SessionInterface
from werkzeug.exceptions import HTTPException

from serving.http import conventions as http
from serving.state.context import EXTENSION
from serving.state.secrets import SECRETS_FILE, ConfigError, local_secrets, resolve_secrets  # noqa: F401 (the face)

log = logging.getLogger("serving")

DEFAULTS = {
    # where the stores live (same meaning as pipelines/options.py StoreOptions)
    "NEWSROOM_BACKEND": "embedded",
    "NEWSROOM_DATA_DIR": ".newsroom",
    "NEWSROOM_PROJECT": None,
    "NEWSROOM_BIGTABLE_INSTANCE": "newsroom",
    "NEWSROOM_SNAPSHOT_BUCKET": None,
    "NEWSROOM_NAMESPACE": "",
    "NEWSROOM_BUS_KIND": "",  # "" or "pubsub" (stores.StoreConfig.bus)
    "NEWSROOM_STORES": None,
    "NEWSROOM_PROFILE_STORE": None,
    "NEWSROOM_COVISIT_STORE": None,
    "NEWSROOM_CLUSTER_STORE": None,  # stores.userclusters.UserClusterStore; None: opened like the stores ("off": none)
    "NEWSROOM_TAKEDOWN_STORE": None,
    "NEWSROOM_PUBLISH_READS": True,  # publish folded read events to the read-events topic (the co-visitation job)  # stores.covisit.CovisitStore; None: opened like the stores ("off": none)
    # pointer watcher
    "NEWSROOM_BACKGROUND": True,  # start the watcher and event-folder threads (tests drive them by hand)
    "NEWSROOM_WATCH_INTERVAL_S": 2.0,
    "NEWSROOM_STORY_GRACE_S": 600.0,
    # stories no page or pool references and not updated for this long leave memory; they are served on demand
    # from the snapshot store through an LRU of NEWSROOM_STORY_LRU entries (serving/state/watcher.py)
    "NEWSROOM_STORY_RETAIN_S": 48 * 3600.0,
    "NEWSROOM_STORY_LRU": 2000,
    "NEWSROOM_VALIDATE_PAGES": True,
    "NEWSROOM_FAST_PATH": True,  # serving/worker/fastpath.py in front of Flask for section pages and versions
    # shared cache headers
    "NEWSROOM_PAGE_S_MAXAGE": 60,
    "NEWSROOM_STORY_S_MAXAGE": 30,
    "NEWSROOM_TOPIC_S_MAXAGE": 30,  # topic pages: built on demand from the pool (serving/api/topics.py)
    # city pages (place:{city} of the edition's gazetteer): the design's 5 minutes, rendered at most once a minute
    "NEWSROOM_LOCAL_S_MAXAGE": 300,
    # top pages showing a Breaking story: a short TTL under the purge, which may take minutes (stores/cdn.py)
    "NEWSROOM_BREAKING_S_MAXAGE": 10,
    "NEWSROOM_RETRY_AFTER_S": 2,
    # the reader pages' script polls /v1/editions/{e}/version this often for the "new stories" pill (web.py)
    "NEWSROOM_VERSION_POLL_S": 60,
    # local sign-in page (serving/web/signin.py): "auto" = only with the generated local secrets, true, false
    "NEWSROOM_LOCAL_SIGN_IN": "auto",
    # local demo only (newsroom run sets it): the sample world's address; card links and images to its *.test
    # hosts are rewritten to {world}/world/{host}/{path} at render time. "" (production): publishers' real URLs
    "NEWSROOM_WORLD_URL": "",
    # secrets (set both in production; every origin process behind the CDN needs the same ones)
    "NEWSROOM_TOKEN_SECRET": None,
    "NEWSROOM_TOKEN_VERIFIER": None,
    "NEWSROOM_CURSOR_SECRET": None,
    # For you
    "NEWSROOM_PROFILE_TTL_S": 30.0,
    "NEWSROOM_FORYOU_MAX_INFLIGHT": 2,
    "NEWSROOM_FORYOU_MAX_WAITING": 2,
    "NEWSROOM_FORYOU_WAIT_S": 0.05,
    # the re-rank's time budget; past it the page is the recency fallback flagged "degraded" (serving/api/foryou.py)
    "NEWSROOM_FORYOU_BUDGET_MS": 50.0,
    # how long a For you cursor minted on a replaced pool version still reads exactly (serving/personal/feed.py)
    "NEWSROOM_FEED_CURSOR_GRACE_S": 900.0,
    # observability (serving/http/telemetry.py): metrics exporter none|gcp|memory ("" = gcp on Cloud Run, else none)
    "NEWSROOM_METRICS_EXPORTER": "",
    "NEWSROOM_METRICS_INTERVAL_S": 60.0,
    "NEWSROOM_EVENTS_FLUSH_S": 1.0,
    "NEWSROOM_EVENTS_BATCH": 500,
    "NEWSROOM_EVENTS_QUEUE_MAX": 10_000,
    # request limits (hostile clients): bodies above MAX_BODY_BYTES answer 413 before anything parses them
    "NEWSROOM_MAX_BODY_BYTES": 64 * 1024,
    "NEWSROOM_MAX_JSON_DEPTH": 16,
    # per-reader budget of private writes (events, controls), a token bucket held in the profile store so every
    # worker and instance shares it: RATE tokens a second, BURST at most; an exhausted bucket answers 429
    "NEWSROOM_READER_RATE": 5.0,
    "NEWSROOM_READER_BURST": 60,
}

# Settings whose values are objects (tests and embedding callers hand them in); never read from the environment.
OBJECT_SETTINGS = {
    "NEWSROOM_STORES",
    "NEWSROOM_PROFILE_STORE",
    "NEWSROOM_COVISIT_STORE",
    "NEWSROOM_CLUSTER_STORE",
    "NEWSROOM_TAKEDOWN_STORE",
    "NEWSROOM_TOKEN_VERIFIER",
}


class NoSessionInterface(SessionInterface):
    """Flask sessions are off: nothing opens a cookie, nothing can be written into one."""

    def open_session(self, app, request):
        return self.make_null_session(app)

    def save_session(self, app, session, response):
        return None


class Newsroom:
    """The origin's process-wide resources (init_app pattern)."""

    def __init__(self, app: Flask | None = None):
        if app is not None:
            self.init_app(app)

    def section_cache_control(self, page) -> str:
        """A section page's Cache-Control: the short Breaking TTL while a top page shows a Breaking story."""
        return self.breaking_cache_control if page.breaking else self.page_cache_control

    def init_app(self, app: Flask) -> None:
        from serving.api.topics import TopicPages
        from serving.http.auth import HmacTokenVerifier
        from serving.http.shedding import Shedder
        from serving.personal.feed import PoolHistory
        from serving.personal.readers import EventFolder, FoldSettings, ProfileCache
        from serving.state.catalog import CatalogHolder
        from serving.state.watcher import PointerWatcher, WatchSettings

        cfg = app.config
        self.app = app
        self.page_cache_control, self.story_cache_control, self.topic_cache_control = (
            http.shared_cache_control(cfg[f"NEWSROOM_{kind}_S_MAXAGE"]) for kind in ("PAGE", "STORY", "TOPIC")
        )
        self.breaking_cache_control = http.shared_cache_control(cfg["NEWSROOM_BREAKING_S_MAXAGE"])
        self.local_cache_control = http.shared_cache_control(cfg["NEWSROOM_LOCAL_S_MAXAGE"])
        from serving.api.editions import configured_pages, local_cities

        self.local_cities = local_cities()  # edition -> its region's gazetteer city codes (local pages)
        self.topic_pages = TopicPages(cities=self.local_cities)
        self.configured = configured_pages()  # editions (and sections) that exist before their first page is live
        token_secret, cursor_secret = resolve_secrets(cfg)
        from serving.web import signin

        self.token_secret = token_secret  # signs local sign-in tokens (serving/web/signin.py) when that is on
        self.local_sign_in = signin.enabled(cfg)
        self.version_poll_s = max(1, int(cfg["NEWSROOM_VERSION_POLL_S"]))
        self.verifier = cfg["NEWSROOM_TOKEN_VERIFIER"] or HmacTokenVerifier(token_secret)
        self.cursor_secret = cursor_secret.encode()

        stores = cfg["NEWSROOM_STORES"]
        profiles = cfg["NEWSROOM_PROFILE_STORE"]
        if stores is None or profiles is None:
            from stores import config_from_mapping, open_stores
            from stores.profiles import open_profile_store

            config = config_from_mapping(cfg)
            stores = stores or open_stores(config)
            profiles = profiles or open_profile_store(config)
        self.stores = stores
        self.profiles = profiles
        from serving.api.editions import PublisherLanguages

        self.publisher_languages = PublisherLanguages(stores)  # an edition of none says so (not "warming up")
        from stores.takedowns import open_takedown_store

        self.holder = CatalogHolder()
        self.watcher = PointerWatcher(
            self.holder,
            stores.pointers,
            stores.snapshots,
            WatchSettings.from_config(cfg),
            # tombstones: the watcher filters loaded pages at once (serving/state/watcher.py)
            takedowns=_side_store(cfg, stores, "NEWSROOM_TAKEDOWN_STORE", open_takedown_store),
        )
        self.profile_cache = ProfileCache(profiles, ttl_s=float(cfg["NEWSROOM_PROFILE_TTL_S"]))
        self.covisit_cache, self.cluster_cache = _collaborative_caches(cfg, stores)
        self.pool_history = PoolHistory(grace_s=float(cfg["NEWSROOM_FEED_CURSOR_GRACE_S"]))
        self.watcher.on_swap.append(self.pool_history.on_swap)
        self.rank_budget_s = float(cfg["NEWSROOM_FORYOU_BUDGET_MS"]) / 1000.0
        self.folder = EventFolder(
            profiles,
            self.holder,
            self.profile_cache,
            FoldSettings.from_config(cfg),
            bus=getattr(stores, "bus", None) if bool(cfg["NEWSROOM_PUBLISH_READS"]) else None,
        )
        self.shedder = Shedder(
            int(cfg["NEWSROOM_FORYOU_MAX_INFLIGHT"]),
            int(cfg["NEWSROOM_FORYOU_MAX_WAITING"]),
            float(cfg["NEWSROOM_FORYOU_WAIT_S"]),
        )
        self._started = False
        app.extensions[EXTENSION] = self
        from serving.http import telemetry

        self.metrics = telemetry.init_app(app, self)

    def start(self) -> None:
        """First load (synchronous, so a worker is ready when it starts taking requests), then the threads."""
        if self._started:
            return
        self._started = True
        try:
            self.watcher.poll_once()
        except Exception:
            log.exception("initial load failed; the watcher keeps trying")
        self.watcher.start()
        self.folder.start()
        atexit.register(self.close)

    def close(self) -> None:
        self.watcher.stop()
        self.folder.stop()
        self.metrics.shutdown()


def env_settings() -> list[str]:
    """Every NEWSROOM_* setting the origin reads from its environment (tests/security/test_secrets.py checks that
    each one README and Terraform document is here)."""
    from serving.api.push import PUSH_DEFAULTS

    keys = [k for k in (*DEFAULTS, *PUSH_DEFAULTS) if k not in OBJECT_SETTINGS | PUSH_OBJECT_SETTINGS]
    return keys + [k for k in EXTRA_ENV_SETTINGS if k not in keys]


# Read from the environment by other parts of the origin process: gunicorn.conf.py (workers, threads, header
# timeout) and the store stack's emulator tools (devtools/emulators.py).
EXTRA_ENV_SETTINGS = (
    "NEWSROOM_WORKERS",
    "NEWSROOM_THREADS",
    "NEWSROOM_HEADER_TIMEOUT_S",
    "NEWSROOM_WRITE_TIMEOUT_S",  # serving/worker/gworker.py, with the header timeout
    "NEWSROOM_LOG_FORMAT",  # serving/http/telemetry.py, when newsroom serve configures logging in each worker
    "NEWSROOM_JAVA",
    "NEWSROOM_PUBSUB_EMULATOR_JAR",
    "NEWSROOM_BIGTABLE_EMULATOR",
    "NEWSROOM_GCS_EMULATOR",
)
PUSH_OBJECT_SETTINGS = {"NEWSROOM_BUS", "WEBSUB_SUBSCRIPTIONS", "NEWSROOM_PUBLISHERS", "NEWSROOM_CLOCK"}


def _from_env(config) -> None:
    from serving.api.push import PUSH_DEFAULTS

    for key in (*DEFAULTS, *PUSH_DEFAULTS):
        if key in OBJECT_SETTINGS or key in PUSH_OBJECT_SETTINGS:
            continue
        raw = os.environ.get(key)
        if raw is None:
            continue
        try:
            config[key] = json.loads(raw)
        except ValueError:
            config[key] = raw


# Werkzeug's own errors (no route, wrong method, body over MAX_CONTENT_LENGTH, an unhandled exception) as problems.
HTTP_PROBLEM_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    429: "rate_limited",
}


def _http_problem(exc: HTTPException):
    status = exc.code or 500
    code = HTTP_PROBLEM_CODES.get(status) or ("bad_request" if status < 500 else "internal_error")
    detail = {404: "no such endpoint", 405: "method not allowed", 413: "request body too large"}.get(status)
    resp = http.problem(
        status,
        code,
        detail or exc.description or exc.name,
        # a 404 for an unknown URL is cached briefly, like a missing page; anything else never
        cache_control=http.NEGATIVE if status == 404 else http.NO_STORE,
    )
    if status == 405:
        resp.headers["Allow"] = ", ".join(sorted(getattr(exc, "valid_methods", None) or []))
    return resp


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    app.config["SECRET_KEY"] = None
    app.config["JSON_SORT_KEYS"] = False
    _from_env(app.config)
    if test_config:
        app.config.update(test_config)
    # Werkzeug answers 413 when a body is longer than this, before any handler parses it (also for chunked bodies,
    # which it cuts at the limit). The push endpoints read at most NEWSROOM_PUSH_MAX_BYTES of their own.
    from serving.api.push import PUSH_DEFAULTS

    app.config["MAX_CONTENT_LENGTH"] = max(
        int(app.config["NEWSROOM_MAX_BODY_BYTES"]),
        int(app.config.get("NEWSROOM_PUSH_MAX_BYTES") or PUSH_DEFAULTS["NEWSROOM_PUSH_MAX_BYTES"]),
    )
    app.session_interface = NoSessionInterface()
    app.url_map.strict_slashes = False

    ext = Newsroom(app)

    from serving.api import editions, foryou, health, openapi, push, stories, storylines, topics
    from serving.web import foryou_cards, opml, signin
    from serving.web import pages as web

    app.register_blueprint(editions.bp)
    app.register_blueprint(stories.bp)
    app.register_blueprint(topics.bp)  # topic pages: shared like /v1/stories
    app.register_blueprint(storylines.bp)  # storyline pages: shared like /v1/stories, loaded on demand
    app.register_blueprint(foryou.bp)
    app.register_blueprint(health.bp)
    app.register_blueprint(openapi.bp)
    importlib.import_module("serving.web.storylines")  # its route joins web.bp before registration
    importlib.import_module("serving.web.feed_routes")  # the RSS and Atom routes join web.bp too
    importlib.import_module("serving.web.about")  # the crawler page the ingest User-Agent names
    app.register_blueprint(web.bp)  # reader HTML pages (serving/web/pages.py), shared like the JSON ones
    app.register_blueprint(signin.bp)  # local sign-in (private pages; only on a local stack)
    app.register_blueprint(opml.bp)  # GET /v1/me/follows.opml: the reader's follows as feeds (private)
    app.register_blueprint(foryou_cards.bp)  # GET /v1/feed/for-you/cards: For you as the edition's cards (private)
    push.init_app(app)  # WebSub callbacks and publisher pings
    app.register_blueprint(push.bp)

    @app.after_request
    def _never_set_cookie(resp):
        # No response may be sniffed into another type (a JSON error echoing input must never run as HTML).
        resp.headers["X-Content-Type-Options"] = "nosniff"
        if "Set-Cookie" in resp.headers:
            log.error("a response tried to set a cookie; removed (the origin never sets cookies)")
            del resp.headers["Set-Cookie"]
            if app.testing:
                raise AssertionError("Set-Cookie on an origin response")
        return resp

    app.after_request(http.tag_shared)  # Cache-Tag on shared answers: purges by tag (stores/cdn.py)
    app.register_error_handler(HTTPException, _http_problem)

    if app.config["NEWSROOM_FAST_PATH"]:
        from serving.worker.fastpath import FastSharedPages

        app.wsgi_app = FastSharedPages(app.wsgi_app, ext)
    if app.config["NEWSROOM_BACKGROUND"]:
        ext.start()
        # Topic chips and titles name places through the gazetteer (~2 CPU s to build). It is built here, before the
        # worker takes its first connection, not in a thread beside it: built beside, it held the interpreter while
        # /readyz already said 200, so a started origin answered its first seconds of traffic several times slower
        # (benchmarks/serve_bench.py: 1,547 against ~9,000 pages a second warm) and no reader's request pays it.
        from transforms.articles.places import gazetteer

        gazetteer()
    return app


def _collaborative_caches(cfg, stores):
    """For you's collaborative sources: the co-visitation and the user-cluster caches (each None when "off")."""
    from serving.personal.clusters import ClusterCache
    from serving.personal.readers import CovisitCache
    from stores.covisit import open_covisit_store
    from stores.userclusters import open_user_cluster_store

    ttl_s = float(cfg["NEWSROOM_PROFILE_TTL_S"])
    covisit = _side_store(cfg, stores, "NEWSROOM_COVISIT_STORE", open_covisit_store)
    clusters = _side_store(cfg, stores, "NEWSROOM_CLUSTER_STORE", open_user_cluster_store)
    return (
        None if covisit is None else CovisitCache(covisit, ttl_s=ttl_s),
        None if clusters is None else ClusterCache(clusters, ttl_s=ttl_s),
    )


def _side_store(cfg, stores, key: str, open_store):
    """The store ``cfg[key]`` names: an object given by the caller (tests), None for "off", else the one
    ``open_store`` opens on the stores' config."""
    found = cfg[key]
    if found is None:
        from stores import config_from_mapping

        found = open_store(getattr(stores, "config", None) or config_from_mapping(cfg))
    return None if found == "off" else found
