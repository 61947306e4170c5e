"""The address guard: no connection into loopback, link-local, private or reserved space, on the first URL or on any
redirect hop; the vetted address is the one connected to."""

from __future__ import annotations

import pytest

from tests.transforms.ingest.conftest import fake_resolver
from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard, BlockedAddress, forbidden_reason, parse_overrides


@pytest.mark.parametrize(
    "ip, reason",
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("169.254.169.254", "link_local"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not_global"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link_local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link_local"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:0a00:0001::1", "private"),  # 6to4 wrapping 10.0.0.1
    ],
)
def test_forbidden_addresses(ip, reason):
    assert forbidden_reason(ip) == reason


@pytest.mark.parametrize("ip", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(ip):
    assert forbidden_reason(ip) is None


def test_guard_resolves_once_and_refuses_mixed_answers():
    calls = []

    def resolver(host, port):
        calls.append(host)
        return fake_resolver(host, port)

    guard = AddressGuard(resolver=resolver)
    assert guard.resolve("public.test", 80).ip == "93.184.216.34"
    with pytest.raises(BlockedAddress, match="10.0.0.1"):
        guard.resolve("sneaky.test", 80)  # one public, one private answer: refused
    with pytest.raises(BlockedAddress, match="loopback"):
        guard.resolve("mapped.test", 80)
    with pytest.raises(BlockedAddress) as exc:
        guard.resolve("nowhere.test", 80)
    assert exc.value.reason == "dns_error"
    assert calls == ["public.test", "sneaky.test", "mapped.test", "nowhere.test"]


def test_overrides_are_the_only_way_in():
    guard = AddressGuard({"dailyherald.test": "127.0.0.1:8123"}, resolver=fake_resolver)
    t = guard.resolve("DailyHerald.test.", 80)
    assert (t.ip, t.port, t.overridden) == ("127.0.0.1", 8123, True)
    with pytest.raises(BlockedAddress):
        guard.resolve("localhost", 80)
    with pytest.raises(ValueError):
        parse_overrides("dailyherald.test=not-an-ip")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://metadata.test/",
        "http://intranet.test/",
        "http://localhost:8080/",
        "http://[::ffff:10.0.0.1]/",
    ],
)
def test_fetcher_blocks_before_connecting(url, no_foreign_connections):
    f = Fetcher(FetcherConfig(min_host_delay_s=0), AddressGuard(resolver=fake_resolver))
    res = f.fetch(url)
    assert res.error == "blocked_address"
    assert no_foreign_connections == []  # nothing was even attempted
    assert f.requests_sent == 0


@pytest.mark.parametrize(
    "path", ["/to-metadata", "/to-private", "/to-loopback-literal", "/to-metadata-name", "/to-mapped"]
)
def test_redirect_into_forbidden_space_is_blocked(redirector, path, no_foreign_connections):
    f = Fetcher(
        FetcherConfig(min_host_delay_s=0), AddressGuard({"redirector.test": redirector}, resolver=fake_resolver)
    )
    res = f.fetch(f"http://redirector.test{path}")
    assert res.error == "blocked_address", res
    assert res.redirects == 1
    # Only the allowed loopback server (robots.txt and the redirecting page) was contacted.
    assert set(no_foreign_connections) == {"127.0.0.1"}
    assert f.requests_sent == 2


def test_redirect_loop_is_bounded(redirector):
    f = Fetcher(FetcherConfig(min_host_delay_s=0, max_redirects=3), AddressGuard({"redirector.test": redirector}))
    res = f.fetch("http://redirector.test/loop")
    assert res.error == "too_many_redirects"
    assert f.requests_sent == 1 + 4  # robots.txt + 4 hops


def test_non_http_schemes_refused():
    f = Fetcher(FetcherConfig(min_host_delay_s=0), AddressGuard(resolver=fake_resolver))
    for url in ("file:///etc/passwd", "ftp://public.test/x", "gopher://public.test/"):
        assert f.fetch(url).error == "bad_scheme"
