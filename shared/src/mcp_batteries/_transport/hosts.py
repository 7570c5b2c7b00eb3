"""Host and Origin checks for HTTP (DNS-rebinding protection), with one parser for both.

A browser page on `http://evil.example` whose name an attacker re-points at 127.0.0.1 can reach
a loopback server; its requests then carry `Host: evil.example` and `Origin: http://evil.example`.
So every request's Host must name this server and a browser's Origin must be one the operator
allows. The SDK's own check compares by string prefix (`localhost:evil.example` passes it); here
both headers are parsed as what they are (a host plus an optional numeric port; IPv6 in
brackets; a scheme for an Origin) and compared exactly:

- `--allowed-hosts NAME` admits `Host: NAME` (no port); `NAME:PORT` that port only; `NAME:*`
  any port and no port (behind a TLS reverse proxy clients send no port);
- `--allowed-origins SCHEME://NAME[:PORT]` admits that origin (a default port, 80 for http or
  443 for https, may be written or left out); `SCHEME://NAME:*` any port of that origin;
- host names compare case-insensitively; a request without an Origin (not a browser) passes.

A rejected Host answers 421 and a rejected Origin 403. Each distinct rejected value is logged
once, with the flag that would admit it.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.types import INVALID_REQUEST
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_batteries._protocol.frames import error_reply, send_reply
from mcp_batteries.errors import ConfigError

__all__ = [
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "Authority",
    "HostGuard",
    "HostPattern",
    "OriginPattern",
    "parse_authority",
    "parse_host_patterns",
    "parse_origin",
    "parse_origin_patterns",
]

logger = logging.getLogger(__name__)

#: Always admitted: the names of this machine's loopback interface, on any port.
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

DEFAULT_PORTS = {"http": 80, "https": 443}
#: Paths served whatever the Host: a liveness probe addresses a pod by its IP.
UNGUARDED_PATHS = frozenset({"/healthz"})
#: How many distinct rejected values are remembered (each logged once); beyond it, rejections
#: are counted and summarised at most once a minute, so a flood of names cannot flood the log.
MAX_REMEMBERED_REJECTIONS = 256
SUMMARY_INTERVAL_S = 60.0

_REG_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?")
_PORT = re.compile(r"[0-9]{1,5}")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


@dataclass(frozen=True)
class Authority:
    """A host (lower-case; IPv6 in brackets, as in a URL) and an optional port."""

    host: str
    port: int | None

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def parse_authority(text: str, *, wildcard_port: bool = False) -> tuple[str, int | str | None] | None:
    """`host[:port]` as (lower-case host, port), or None when it is not one.

    The host is a DNS name, an IPv4 address or an IPv6 address in brackets; the port is 0-65535
    in decimal. With `wildcard_port`, the port may also be `*` (returned as the string "*").
    Nothing else is accepted: no user info (`a@b`), no path, no empty port, no spaces.
    """
    if not text or text != text.strip() or len(text) > 300:
        return None
    text = text.lower()
    port_text: str | None = None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host, rest = text[: end + 1], text[end + 1 :]
        try:
            host = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            return None
        if rest:
            if not rest.startswith(":"):
                return None
            port_text = rest[1:]
    else:
        host, colon, after = text.partition(":")
        if colon:
            port_text = after
        if not _REG_NAME.fullmatch(host):
            return None
        host = host.removesuffix(".")  # "example.com." is the same name as "example.com"
    if port_text is None:
        return host, None
    if wildcard_port and port_text == "*":
        return host, "*"
    if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        return None
    return host, int(port_text)


def parse_host(value: str) -> Authority | None:
    """A `Host` header as an `Authority`, or None when it is malformed."""
    parsed = parse_authority(value)
    if parsed is None:
        return None
    host, port = parsed
    assert not isinstance(port, str)
    return Authority(host, port)


def parse_origin(value: str) -> tuple[str, Authority] | None:
    """An `Origin` header as (scheme, authority with its port made explicit), or None.

    `null` (an opaque origin), a path, user info or a malformed port all give None.
    """
    scheme, sep, rest = value.partition("://")
    scheme = scheme.lower()
    if not sep or not _SCHEME.fullmatch(scheme):
        return None
    authority = parse_host(rest)
    if authority is None:
        return None
    if authority.port is None and scheme in DEFAULT_PORTS:
        authority = Authority(authority.host, DEFAULT_PORTS[scheme])
    return scheme, authority


@dataclass(frozen=True)
class HostPattern:
    """An `--allowed-hosts` entry: NAME, NAME:PORT or NAME:* (any port, or none)."""

    host: str
    port: int | str | None  # "*" for any port

    def admits(self, authority: Authority) -> bool:
        if authority.host != self.host:
            return False
        return self.port == "*" or self.port == authority.port


@dataclass(frozen=True)
class OriginPattern:
    """An `--allowed-origins` entry: SCHEME://NAME[:PORT] or SCHEME://NAME:*."""

    scheme: str
    host: str
    port: int | str | None

    def admits(self, scheme: str, authority: Authority) -> bool:
        if scheme != self.scheme or authority.host != self.host:
            return False
        return self.port == "*" or self.port == authority.port


def parse_host_patterns(values: Iterable[str], *, flag: str = "--allowed-hosts") -> list[HostPattern]:
    patterns = []
    for value in values:
        parsed = parse_authority(value, wildcard_port=True)
        if parsed is None:
            raise ConfigError(
                f"{flag}: {value!r} is not a host name, NAME:PORT or NAME:* "
                "(IPv6 in brackets: [::1]:*; no scheme, no path)"
            )
        patterns.append(HostPattern(*parsed))
    return patterns


def parse_origin_patterns(values: Iterable[str], *, flag: str = "--allowed-origins") -> list[OriginPattern]:
    patterns = []
    for value in values:
        scheme, sep, rest = value.partition("://")
        parsed = parse_authority(rest, wildcard_port=True) if sep else None
        if parsed is None or not _SCHEME.fullmatch(scheme.lower()):
            raise ConfigError(
                f"{flag}: {value!r} is not an origin such as https://app.example.com or http://NAME:* "
                "(a scheme, a host and an optional port; no path)"
            )
        scheme = scheme.lower()
        host, port = parsed
        if port is None and scheme in DEFAULT_PORTS:
            port = DEFAULT_PORTS[scheme]
        patterns.append(OriginPattern(scheme, host, port))
    return patterns


def _suggest_host(value: str) -> str:
    authority = parse_host(value)
    if authority is None:
        return ""
    return f"; to accept it, add --allowed-hosts '{authority.host}:*'"


def _suggest_origin(value: str) -> str:
    origin = parse_origin(value)
    if origin is None:
        return ""
    scheme, authority = origin
    shown = authority.host
    if authority.port != DEFAULT_PORTS.get(scheme):
        shown = f"{shown}:{authority.port}"
    return f"; to accept it, add --allowed-origins {scheme}://{shown}"


class _RejectionLog:
    """Logs each distinct rejected value once; a flood of distinct values is summarised."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._unlogged = 0
        self._last_summary = float("-inf")

    def rejected(self, header: str, value: str, status: int, advice: str) -> None:
        key = (header, value)
        if key in self._seen:
            return
        if len(self._seen) < MAX_REMEMBERED_REJECTIONS:
            self._seen.add(key)
            logger.warning("rejected %s header %s (%d)%s", header, _shown(value), status, advice)
            return
        self._unlogged += 1
        now = time.monotonic()
        if now - self._last_summary >= SUMMARY_INTERVAL_S:
            self._last_summary = now
            logger.warning(
                "rejected %d more requests with Host or Origin headers not logged individually "
                "(already %d distinct values logged)",
                self._unlogged,
                MAX_REMEMBERED_REJECTIONS,
            )
            self._unlogged = 0


def _shown(value: str) -> str:
    return repr(value[:200] + ("..." if len(value) > 200 else ""))


class HostGuard:
    """ASGI middleware: 421 for a Host that does not name this server, 403 for a foreign Origin."""

    def __init__(
        self, app: ASGIApp, *, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.hosts = parse_host_patterns(LOOPBACK_HOSTS) + parse_host_patterns(allowed_hosts)
        self.origins = parse_origin_patterns(LOOPBACK_ORIGINS) + parse_origin_patterns(allowed_origins)
        self._log = _RejectionLog()

    def host_allowed(self, value: str | None) -> bool:
        authority = parse_host(value) if value is not None else None
        return authority is not None and any(p.admits(authority) for p in self.hosts)

    def origin_allowed(self, value: str | None) -> bool:
        if value is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        origin = parse_origin(value)
        return origin is not None and any(p.admits(*origin) for p in self.origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNGUARDED_PATHS:
            await self.app(scope, receive, send)
            return
        host: str | None = None
        origin: str | None = None
        hosts_seen = 0
        for name, raw in scope.get("headers", ()):
            if name == b"host":
                host = raw.decode("latin-1")
                hosts_seen += 1
            elif name == b"origin":
                origin = raw.decode("latin-1")
        if hosts_seen > 1 or not self.host_allowed(host):
            shown = host if host is not None else ""
            self._log.rejected("Host", shown, 421, _suggest_host(shown) if hosts_seen == 1 else "")
            await _refuse(send, 421, "Misdirected Request: this server does not answer to that Host header")
            return
        if not self.origin_allowed(origin):
            assert origin is not None
            self._log.rejected("Origin", origin, 403, _suggest_origin(origin))
            await _refuse(send, 403, "Forbidden: requests from that Origin are not accepted")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    await send_reply(send, error_reply(None, INVALID_REQUEST, message, status=status))
