"""The edge's stale policy, as Cloud CDN documents it (terraform/modules/origin/main.tf cites the pages): the
Terraform CDN policy and the origin's headers together keep the last good page at the edge for an hour when the
origin fails, and revalidate asynchronously otherwise.

Cloud CDN ignores ``stale-if-error`` and applies the backend's ``serve_while_stale`` only to responses without a
``stale-while-revalidate`` directive; in USE_ORIGIN_HEADERS mode the default/max/client TTLs are not used. So:

- every CDN backend: cache_mode USE_ORIGIN_HEADERS, serve_while_stale at least 3600 s, no TTL override;
- the origin's shared answers (pages, stories, topics, web pages, assets) carry no stale directive, an s-maxage
  (or, for content-versioned assets, ``public, max-age=31536000, immutable``);
- the nginx stand-in emulates the same policy (same seconds, no stale case of its own);
- a city page's 5 minutes (``NEWSROOM_LOCAL_S_MAXAGE``, serving/api/topics.py) reach the edge as the origin says them:
  no TTL override caps it in Terraform (max_ttl would be ignored anyway in USE_ORIGIN_HEADERS mode) and the
  stand-in neither replaces the origin's TTL (``proxy_cache_valid``, ``proxy_ignore_headers``) nor drops an
  entry unused for less than that (``inactive=``).

Each check raises AssertionError; the mutation tests apply it to edited copies of the real files.
"""

from __future__ import annotations

import re

import pytest

from devtools import local_origin
from stores import StoreConfig, open_stores
from tests.deploy.test_terraform import MODULES, REPO_ROOT, Module
from tests.serving.helpers import EDITION, STORY, make_app, publish_world

HOUR = 3600
LOCAL_TTL = 300  # the design's 5 minutes for local pages (serving/__init__.py NEWSROOM_LOCAL_S_MAXAGE)
CITY_URLS = (f"/v1/topics/place:new-york?edition={EDITION}", f"/e/{EDITION}/topics/place:new-york")
TTL_OVERRIDES = ("default_ttl", "max_ttl", "client_ttl")


def check_stale_policy(origin: Module) -> int:
    """The CDN backends' policy; returns their serve_while_stale (seconds)."""
    backends = {n: b for n, b in origin.of_type("google_compute_backend_service").items() if b.get("enable_cdn")}
    assert backends, "no backend service has Cloud CDN enabled"
    seconds = set()
    for name, backend in backends.items():
        policy = backend["cdn_policy"][0]
        assert policy.get("cache_mode") == "USE_ORIGIN_HEADERS", f"{name}: the origin's headers must decide caching"
        overrides = [k for k in TTL_OVERRIDES if k in policy]
        assert not overrides, f"{name}: {overrides} are ignored in USE_ORIGIN_HEADERS mode; do not pretend they apply"
        stale = origin.resolve(policy.get("serve_while_stale"))
        assert isinstance(stale, int) and stale >= HOUR, (
            f"{name}: serve_while_stale {stale!r} keeps the last good page less than an hour"
        )
        seconds.add(stale)
    assert len(seconds) == 1, f"CDN backends disagree on serve_while_stale: {sorted(seconds)}"
    return seconds.pop()


def check_origin_header(url: str, cache_control: str) -> None:
    """A shared answer's Cache-Control leaves the stale policy to the CDN (serving/http/conventions.py)."""
    directives = {d.strip().split("=", 1)[0].lower() for d in cache_control.split(",")}
    assert "stale-while-revalidate" not in directives, (
        f"{url}: stale-while-revalidate overrides Cloud CDN's serve_while_stale ({cache_control})"
    )
    assert "stale-if-error" not in directives, f"{url}: Cloud CDN ignores stale-if-error ({cache_control})"
    assert "public" in directives, f"{url}: a shared answer must be public ({cache_control})"
    if url.startswith("/assets/") and url.count("/") == 3:
        assert cache_control == "public, max-age=31536000, immutable", f"{url}: a versioned asset ({cache_control})"
    else:
        assert "s-maxage" in directives, f"{url}: a shared page needs its edge TTL ({cache_control})"


def check_stand_in(nginx_conf: str, stand_in_seconds: int, terraform_seconds: int) -> None:
    body = re.sub(r"#[^\n]*", "", nginx_conf)
    assert stand_in_seconds == terraform_seconds, (
        f"the stand-in serves stale {stand_in_seconds} s, Cloud CDN {terraform_seconds} s"
    )
    assert "proxy_cache_use_stale" not in body, (
        "proxy_cache_use_stale serves stale without bound: better than Cloud CDN"
    )
    policy = re.search(r"map \$upstream_http_cache_control \$cdn_cache_control \{(.*?)\}", body, re.S)
    assert policy, "the stand-in does not rewrite the origin's Cache-Control as Cloud CDN applies it"
    assert "stale-while-revalidate=@@SERVE_WHILE_STALE@@" in policy.group(1), "the policy's seconds are not used"
    assert "proxy_pass http://cdn_policy;" in body, "shared pages do not go through the stand-in's policy"


def check_stand_in_ttl(nginx_conf: str, ttl: int) -> None:
    """The stand-in keeps an answer as long as its own s-maxage says, here ``ttl`` s: no override, no earlier drop."""
    body = re.sub(r"#[^\n]*", "", nginx_conf)
    assert "proxy_cache_valid" not in body, "proxy_cache_valid replaces the origin's s-maxage (Cloud CDN keeps it)"
    ignored = re.findall(r"proxy_ignore_headers([^;]*);", body)
    assert not any(re.search(r"cache-control|expires", i, re.I) for i in ignored), f"ignores the TTL: {ignored}"
    inactive = re.search(r"proxy_cache_path[^;]*inactive=(\d+)([smhd]?)", body)
    assert inactive, "no inactive= on the cache: nginx drops entries unused for 10 minutes"
    seconds = int(inactive.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[inactive.group(2)]
    assert seconds >= ttl, f"inactive={seconds} s drops a {ttl} s page before it expires"


@pytest.fixture(scope="module")
def origin_headers(tmp_path_factory):
    """(url, Cache-Control) of every kind of shared answer, from the real app over a published world."""
    data = tmp_path_factory.mktemp("policy")
    stores = open_stores(StoreConfig(data_dir=str(data)))
    publish_world(stores)
    app = make_app(stores, None)
    client = app.test_client()
    urls = [
        f"/v1/editions/{EDITION}/sections/top",
        f"/v1/editions/{EDITION}/version",
        f"/v1/editions/{EDITION}",
        f"/v1/stories/{STORY}?edition={EDITION}",
        f"/e/{EDITION}/",
        f"/stories/{STORY}",
        "/assets/web.css",
        *CITY_URLS,
    ]
    html = client.get(f"/e/{EDITION}/").data.decode()
    urls += sorted(set(re.findall(r'href="(/assets/[^"]+)"', html)))
    out = []
    for url in urls:
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code)
        out.append((url, r.headers["Cache-Control"]))
    app.extensions["newsroom"].close()
    return out


def test_cdn_policy_keeps_the_last_good_page_an_hour_and_the_origin_leaves_it_to_the_cdn(origin_headers):
    seconds = check_stale_policy(Module.load(MODULES / "origin"))
    assert seconds == HOUR
    assert any(url.count("/") == 3 and url.startswith("/assets/") for url, _ in origin_headers)
    for url, cache_control in origin_headers:
        check_origin_header(url, cache_control)
    conf = (REPO_ROOT / "devtools" / "edge_nginx.conf").read_text()
    check_stand_in(conf, local_origin.SERVE_WHILE_STALE_S, seconds)


POLICY_MUTATIONS = {
    "a minute of stale": ("serve_while_stale = var.serve_while_stale_sec", "serve_while_stale = 60"),
    "force cache all": ('cache_mode        = "USE_ORIGIN_HEADERS"', 'cache_mode        = "FORCE_CACHE_ALL"'),
    "a TTL override that does nothing": ("request_coalescing = true", "request_coalescing = true\n    max_ttl = 3600"),
}


@pytest.mark.parametrize("mutation", list(POLICY_MUTATIONS))
def test_policy_check_fails_when_the_origin_module_is_broken(mutation):
    old, new = POLICY_MUTATIONS[mutation]
    with pytest.raises(AssertionError):
        check_stale_policy(Module.load(MODULES / "origin", edits={"main.tf": (old, new)}))


@pytest.mark.parametrize(
    "url, cache_control",
    [
        ("/v1/editions/us-en/sections/top", "public, s-maxage=60, stale-while-revalidate=60, stale-if-error=3600"),
        ("/v1/editions/us-en/sections/top", "public, s-maxage=60, stale-if-error=3600"),
        ("/e/us-en/", "public, max-age=60"),
        ("/assets/0123456789/web.css", "public, s-maxage=60"),
    ],
)
def test_header_check_fails_on_a_directive_that_defeats_the_policy(url, cache_control):
    with pytest.raises(AssertionError):
        check_origin_header(url, cache_control)


def test_stand_in_check_fails_when_nginx_is_better_than_cloud_cdn():
    conf = (REPO_ROOT / "devtools" / "edge_nginx.conf").read_text()
    with pytest.raises(AssertionError):
        check_stand_in(conf, 86400, HOUR)
    old = "            proxy_cache_background_update on;"
    assert old in conf
    broken = conf.replace(old, old + "\n            proxy_cache_use_stale error timeout http_502;")
    with pytest.raises(AssertionError):
        check_stand_in(broken, HOUR, HOUR)


def test_a_city_page_s_five_minutes_reach_the_edge_as_the_origin_says_them(origin_headers):
    headers = dict(origin_headers)
    for url in CITY_URLS:
        assert headers[url] == f"public, s-maxage={LOCAL_TTL}", url
    check_stale_policy(Module.load(MODULES / "origin"))  # no TTL override on any CDN backend
    check_stand_in_ttl((REPO_ROOT / "devtools" / "edge_nginx.conf").read_text(), LOCAL_TTL)


@pytest.mark.parametrize(
    "old, new",
    [
        ("proxy_cache_lock on;", "proxy_cache_lock on;\n            proxy_cache_valid 200 30s;"),
        ("proxy_cache_lock on;", "proxy_cache_lock on;\n            proxy_ignore_headers Cache-Control;"),
        ("inactive=2h", "inactive=1m"),
    ],
)
def test_stand_in_ttl_check_fails_when_nginx_caps_the_origin_s_ttl(old, new):
    conf = (REPO_ROOT / "devtools" / "edge_nginx.conf").read_text()
    assert old in conf
    with pytest.raises(AssertionError):
        check_stand_in_ttl(conf.replace(old, new), LOCAL_TTL)
