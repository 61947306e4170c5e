"""Address guard: the fetcher never connects to loopback, link-local, private, reserved, multicast or unspecified
addresses (IPv4 and IPv6, IPv4-mapped IPv6 included), except hosts an operator explicitly maps.

Reads nothing but its constructor arguments; performs DNS resolution itself (``socket.getaddrinfo`` unless a
resolver is injected) so that the address it vets is the address the fetcher connects to: no second resolution,
no time-of-check/time-of-use gap (DNS rebinding).

Operator overrides (``--host_overrides dailyherald.test=127.0.0.1:8123``) are the *only* way into non-public space:
they map a host name to a fixed address and port without DNS (the sample world runs on 127.0.0.1; its publisher
hosts are never put in /etc/hosts). The allowlist (``--allow_hosts 127.0.0.1:8765,feeds.lan:8080``) is the other
way, for feeds served on this machine or a private network: a listed host (and port, when one is given) is
resolved as usual and may then be a private address; every other host and port stays guarded, and nothing is
allowed unless it is listed. If a name resolves to several addresses and any one of them is forbidden, the
host is refused: a publisher has no business mixing public and internal addresses.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass


class BlockedAddress(Exception):
    """The URL's host resolves to an address we refuse to connect to (reason: blocked_address / dns_error)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def forbidden_reason(ip: str) -> str | None:
    """Why ``ip`` must not be contacted, or None if it is a public unicast address."""
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return "not_an_ip"
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return forbidden_reason(str(addr.ipv4_mapped))
        if addr.sixtofour is not None:
            inner = forbidden_reason(str(addr.sixtofour))
            if inner:
                return inner
    for name in ("is_loopback", "is_link_local", "is_unspecified", "is_multicast", "is_reserved", "is_private"):
        if getattr(addr, name):
            return name[3:]
    if not addr.is_global:  # shared address space (100.64/10), benchmarking, documentation ranges ...
        return "not_global"
    return None


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [info[4][0] for info in infos]


@dataclass(frozen=True)
class Target:
    """Where to connect: the vetted ``ip`` and ``port`` for ``host`` (send ``host`` in the Host header / SNI)."""

    host: str
    ip: str
    port: int
    overridden: bool = False


def parse_overrides(spec: str | Iterable[str] | dict | None) -> dict[str, tuple[str, int | None]]:
    """``"a.test=127.0.0.1:8080,b.test=127.0.0.1"`` (or a dict / list of such items) -> {host: (ip, port|None)}."""
    if not spec:
        return {}
    if isinstance(spec, dict):
        items = [f"{k}={v}" for k, v in spec.items()]
    elif isinstance(spec, str):
        items = [s for s in spec.split(",") if s.strip()]
    else:
        items = list(spec)
    out = {}
    for item in items:
        host, _, target = item.strip().partition("=")
        if not host or not target:
            raise ValueError(f"--host_overrides: expected host=ip[:port], got {item!r}")
        ip, port = target, None
        if target.startswith("["):
            ip, _, rest = target[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else None
        elif target.count(":") == 1:
            ip, p = target.split(":")
            port = int(p)
        ipaddress.ip_address(ip)  # fail fast on a typo
        out[host.strip().lower().rstrip(".")] = (ip, port)
    return out


def parse_allow(spec: str | Iterable[str] | None) -> frozenset[tuple[str, int | None]]:
    """``"127.0.0.1:8765,feeds.lan,[::1]:80"`` (or a list of such items) -> {(host, port or None)}."""
    if not spec:
        return frozenset()
    items = [s for s in spec.split(",") if s.strip()] if isinstance(spec, str) else list(spec)
    out = set()
    for item in items:
        text = item.strip().lower().rstrip(".")
        host, port = text, None
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else None
        elif text.count(":") == 1:
            host, port = text.split(":")
        if not host or "/" in host or "=" in host or (port is not None and not port.isdigit()):
            raise ValueError(f"--allow_hosts: expected host[:port], got {item!r}")
        out.add((host, int(port) if port is not None else None))
    return frozenset(out)


_RESOLVERS: ThreadPoolExecutor | None = None
_RESOLVERS_LOCK = threading.Lock()


def _resolve_within(resolver, host: str, port: int, timeout: float) -> list[str]:
    """``resolver(host, port)`` bounded by ``timeout`` seconds: getaddrinfo cannot be interrupted, so it runs on a
    small shared pool (8 threads) and the caller stops waiting at the deadline (a hostile domain's name servers can
    be as slow as its web server). A stuck lookup ends by the system resolver's own timeout."""
    global _RESOLVERS
    with _RESOLVERS_LOCK:
        if _RESOLVERS is None:
            _RESOLVERS = ThreadPoolExecutor(8, thread_name_prefix="dns")
    future = _RESOLVERS.submit(resolver, host, port)
    try:
        return future.result(timeout=max(0.0, timeout))
    except FutureTimeout:
        raise BlockedAddress("timeout", f"{host}: DNS resolution took more than {timeout:.1f} s") from None


class AddressGuard:
    def __init__(
        self,
        overrides: dict | str | None = None,
        resolver: Callable[[str, int], list[str]] | None = None,
        allow: str | Iterable[str] | None = None,
    ):
        self.overrides = parse_overrides(overrides)
        self.resolver = resolver or system_resolver
        self.allow = parse_allow(allow)

    def resolve(self, host: str, port: int, timeout: float | None = None) -> Target:
        """Vet ``host`` and return the address to connect to. Raises BlockedAddress (reason ``timeout`` when the
        name does not resolve within ``timeout`` seconds; None: no bound of ours)."""
        h = (host or "").lower().rstrip(".")
        if not h:
            raise BlockedAddress("bad_url", "no host")
        if h in self.overrides:
            ip, oport = self.overrides[h]
            return Target(h, ip, oport or port, overridden=True)
        literal = h[1:-1] if h.startswith("[") and h.endswith("]") else h
        try:
            ipaddress.ip_address(literal)
            ips = [literal]
        except ValueError:
            try:
                ips = self.resolver(h, port) if timeout is None else _resolve_within(self.resolver, h, port, timeout)
            except (OSError, UnicodeError) as exc:
                raise BlockedAddress("dns_error", f"{h}: {exc}") from None
        if not ips:
            raise BlockedAddress("dns_error", f"{h}: no address")
        allowed = (h, port) in self.allow or (h, None) in self.allow
        for ip in ips:
            why = forbidden_reason(ip)
            if why and not allowed:
                hint = f"; to fetch it anyway pass --allow_hosts {h}:{port}" if why != "not_an_ip" else ""
                raise BlockedAddress("blocked_address", f"{h} -> {ip} ({why}){hint}")
        return Target(h, ips[0], port, overridden=allowed)
