"""WebSub: a verification is accepted only on the unguessable callback of a subscription this
system requested and that is pending; leases are clamped; deliveries for unknown, unauthenticated or expired
subscriptions store nothing (no body in the dead-letter topic). Through the real origin app and embedded bus."""

from __future__ import annotations

import pytest

from schemas import codec
from stores import StoreConfig, open_stores
from stores.feeds import open_feed_store
from stores.profiles import open_profile_store
from tests.serving.helpers import make_app
from transforms.ingest import poller, websub

FEED = "http://wirepress.test/feeds/world.xml"
HUB = "http://wirepress.test/websub/hub"
T0 = 1_780_000_000_000
SECRET = "9f" * 32


class Clock:
    now = T0

    def __call__(self):
        return self.now


@pytest.fixture
def env(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(cfg)
    feeds = open_feed_store(cfg)
    stores.bus.ensure_subscription("fetch-requests", "t-requests")
    stores.bus.ensure_subscription("dead-letter-push", "t-dead")
    clock = Clock()
    app = make_app(stores, open_profile_store(cfg), WEBSUB_SUBSCRIPTIONS=feeds, NEWSROOM_CLOCK=clock)
    sub_id = websub.subscription_id(FEED, HUB)  # derivable by anyone from the feed's public links
    feeds.put_subscription(
        {
            "sub_id": sub_id,
            "feed_url": FEED,
            "topic": FEED,
            "hub": HUB,
            "secret": SECRET,
            "callback": websub.callback_url("http://origin.test", sub_id, SECRET),
            "state": "pending",
            "requested_at": T0,
            "lease_seconds": 3600,
        }
    )

    class E:
        pass

    e = E()
    e.app, e.client, e.bus, e.feeds, e.clock, e.sub_id = app, app.test_client(), stores.bus, feeds, clock, sub_id
    e.path = f"{sub_id}.{websub.callback_token(SECRET, sub_id)}"
    yield e
    app.extensions["newsroom"].close()


def drain(env, sub, topic):
    msgs = env.bus.pull(sub, 1000, timeout=0.05)
    env.bus.ack(sub, [m.ack_id for m in msgs])
    return [env.bus.decode(topic, m) if topic == "fetch-requests" else codec.decode("DeadLetter", m.data) for m in msgs]


def verify(env, path, mode="subscribe", lease="7200", challenge="c-123"):
    q = {"hub.mode": mode, "hub.topic": FEED, "hub.challenge": challenge, "hub.lease_seconds": lease}
    return env.client.get(f"/v1/websub/{path}", query_string=q)


def signed(body: bytes) -> dict:
    return {websub.SIGNATURE_HEADER: websub.sign(SECRET, body)}


def test_a_forged_denial_on_the_derivable_callback_changes_nothing(env):
    # The probe: one GET with hub.mode=denied on the callback id derivable from the feed's links.
    assert verify(env, env.sub_id, mode="denied").status_code == 404
    assert verify(env, env.sub_id).status_code == 404  # nor can anyone activate it, or echo a challenge
    assert env.feeds.get_subscription(env.sub_id)["state"] == "pending"
    wrong = f"{env.sub_id}.{'0' * websub.CALLBACK_TOKEN_CHARS}"
    assert verify(env, wrong).status_code == 404
    # The real hub, on the callback it was given, verifies; correctly signed deliveries are then accepted.
    r = verify(env, env.path)
    assert r.status_code == 200 and r.get_data(as_text=True) == "c-123"
    drain(env, "t-requests", "fetch-requests")
    body = b"<rss/>"
    assert env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body)).status_code == 202
    assert [r["reason"] for r in drain(env, "t-requests", "fetch-requests")] == ["websub"]


def test_verification_only_while_pending(env):
    assert verify(env, env.path).status_code == 200
    # Active and no renewal requested: a replayed or forged verification cannot move the lease.
    assert verify(env, env.path, lease="99999999").status_code == 404
    assert verify(env, env.path, mode="denied").status_code == 404
    sub = env.feeds.get_subscription(env.sub_id)
    assert sub["state"] == "active" and sub["lease_seconds"] == 7200


@pytest.mark.parametrize(
    "lease, expected",
    [
        ("100000000000000000000", websub.MAX_LEASE_S),  # a 500 on main
        ("1e20", websub.MAX_LEASE_S),
        ("315360000", websub.MAX_LEASE_S),  # 10 years
        ("-5", websub.MIN_LEASE_S),
        ("0", websub.MIN_LEASE_S),
        ("nan", websub.DEFAULT_LEASE_S),
        ("soon", websub.DEFAULT_LEASE_S),
        ("7200", 7200),
    ],
)
def test_leases_are_clamped(env, lease, expected):
    r = verify(env, env.path, lease=lease)
    assert r.status_code == 200
    sub = env.feeds.get_subscription(env.sub_id)
    assert sub["lease_seconds"] == expected and sub["lease_expires_ms"] == T0 + expected * 1000
    (req,) = drain(env, "t-requests", "fetch-requests")
    assert req["expires_at"] == sub["lease_expires_ms"]


def test_unauthenticated_posts_store_nothing(env):
    verify(env, env.path)
    drain(env, "t-requests", "fetch-requests")
    junk = b"x" * 65536
    paths = [env.sub_id, f"{env.sub_id}.{'a' * 32}", "0" * 24, env.path]
    statuses = []
    for i in range(100):
        statuses.append(env.client.post(f"/v1/websub/{paths[i % 4]}", data=junk).status_code)
    assert set(statuses) == {404, 403}
    dead = drain(env, "t-dead", "dead-letter-push")
    # Only the right callback path with a missing signature leaves a trace, and that trace holds no body.
    assert len(dead) == 25 and sum(len(d["payload"] or b"") for d in dead) == 0
    assert all(len(codec.encode("DeadLetter", d)) < 512 for d in dead)
    assert drain(env, "t-requests", "fetch-requests") == []


def test_deliveries_for_unknown_or_expired_subscriptions_are_dropped(env):
    body = b"<rss/>"
    # pending (never verified): dropped
    assert env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body)).status_code == 404
    verify(env, env.path, lease="3600")
    drain(env, "t-requests", "fetch-requests")
    env.clock.now = T0 + 3600 * 1000 + 1  # the lease has lapsed
    assert env.client.post(f"/v1/websub/{env.path}", data=body, headers=signed(body)).status_code == 404
    assert drain(env, "t-requests", "fetch-requests") == []
    assert drain(env, "t-dead", "dead-letter-push") == []


def test_the_ingest_job_gives_hubs_the_unguessable_callback(env):
    class HubFetcher:
        def __init__(self):
            self.forms = []

        def fetch(self, url, **kw):
            self.forms.append(kw["body"])

            class R:
                status, error = 202, None

            return R()

    f = HubFetcher()
    action = type(
        "A", (), {"topic": "http://x.test/feed.xml", "hub": "http://x.test/hub", "feed_url": "http://x.test/feed.xml"}
    )
    sub = poller.subscribe(f, env.feeds, action, "http://origin.test", T0)
    assert sub["callback"].endswith(f"/v1/websub/{sub['sub_id']}.{websub.callback_token(sub['secret'], sub['sub_id'])}")
    assert websub.split_callback(sub["callback"].rsplit("/", 1)[1])[1]
    r = env.client.get(
        "/v1/websub/" + sub["callback"].rsplit("/", 1)[1],
        query_string={"hub.mode": "subscribe", "hub.topic": action.topic, "hub.challenge": "ok"},
    )
    assert r.status_code == 200 and r.get_data(as_text=True) == "ok"
