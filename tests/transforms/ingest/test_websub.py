"""WebSub and ping signatures, lease renewal timing."""

from __future__ import annotations

from transforms.ingest import websub

HOUR = 3600 * 1000


def test_sign_and_verify_constant_time_hmac():
    body = b"<rss>...</rss>"
    header = websub.sign("secret", body)
    assert header.startswith("sha256=") and websub.verify("secret", body, header)
    assert websub.verify("secret", body, header.upper().replace("SHA256", "sha256"))  # hex case does not matter
    assert not websub.verify("other", body, header)
    assert not websub.verify("secret", body + b" ", header)
    assert not websub.verify("secret", body, None) and not websub.verify(None, body, header)
    assert not websub.verify("secret", body, websub.sign("secret", body, "sha1"))  # too weak to trust
    assert websub.verify("secret", body, websub.sign("secret", body, "sha512"))


def test_leases_are_renewed_well_before_expiry():
    day = 24 * HOUR
    assert websub.needs_renewal(None, None, 0)
    assert not websub.needs_renewal(day, 86400, 0)  # fresh lease
    assert not websub.needs_renewal(day, 86400, day - 9 * HOUR)
    assert websub.needs_renewal(day, 86400, day - 7 * HOUR)  # under a third left: renew now, hours ahead
    assert websub.needs_renewal(2 * HOUR, 7200, HOUR + 1)  # short leases: at least an hour ahead


def test_subscription_ids_are_stable_and_callbacks_carry_them():
    a = websub.subscription_id("http://t.test/feed", "http://hub.test/")
    assert a == websub.subscription_id("http://t.test/feed", "http://hub.test/") and len(a) == 24
    assert websub.callback_url("https://origin.test/", a) == f"https://origin.test/v1/websub/{a}"
    assert websub.new_secret() != websub.new_secret()
