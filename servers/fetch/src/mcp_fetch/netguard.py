"""Which network addresses a fetch may reach, and a connection that reaches only those.

SSRF defence in three parts:

1. `AddressPolicy.refusal_reason` classifies an *IP address* (never the URL's host string): loopback,
   RFC 1918 private, link-local (which holds the cloud metadata endpoint 169.254.169.254), CGNAT
   100.64/10, multicast, unspecified, reserved and documentation ranges are refused unless the operator
   allowed them. IPv6 addresses that embed an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, 6to4
   ``2002::/16``, NAT64 ``64:ff9b::/96``, Teredo) are judged by the embedded address too. Odd spellings
   such as ``http://2130706433/``, ``0177.0.0.1``, ``0x7f.1`` or ``127.1`` need no special parsing:
   `getaddrinfo` turns them into the address they mean, and that address is what gets classified.

2. `CheckedResolver` turns a host into addresses and judges them: it resolves once (the answer is
   reused for RESOLUTION_TTL_SECONDS) and refuses the whole host if ANY address it resolves to is
   forbidden (mixing a public and a private record is a classic rebinding trick). The downloader asks
   it before every hop, so a refusal is reported as what it is (`AddressRefused`, naming the address
   class and the flags that allow it) before robots.txt or anything else is tried.

3. `PinnedNetworkBackend` is an httpcore network backend. httpcore calls ``connect_tcp(host, port)``
   whenever it opens a new connection; the backend asks the same `CheckedResolver` and connects to
   a checked IP literal. No DNS answer other than the checked one is ever dialled, so a rebinding DNS
   server has no window. Because the pool still knows the connection by its hostname, TLS SNI,
   certificate verification and the ``Host`` header all keep using the real name (tested with a
   local TLS server). This is why we pin inside the transport rather than rewriting URLs to IPs:
   rewriting would need per-request SNI overrides and would defeat connection pooling by hostname.
   `PinnedTransport` is an `httpx.AsyncHTTPTransport` whose httpcore pool uses that backend.

Through a proxy the proxy resolves the target, so pinning is impossible; the downloader's check
before each hop is then the only one (best effort, documented in `download.py`).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio
import httpcore
import httpx
from mcp_batteries.errors import AccessDenied, UpstreamError

from .cache import LRUCache
from .urls import normalise_allow_entry

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
#: How long a host's resolution is reused. Short, so DNS changes show up soon; a rebinding DNS server
#: gains nothing from it, since the reused answer is the one that was checked.
RESOLUTION_TTL_SECONDS = 30.0
_RESOLUTION_CACHE_ENTRIES = 1024
# Cloud metadata services are named explicitly so the refusal message says why they matter.
_METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)


async def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (an IP literal resolves to itself), without duplicates."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UpstreamError(
            f"Could not resolve the host name {host!r} ({exc.strerror}); check the URL's spelling."
        ) from exc
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        # IPv6 sockaddrs may carry a zone ("fe80::1%eth0"); the zone does not change the class.
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise UpstreamError(f"The host name {host!r} resolved to no addresses.")
    return addresses


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 transition address would actually deliver to, if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64_WELL_KNOWN or address in _NAT64_LOCAL_USE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def classify_address(address: IPAddress) -> str | None:
    """Why `address` is not a public internet address, or None when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = classify_address(embedded)
            if inner is not None:
                return f"an IPv6 address embedding {embedded}, which is {inner}"
            # NAT64/6to4 of a public IPv4 address is itself public; fall through for the v6 checks.
    if address in _METADATA_ADDRESSES:
        return (
            "a cloud metadata endpoint (link-local)" if address.is_link_local else "a cloud metadata endpoint"
        )
    if address.is_unspecified:
        return "an unspecified address (0.0.0.0 / ::)"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        # `is_private` is False and, before Python 3.13, `is_global` is the only flag that covers it.
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if address.is_multicast:
        # Python counts some multicast ranges as global; a fetch never has a reason to use them.
        return "a multicast address"
    if address.is_private:
        return "a private-network address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a globally routable address"
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses are always allowed; anything else needs the operator's explicit consent."""

    allow_private: bool = False
    allowed_names: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_settings(cls, allow_hosts: Iterable[str], allow_private: bool) -> AddressPolicy:
        """The policy for these --allow-private-host entries; ValueError names an invalid one."""
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in allow_hosts:
            canonical = normalise_allow_entry(entry)
            try:
                networks.append(ipaddress.ip_network(canonical, strict=False))
            except ValueError:
                names.add(canonical)
        return cls(allow_private, frozenset(names), tuple(networks))

    def host_is_allowed_by_name(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        if host in self.allowed_names:
            return True
        # "*.example.com" opens every subdomain (not example.com itself, as with TLS wildcards).
        return any(
            name.startswith("*.") and host.endswith(name[1:]) and host != name[2:]
            for name in self.allowed_names
        )

    def refusal_reason(self, host: str, address: IPAddress) -> str | None:
        """Why connecting to `address` (which `host` resolved to) is forbidden, or None if allowed."""
        reason = classify_address(address)
        if reason is None or self.allow_private or self.host_is_allowed_by_name(host):
            return None
        if any(address in network for network in self.allowed_networks if network.version == address.version):
            return None
        return reason

    def check(
        self,
        host: str,
        addresses: Iterable[IPAddress],
        *,
        url: str | None = None,
        redirected_from: str | None = None,
    ) -> None:
        """Raise AddressRefused unless every address `host` resolved to may be reached."""
        for address in addresses:
            reason = self.refusal_reason(host, address)
            if reason is not None:
                raise AddressRefused(host, address, reason, url=url, redirected_from=redirected_from)


class AddressRefused(AccessDenied):
    """The SSRF policy refused a target: the message says so first, with the class and the flags."""

    def __init__(
        self,
        host: str,
        address: IPAddress,
        reason: str,
        *,
        url: str | None = None,
        redirected_from: str | None = None,
    ) -> None:
        self.host, self.address, self.reason = host, address, reason
        target = url or host
        lead = f"{redirected_from} redirected to {target}, and " if redirected_from else f"{target}: "
        is_literal = _is_ip_literal(host, address)
        where = (
            f"{address} is {reason}"
            if is_literal
            else f"the host {host} resolves to {address}, which is {reason}"
        )
        super().__init__(
            f"Refused by the SSRF policy: {lead}{where}. This server fetches only public internet "
            "addresses, to protect the network it runs in; do not retry. An operator who trusts this "
            f"target can start the server with --allow-private-host {address if is_literal else host} "
            "(that host or network only) or --allow-private (every private address)."
        )


def _is_ip_literal(host: str, address: IPAddress) -> bool:
    try:
        return ipaddress.ip_address(host) == address
    except ValueError:
        return False


class CheckedResolver:
    """Resolves a host once per RESOLUTION_TTL_SECONDS and judges every address it resolves to.

    The one place where names become addresses: the downloader asks it before each hop (so a
    refusal is reported before robots.txt or anything else is tried) and the pinned network backend
    asks it again when it opens a connection; both get the same, already checked, answer.
    """

    def __init__(self, policy: AddressPolicy, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self._resolve = resolver or resolve_host
        self._answers: LRUCache[list[IPAddress]] = LRUCache(
            _RESOLUTION_CACHE_ENTRIES, _RESOLUTION_CACHE_ENTRIES
        )

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """Every address `host` resolves to (cached), not yet judged; an IP literal is itself."""
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        key = host.lower()
        answer = self._answers.get(key)
        if answer is None:
            answer = await self._resolve(host, port)
            self._answers.put(key, answer, size=1, ttl=RESOLUTION_TTL_SECONDS)
        return answer

    async def checked(
        self, host: str, port: int, *, url: str | None = None, redirected_from: str | None = None
    ) -> list[IPAddress]:
        """The addresses of `host`, or AddressRefused if the policy forbids any of them."""
        addresses = await self.addresses(host, port)
        self.policy.check(host, addresses, url=url, redirected_from=redirected_from)
        return addresses


class PinnedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Resolves each new connection's host once, checks every address, connects to a checked one."""

    def __init__(self, resolver: CheckedResolver) -> None:
        self._resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        host = host.strip("[]")  # httpcore may pass IPv6 literals in URL brackets
        try:
            with anyio.fail_after(timeout):
                addresses = await self._resolver.checked(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host!r} took longer than {timeout} s") from exc
        last_error: Exception | None = None
        for address in addresses:
            try:
                # An IP literal makes the inner backend skip DNS; only this checked address is dialled.
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AccessDenied("Unix sockets are never used for fetching.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every new connection goes through `PinnedNetworkBackend`."""

    def __init__(
        self,
        resolver: CheckedResolver,
        *,
        limits: httpx.Limits,
        ssl_context: ssl.SSLContext,
    ) -> None:
        context = ssl_context
        super().__init__(verify=context, trust_env=False, limits=limits)
        # httpx offers no public hook for the network backend, so replace the pool it built with an
        # identical one that uses ours; handle_async_request only ever talks to `self._pool`.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=PinnedNetworkBackend(resolver),
        )
