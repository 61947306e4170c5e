"""A first run as a reader meets it: the URL ``newsroom run`` prints answers from the origin's first second, every
configured edition warms up instead of answering 404 (which the CDN would keep), and the API says "not live yet"
honestly (503 warming_up, never cached) until the edition's first page is live."""

from __future__ import annotations

import threading
import time
import types
import urllib.error
import urllib.request

import orjson

from devtools import samples
from tests.serving.helpers import EDITION, make_app, publish

WARMING = "public, max-age=0, s-maxage=5"


def _warming(r, edition: str) -> None:
    assert r.status_code == 200, (r.status_code, r.request.path)
    assert r.headers["Cache-Control"] == WARMING
    html = r.data.decode()
    assert f'data-warming="{edition}"' in html and '<meta http-equiv="refresh"' in html
    assert 'class="story"' not in html


def _not_live(r) -> None:
    assert r.status_code == 503 and r.headers["Cache-Control"] == "no-store" and r.headers["Retry-After"]
    doc = orjson.loads(r.data)
    assert doc["code"] == "warming_up" and r.headers["Content-Type"] == "application/problem+json"


def test_configured_editions_warm_up_until_their_first_page_is_live(stores, profiles):
    app = make_app(stores, profiles)  # nothing published yet
    c = app.test_client()
    try:
        r = c.get("/")
        assert r.status_code == 302 and r.headers["Location"] == f"/e/{EDITION}/"
        for edition in (EDITION, "es-es", "de-de", "fr-fr"):
            _warming(c.get(f"/e/{edition}/"), edition)
        assert 'lang="es-ES"' in c.get("/e/es-es/").data.decode()
        assert "Preparando" in c.get("/e/es-es/").data.decode()  # in the edition's language
        for url in (
            f"/v1/editions/{EDITION}/sections/top",
            f"/v1/editions/{EDITION}/version",
            f"/v1/editions/{EDITION}",
        ):
            _not_live(c.get(url))
        _not_live(c.get(f"/v1/topics/topic:world?edition={EDITION}"))
        # Another edition goes live first: the catalog is ready, us-en still is not (on main: a 404 cached 10 s).
        publish(stores, samples.edition_page("gb-en", "top", 1, n_stories=5))
        app.extensions["newsroom"].watcher.poll_once()
        _warming(c.get(f"/e/{EDITION}/"), EDITION)
        _warming(c.get(f"/e/{EDITION}/world"), EDITION)  # a configured section
        _not_live(c.get(f"/v1/editions/{EDITION}/sections/top"))
        _not_live(c.get(f"/v1/editions/{EDITION}/version"))
        assert c.get(f"/e/{EDITION}/for-you").status_code == 200
        # What is not configured is still a (briefly cached) 404.
        for url in ("/e/xx-yy/", f"/e/{EDITION}/nope"):
            assert c.get(url).status_code == 404, url
        assert c.get(f"/v1/editions/{EDITION}/sections/nope").status_code == 404
        assert c.get("/v1/editions/xx-yy/sections/top").status_code == 404
        # Live: the real page, shared as usual.
        publish(stores, samples.edition_page(EDITION, "top", 1, n_stories=5))
        app.extensions["newsroom"].watcher.poll_once()
        r = c.get(f"/e/{EDITION}/")
        assert r.status_code == 200 and 'class="story"' in r.data.decode() and "refresh" not in r.data.decode()
        assert c.get(f"/v1/editions/{EDITION}/sections/top").status_code == 200
        # A live edition whose other sections are not live yet: they warm up and link what is live.
        r = c.get(f"/e/{EDITION}/science")
        _warming(r, EDITION)
        assert f'href="/e/{EDITION}/"' in r.data.decode()
    finally:
        app.extensions["newsroom"].close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_printed_url_never_answers_404_or_503_through_start_up(tmp_path):
    """The origin as ``newsroom run`` starts it (devtools/run.py), over empty stores; the URL it prints is polled
    from the moment the origin listens while another edition and then us-en go live."""
    from devtools import run
    from stores import StoreConfig, open_stores

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path / "data"))
    stores = open_stores(config)
    cleanups, said = [], []
    args = types.SimpleNamespace(port=0, progress_s=10)
    origin = run._start_origin(args, config, types.SimpleNamespace(project="local"), {}, cleanups, said.append)
    try:
        run._say_where_to_look(args, origin, tmp_path, said.append)
        url = next(line.split()[0] for line in said if "/e/us-en/" in line)
        seen: list[int] = []
        live = threading.Event()

        def poll() -> None:
            deadline = time.monotonic() + 120
            while not live.is_set() and time.monotonic() < deadline:
                status, html = _get(url)
                seen.append(status)
                if status == 200 and 'class="story"' in html:
                    live.set()
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        while len(seen) < 3:
            time.sleep(0.05)
        publish(stores, samples.edition_page("gb-en", "top", 1, n_stories=5))
        n = len(seen)
        while len(seen) < n + 40:  # the watcher polls every second: gb-en loads meanwhile
            time.sleep(0.05)
        publish(stores, samples.edition_page(EDITION, "top", 1, n_stories=5))
        poller.join()
        assert live.is_set(), seen[-5:]
        assert set(seen) == {200}, sorted(set(seen))
    finally:
        while cleanups:
            cleanups.pop()()
