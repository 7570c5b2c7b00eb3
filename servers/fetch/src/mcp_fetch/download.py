"""HTTP for the Fetcher: one guarded httpx client, redirects followed by hand, time and size limits.

Order of checks for every hop (the first URL and each redirect target): the URL's syntax
(`urls.validated_url`), then the SSRF policy (`netguard.CheckedResolver`: cheap, and a refusal is
reported as such, naming the address class and the flags that allow it), then robots.txt, then the
request itself.

Time limits (all raise LimitExceeded naming the limit):
    connect_timeout   resolving the host and opening the TCP/TLS connection; also the longest wait
                      for a free connection of the shared pool.
    read_timeout      the longest silence between two reads of the response, AND, together with
                      connect_timeout, the deadline for each request as a whole: every hop must deliver
                      its complete headers and body within connect_timeout + read_timeout. A server that
                      trickles one byte a second never trips a per-read timeout, so only a whole-request
                      deadline stops it.
    fetch_timeout     the deadline of one fetch as a whole: robots.txt, every redirect hop and every
                      wait for a connection, so no fetch can take longer, whatever the hops.

Connections: one pool of `max_connections`, of which one host (host and port) holds at most
`max_connections_per_host` at a time (`slots.HostSlots`), so a hanging host cannot starve the others.
A fetch that waits for a slot of a busy host, or for the pool, says so when its time runs out.

Size limit: `max_download_bytes` counts decoded bytes while streaming (a Content-Length above it is
refused before reading); the read stops and the connection is dropped as soon as it is exceeded.
A response declared as a binary document (PDF, Office, OpenDocument, EPUB) or as anonymous bytes
(application/octet-stream, which is how many PDFs are served) may reach `max_document_bytes`
instead: documents are often larger than pages, and they are converted in a child process with
their own budget (`documents.isolate`). The Fetcher refuses a body that turns out not to be a
document beyond `max_download_bytes`.

Redirects are followed here (httpx's follow_redirects is off) so that each hop's URL is re-validated:
scheme, host, address and robots.txt. Loops and more than `max_redirects` hops are refused. robots.txt
files are fetched through the same client (without robots checks, at most MAX_ROBOTS_BYTES).

With a proxy configured the proxy resolves target names, so connections cannot be pinned; each hop's
host is still resolved and checked here before the request (a rebinding DNS server could answer the
proxy differently; operators who need that guarantee must enforce it in the proxy too).

TLS: certificates are verified against certifi's CA bundle, or against SSL_CERT_FILE / SSL_CERT_DIR
when the environment sets them (an internal CA), and always against the URL's host name, even though
the pinned connection goes to a checked IP address.
"""

from __future__ import annotations

import importlib.util
import ssl
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial

import anyio
import httpx
from mcp_batteries.errors import BatteriesError, LimitExceeded, UpstreamError

from .body import (
    ACCEPT_ENCODING,
    UNINFORMATIVE_TYPES,
    BodyTooLarge,
    BoundedDecoder,
    decode_text,
    parse_content_type,
)
from .documents.detect import is_document_type
from .netguard import AddressPolicy, CheckedResolver, PinnedTransport, Resolver
from .robots import MAX_ROBOTS_BYTES, RobotsAnswer, RobotsChecker
from .slots import HostSlots
from .urls import shorten, url_host, url_port, validated_url

PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


@dataclass(frozen=True)
class DownloadSettings:
    """What the HTTP layer needs to know: identity, proxy, limits and the SSRF policy's exceptions."""

    user_agent: str = "ModelContextProtocol/1.0 (mcp-batteries-fetch; +https://github.com/mcp-batteries)"
    proxy: str | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    fetch_timeout: float = 60.0
    max_download_bytes: int = 10 * 1024 * 1024
    max_document_bytes: int = 50 * 1024 * 1024
    max_redirects: int = 10
    allow_hosts: tuple[str, ...] = ()
    allow_private: bool = False
    max_connections: int = 100
    max_connections_per_host: int = 6


def check_proxy_url(text: str) -> str:
    """A usable proxy URL, or ValueError saying what is wrong with `text` and how to write it."""
    value = text.strip()
    if "://" not in value:
        raise ValueError(
            f"{value!r} has no scheme; write the proxy as a URL, e.g. http://{value or 'proxy:3128'}"
        )
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise ValueError(f"{value!r} is not a valid URL ({exc})") from exc
    if url.scheme not in PROXY_SCHEMES:
        raise ValueError(
            f"{value!r} uses {url.scheme}:; a proxy URL starts with http://, https://, socks5:// or socks5h://"
        )
    if not url.host:
        raise ValueError(f"{value!r} names no host; e.g. {url.scheme}://proxy.example.com:3128")
    if url.scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        raise ValueError(
            "a SOCKS proxy needs the optional socksio package, which is not installed; run with "
            "uvx --with socksio mcp-batteries-fetch ..., or pip install socksio next to mcp-batteries-fetch"
        )
    return value


def tls_context() -> ssl.SSLContext:
    """certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set; host names always checked."""
    return httpx.create_ssl_context(trust_env=True)


_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: httpx.Headers
    body: bytes


class Downloader:
    """One guarded httpx client: GET with redirects by hand, robots.txt and address checks per hop, limits."""

    def __init__(self, settings: DownloadSettings, *, resolver: Resolver | None = None) -> None:
        self._settings = settings
        self._resolver = CheckedResolver(
            AddressPolicy.from_settings(settings.allow_hosts, settings.allow_private), resolver
        )
        self._slots = HostSlots(settings.max_connections_per_host)
        limits = httpx.Limits(
            max_connections=settings.max_connections,
            max_keepalive_connections=min(settings.max_connections, 20),
        )
        transport: httpx.AsyncBaseTransport
        if settings.proxy:
            transport = httpx.AsyncHTTPTransport(
                proxy=check_proxy_url(settings.proxy), verify=tls_context(), trust_env=False, limits=limits
            )
        else:
            transport = PinnedTransport(self._resolver, limits=limits, ssl_context=tls_context())
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            trust_env=False,  # HTTP(S)_PROXY in the environment must not bypass the pinned transport
            timeout=httpx.Timeout(
                connect=settings.connect_timeout,
                read=settings.read_timeout,
                write=settings.read_timeout,
                pool=settings.connect_timeout,
            ),
            headers={
                "User-Agent": settings.user_agent,
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.8",
                "Accept-Encoding": ACCEPT_ENCODING,
            },
        )
        self.robots = RobotsChecker(settings.user_agent)

    def deadline(self) -> float:
        """The deadline of a fetch starting now (anyio clock): now + fetch_timeout."""
        return anyio.current_time() + self._settings.fetch_timeout

    async def aclose(self) -> None:
        await self._client.aclose()

    async def ensure_robots_allowed(self, url: str, deadline: float) -> None:
        """AccessDenied if robots.txt of url's origin forbids it (fetched at most once an hour)."""
        await self.robots.ensure_allowed(url, partial(self._fetch_robots, deadline=deadline))

    async def get(
        self,
        url: str,
        *,
        check_robots: bool,
        deadline: float,
        extra_headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> Response:
        """GET url, following redirects by hand; the final response with its whole (decoded) body."""
        chain = [url]
        current, previous = url, None
        for _ in range(self._settings.max_redirects + 1):
            await self._check_address(current, previous, deadline)
            if check_robots:
                await self.ensure_robots_allowed(current, deadline)
            response = await self._exchange(current, extra_headers or {}, max_bytes, deadline)
            location = response.headers.get("location")
            if response.status not in _REDIRECT_STATUSES or not location:
                return response
            try:
                joined = str(httpx.URL(current).join(location.strip()))
            except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
                raise UpstreamError(
                    f"{current} redirected to {shorten(location)!r}, which is not a valid URL ({exc})."
                ) from exc
            target = validated_url(joined, redirected_from=current)
            if target in chain:
                raise UpstreamError(
                    f"{url} redirects in a loop ({' → '.join([*chain, target])}); the page cannot be fetched."
                )
            chain.append(target)
            current, previous = target, current
        raise LimitExceeded(
            f"{url} redirected more than {self._settings.max_redirects} times "
            f"({' → '.join(chain[:4])} → ...); the limit is {self._settings.max_redirects} redirects."
        )

    async def _check_address(self, url: str, redirected_from: str | None, deadline: float) -> None:
        """The SSRF policy's verdict on url's host (resolved, and the answer kept for the connection)."""
        host, port = url_host(url), url_port(url)
        budget = min(self._settings.connect_timeout, deadline - anyio.current_time())
        try:
            with anyio.fail_after(max(budget, 0)):
                await self._resolver.checked(host, port, url=url, redirected_from=redirected_from)
        except TimeoutError as exc:
            if budget < self._settings.connect_timeout:
                raise self._fetch_timeout(url) from exc
            raise LimitExceeded(
                f"Resolving the host name {host!r} took longer than the connect timeout of "
                f"{self._settings.connect_timeout:g} s."
            ) from exc

    def _fetch_timeout(self, url: str) -> LimitExceeded:
        return LimitExceeded(
            f"Fetching {url} did not complete within the fetch timeout of {self._settings.fetch_timeout:g} s "
            "(robots.txt, redirects and waiting for a connection included); the site is too slow. Try again "
            "later or another source."
        )

    async def _exchange(
        self, url: str, headers: dict[str, str], max_bytes: int | None, deadline: float
    ) -> Response:
        settings = self._settings
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise self._fetch_timeout(url)
        origin = (url_host(url), url_port(url))
        async with AsyncExitStack() as stack:
            # Waiting for a slot of this host is waiting for a connection: bounded like the pool's wait.
            try:
                with anyio.fail_after(min(settings.connect_timeout, remaining)):
                    await stack.enter_async_context(self._slots.hold(origin))
            except TimeoutError as exc:
                if remaining < settings.connect_timeout:
                    raise self._fetch_timeout(url) from exc
                host, port = origin
                raise LimitExceeded(
                    f"Fetching {url} gave up after waiting {settings.connect_timeout:g} s for a connection: "
                    f"all {self._slots.per_host} connections allowed to {host}:{port} are busy with other "
                    "fetches of that host, which has not answered them yet (it may be slow or hanging). Try "
                    "again later; the operator can raise --max-fetch-connections-per-host."
                ) from exc
            return await self._request(url, headers, max_bytes, deadline)

    def body_limit(self, content_type: str | None, max_bytes: int | None) -> tuple[int, str]:
        """The most bytes a body may have, and the flag that sets it (see the module's docstring)."""
        if max_bytes is not None:
            return max_bytes, "--max-download-bytes"
        settings = self._settings
        mime, _ = parse_content_type(content_type)
        if settings.max_document_bytes > settings.max_download_bytes and (
            mime in UNINFORMATIVE_TYPES or is_document_type(mime)
        ):
            return settings.max_document_bytes, "--max-document-bytes"
        return settings.max_download_bytes, "--max-download-bytes"

    async def _request(
        self, url: str, headers: dict[str, str], max_bytes: int | None, deadline: float
    ) -> Response:
        """One GET on a connection slot already held: status, headers and the bounded, decoded body."""
        settings = self._settings
        limit, flag = self.body_limit(None, max_bytes)
        hop_limit = settings.connect_timeout + settings.read_timeout
        remaining = deadline - anyio.current_time()
        try:
            with anyio.fail_after(min(hop_limit, max(remaining, 0))):
                request = self._client.build_request("GET", url, headers=headers)
                try:
                    response = await self._client.send(request, stream=True)
                except (httpx.InvalidURL, UnicodeError) as exc:
                    # httpx parses a redirect's Location while receiving the response, and fails there.
                    raise UpstreamError(
                        f"{url} redirected to a location that is not a valid URL ({exc}); the page cannot "
                        "be fetched."
                    ) from exc
                try:
                    if response.status_code in _REDIRECT_STATUSES:
                        return Response(url, response.status_code, response.headers, b"")
                    limit, flag = self.body_limit(response.headers.get("content-type"), max_bytes)
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise BodyTooLarge()
                    decoder = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
                    pieces = [decoder.feed(chunk) async for chunk in response.aiter_raw()]
                    pieces.append(decoder.finish())
                finally:
                    await response.aclose()
                return Response(url, response.status_code, response.headers, b"".join(pieces))
        except TimeoutError as exc:
            if remaining < hop_limit:
                raise self._fetch_timeout(url) from exc
            raise LimitExceeded(
                f"Fetching {url} did not finish within {hop_limit:g} s (connect_timeout "
                f"{settings.connect_timeout:g} s + read_timeout {settings.read_timeout:g} s); the server is "
                "too slow. Try again later or another source."
            ) from exc
        except BodyTooLarge as exc:
            if exc.ratio is not None:
                raise LimitExceeded(
                    f"{url} sent a compressed body that expands more than {exc.ratio:.0f}-fold, which looks "
                    "like a decompression bomb; it was refused without decompressing it."
                ) from exc
            raise LimitExceeded(
                f"{url} is larger than the {format_size(limit)} download limit; the download was stopped. "
                f"The operator can raise {flag}."
            ) from exc
        except httpx.PoolTimeout as exc:
            raise LimitExceeded(
                f"Fetching {url} gave up after waiting {settings.connect_timeout:g} s for a connection: all "
                f"{settings.max_connections} connections of this server are busy with other fetches. Try "
                "again shortly; the operator can raise --max-fetch-connections."
            ) from exc
        except httpx.ConnectTimeout as exc:
            raise LimitExceeded(
                f"Connecting to {url} took longer than the connect timeout of {settings.connect_timeout:g} s."
            ) from exc
        except httpx.WriteTimeout as exc:
            raise LimitExceeded(
                f"Sending the request for {url} took longer than {settings.read_timeout:g} s."
            ) from exc
        except httpx.TimeoutException as exc:
            raise LimitExceeded(
                f"{url} stopped sending data for longer than the read timeout of {settings.read_timeout:g} s."
            ) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(_transport_error(url, exc)) from exc

    async def _fetch_robots(self, robots_url: str, *, deadline: float) -> RobotsAnswer:
        try:
            response = await self.get(
                robots_url, check_robots=False, deadline=deadline, max_bytes=MAX_ROBOTS_BYTES
            )
        except BatteriesError as exc:
            return RobotsAnswer(status=None, error=str(exc))
        _, charset = parse_content_type(response.headers.get("content-type"))
        text = decode_text(response.body, charset, is_html=False)[0] if response.status < 300 else ""
        return RobotsAnswer(status=response.status, text=text)


def _transport_error(url: str, exc: httpx.HTTPError) -> str:
    """What went wrong below HTTP, in words: TLS verification, refused connections, resets."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, ssl.SSLCertVerificationError):
        return (
            f"Fetching {url} failed: its TLS certificate could not be verified "
            f"({cause.verify_message or cause}). "
            "The site may be misconfigured or impersonated; it is not fetched without a valid certificate."
        )
    return f"Fetching {url} failed: {type(exc).__name__}: {exc or 'connection error'}."


def format_size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB"
    if count >= 1024:
        return f"{count / 1024:.0f} KiB"
    return f"{count} bytes"
