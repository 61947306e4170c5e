"""WebSub callbacks and publisher pings (serving/api/push.py) through the real origin app (serving.create_app)."""

from __future__ import annotations

import json

import pytest

from schemas import codec
from stores import StoreConfig, open_stores
from stores.feeds import open_feed_store
from stores.profiles import open_profile_store
from tests.serving.helpers import make_app
from transforms.ingest import websub

FEED = "http://wirepress.test/feeds/world.xml"
HUB = "http://wirepress.test/websub/hub"
PING_FEED = "http://agenciasur.test/rss/ultima-hora.xml"
T0 = 1_780_000_000_000


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


@pytest.fixture
def env(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(cfg)
    feeds = open_feed_store(cfg)
    clock = Clock()
    stores.bus.ensure_subscription("fetch-requests", "test-requests")
    stores.bus.ensure_subscription("dead-letter-push", "test-dead")
    app = make_app(
        stores,
        open_profile_store(cfg),
        WEBSUB_SUBSCRIPTIONS=feeds,
        NEWSROOM_PING_KEYS={"agencia-sur": "agencia-key"},
        NEWSROOM_CLOCK=clock,
    )
    sub_id = websub.subscription_id(FEED, HUB)
    feeds.put_subscription(
        {
            "sub_id": sub_id,
            "feed_url": FEED,
            "topic": FEED,
            "hub": HUB,
            "secret": "s3cret",
            "callback": websub.callback_url("http://origin.test", sub_id, "s3cret"),
            "state": "pending",
            "requested_at": T0,
            "lease_seconds": 3600,
        }
    )

    class Env:
        pass

    e = Env()
    e.app, e.client, e.bus, e.feeds, e.clock, e.sub_id = app, app.test_client(), stores.bus, feeds, clock, sub_id
    e.path = f"{sub_id}.{websub.callback_token('s3cret', sub_id)}"  # the callback path the hub was given
    yield e
    app.extensions["newsroom"].close()


def requests(env):
    msgs = env.bus.pull("test-requests", 100, timeout=0.05)
    env.bus.ack("test-requests", [m.ack_id for m in msgs])
    return [env.bus.decode("fetch-requests", m) for m in msgs]


def dead(env):
    msgs = env.bus.pull("test-dead", 100, timeout=0.05)
    env.bus.ack("test-dead", [m.ack_id for m in msgs])
    return [codec.decode("DeadLetter", m.data) for m in msgs]


def verify(env, topic=FEED, sub_id=None, mode="subscribe", challenge="ch4llenge"):
    return env.client.get(
        f"/v1/websub/{sub_id or env.path}",
        query_string={"hub.mode": mode, "hub.topic": topic, "hub.challenge": challenge, "hub.lease_seconds": "7200"},
    )


def test_blueprint_is_registered_by_create_app(env):
    rules = {r.rule for r in env.app.url_map.iter_rules()}
    assert {"/v1/websub/<sub_id>", "/v1/ping"} <= rules


def test_challenge_echoed_only_for_subscriptions_we_asked_for(env):
    assert verify(env, sub_id="0" * 24).status_code == 404  # never asked
    assert verify(env, topic="http://evil.test/feed").status_code == 404  # asked, but for another topic
    assert requests(env) == []
    r = verify(env)
    assert r.status_code == 200 and r.get_data(as_text=True) == "ch4llenge" and r.mimetype == "text/plain"
    sub = env.feeds.get_subscription(env.sub_id)
    assert sub["state"] == "active" and sub["lease_expires_ms"] == T0 + 7200 * 1000
    (lease,) = requests(env)
    assert (lease["kind"], lease["reason"], lease["feed_url"], lease["expires_at"]) == (
        "PUSH",
        "websub_lease",
        FEED,
        T0 + 7_200_000,
    )
    # An unsubscribe we did not ask for is not confirmed.
    assert verify(env, mode="unsubscribe").status_code == 404


def signed(body: bytes, secret: str = "s3cret") -> dict:
    return {websub.SIGNATURE_HEADER: websub.sign(secret, body), "Content-Type": "application/rss+xml"}


def test_valid_delivery_becomes_a_fetch_request_not_an_article(env):
    verify(env)
    requests(env)
    body = b"<rss><channel><item><link>http://wirepress.test/news/x</link></item></channel></rss>"
    r = env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body))
    assert r.status_code == 202
    (req,) = requests(env)
    assert (req["kind"], req["feed_url"], req["url"]) == ("PUSH", FEED, None)  # the feed is polled, content ignored


@pytest.mark.parametrize(
    "headers, reason",
    [
        ({}, "missing_signature"),
        ({websub.SIGNATURE_HEADER: "sha256=" + "0" * 64}, "bad_signature"),
        ({websub.SIGNATURE_HEADER: websub.sign("wrong-secret", b"<rss/>")}, "bad_signature"),
        ({websub.SIGNATURE_HEADER: websub.sign("s3cret", b"<rss>other body</rss>")}, "bad_signature"),
        ({websub.SIGNATURE_HEADER: websub.sign("s3cret", b"<rss/>", "sha1")}, "bad_signature"),
        ({websub.SIGNATURE_HEADER: "garbage"}, "bad_signature"),
    ],
)
def test_forged_or_missing_signature_is_rejected_and_nothing_is_fetched(env, headers, reason):
    verify(env)
    requests(env)
    r = env.client.post(f"/v1/websub/{env.path}", data=b"<rss/>", headers=headers)
    assert r.status_code == 403
    assert requests(env) == []  # no fetch request: nothing will be fetched
    (dl,) = dead(env)
    assert dl["reason"] == reason and dl["stage"] == "push" and dl["payload"] == b""  # the body is not kept


def test_delivery_to_an_unverified_subscription_is_rejected(env):
    body = b"<rss/>"
    assert env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body)).status_code == 404
    assert requests(env) == []


def test_oversized_delivery_is_refused(env):
    verify(env)
    requests(env)
    env.app.config["NEWSROOM_PUSH_MAX_BYTES"] = 100
    body = b"x" * 101
    assert env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body)).status_code == 413
    assert requests(env) == []


def ping(env, publisher="agencia-sur", key="agencia-key", feed=PING_FEED, at=None, sign=True):
    body = json.dumps({"feed_url": feed, "at": env.clock.now if at is None else at}).encode()
    headers = {websub.PING_PUBLISHER_HEADER: publisher, "Content-Type": "application/json"}
    if sign:
        headers[websub.PING_SIGNATURE_HEADER] = websub.sign(key, body)
    return env.client.post("/v1/ping", data=body, headers=headers)


def test_authenticated_ping_triggers_one_poll_per_30_seconds(env):
    r = ping(env)
    assert r.status_code == 202 and r.get_json() == {"triggered": True}
    (req,) = requests(env)
    assert (req["kind"], req["feed_url"], req["publisher_id"]) == ("PING", PING_FEED, "agencia-sur")
    for dt in (1_000, 15_000, 29_999):
        env.clock.now = T0 + dt
        r = ping(env)
        assert r.status_code == 429 and r.get_json()["triggered"] is False and int(r.headers["Retry-After"]) >= 1
    assert requests(env) == []  # pings beyond one per 30 s trigger nothing more
    env.clock.now = T0 + 30_000
    assert ping(env).status_code == 202
    assert len(requests(env)) == 1


@pytest.mark.parametrize(
    "kwargs, status, reason",
    [
        ({"sign": False}, 401, "missing_signature"),
        ({"key": "guessed"}, 403, "bad_signature"),
        ({"publisher": "daily-herald", "key": "agencia-key"}, 403, "bad_signature"),  # no key for that publisher
        ({"feed": "http://dailyherald.test/rss.xml"}, 403, "foreign_feed"),
        ({"at": T0 - 10 * 60_000}, 400, "stale_ping"),
    ],
)
def test_bad_pings_trigger_nothing(env, kwargs, status, reason):
    r = ping(env, **kwargs)
    assert r.status_code == status
    assert requests(env) == []
    assert [d["reason"] for d in dead(env)] == [reason]
