"""HTTP for the Fetcher: one guarded httpx client, redirects followed by hand, time and size limits.

Time limits (all raise LimitExceeded naming the limit):
    connect_timeout   resolving the host and opening the TCP/TLS connection.
    read_timeout      the longest silence between two reads of the response, AND, together with
                      connect_timeout, the deadline for each request as a whole: every hop must deliver
                      its complete headers and body within connect_timeout + read_timeout. A server that
                      trickles one byte a second never trips a per-read timeout, so only a whole-request
                      deadline stops it.

Size limit: `max_download_bytes` counts decoded bytes while streaming (a Content-Length above it is
refused before reading); the read stops and the connection is dropped as soon as it is exceeded.

Redirects are followed here (httpx's follow_redirects is off) so that each hop's URL is re-validated:
scheme, robots.txt and, through the pinned transport, the address it resolves to. Loops and more than
`max_redirects` hops are refused. robots.txt files are fetched through the same client (without robots
checks, at most MAX_ROBOTS_BYTES).

With a proxy configured the proxy resolves target names, so connections cannot be pinned; each hop's
host is then resolved and checked here before the request (a rebinding DNS server could still answer
the proxy differently; operators who need that guarantee must enforce it in the proxy too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import httpx
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, UpstreamError

from .body import ACCEPT_ENCODING, BodyTooLarge, BoundedDecoder, decode_text, parse_content_type
from .netguard import AddressPolicy, PinnedTransport, Resolver, resolve_host
from .robots import MAX_ROBOTS_BYTES, RobotsAnswer, RobotsChecker

if TYPE_CHECKING:
    from .client import FetchSettings

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: httpx.Headers
    body: bytes


class Downloader:
    """One guarded httpx client: GET with redirects by hand, robots.txt and address checks per hop, limits."""

    def __init__(self, settings: FetchSettings, *, resolver: Resolver | None = None) -> None:
        self._settings = settings
        self._policy = AddressPolicy.from_settings(settings.allow_hosts, settings.allow_private)
        self._resolver = resolver or resolve_host
        transport: httpx.AsyncBaseTransport
        if settings.proxy:
            transport = httpx.AsyncHTTPTransport(proxy=settings.proxy, trust_env=False)
        else:
            transport = PinnedTransport(self._policy, resolver=resolver)
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
        self.robots = RobotsChecker(self._fetch_robots, settings.user_agent)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def get(
        self,
        url: str,
        *,
        check_robots: bool,
        extra_headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> Response:
        """GET url, following redirects by hand; the final response with its whole (decoded) body."""
        chain = [url]
        current = url
        for _ in range(self._settings.max_redirects + 1):
            if check_robots:
                await self.robots.ensure_allowed(current)
            response = await self._exchange(current, extra_headers or {}, max_bytes)
            location = response.headers.get("location")
            if response.status not in _REDIRECT_STATUSES or not location:
                return response
            target = validated_url(str(httpx.URL(current).join(location.strip())), redirected_from=current)
            if target in chain:
                raise UpstreamError(
                    f"{url} redirects in a loop ({' → '.join([*chain, target])}); the page cannot be fetched."
                )
            chain.append(target)
            current = target
        raise LimitExceeded(
            f"{url} redirected more than {self._settings.max_redirects} times "
            f"({' → '.join(chain[:4])} → ...); the limit is {self._settings.max_redirects} redirects."
        )

    async def _exchange(self, url: str, headers: dict[str, str], max_bytes: int | None) -> Response:
        settings = self._settings
        limit = max_bytes or settings.max_download_bytes
        deadline = settings.connect_timeout + settings.read_timeout
        try:
            with anyio.fail_after(deadline):
                if settings.proxy:
                    await self._precheck_through_proxy(url)
                request = self._client.build_request("GET", url, headers=headers)
                response = await self._client.send(request, stream=True)
                try:
                    if response.status_code in _REDIRECT_STATUSES:
                        return Response(url, response.status_code, response.headers, b"")
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
            raise LimitExceeded(
                f"Fetching {url} did not finish within {deadline:g} s (connect_timeout "
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
                "The operator can raise --max-download-bytes."
            ) from exc
        except httpx.ConnectTimeout as exc:
            raise LimitExceeded(
                f"Connecting to {url} took longer than the connect timeout of {settings.connect_timeout:g} s."
            ) from exc
        except httpx.TimeoutException as exc:
            raise LimitExceeded(
                f"{url} stopped sending data for longer than the read timeout of {settings.read_timeout:g} s."
            ) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"Fetching {url} failed: {type(exc).__name__}: {exc or 'connection error'}."
            ) from exc

    async def _precheck_through_proxy(self, url: str) -> None:
        parsed = httpx.URL(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self._policy.check(parsed.host, await self._resolver(parsed.host, port), url)

    async def _fetch_robots(self, robots_url: str) -> RobotsAnswer:
        try:
            response = await self.get(robots_url, check_robots=False, max_bytes=MAX_ROBOTS_BYTES)
        except BatteriesError as exc:
            return RobotsAnswer(status=None, error=str(exc))
        _, charset = parse_content_type(response.headers.get("content-type"))
        text = decode_text(response.body, charset, is_html=False)[0] if response.status < 300 else ""
        return RobotsAnswer(status=response.status, text=text)


def validated_url(url: str, *, redirected_from: str | None = None) -> str:
    """url normalised (no fragment), or InvalidInput / AccessDenied saying what is accepted."""
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InvalidInput(
            f"{text!r} is not a valid URL ({exc}); give an absolute http:// or https:// URL."
        ) from exc
    if parsed.scheme not in ("http", "https"):
        scheme = f"{parsed.scheme}:" if parsed.scheme else "no scheme"
        if redirected_from is not None:
            raise AccessDenied(
                f"{redirected_from} redirected to {text}, which uses {scheme}; only http:// and https:// "
                "redirects are followed."
            )
        raise InvalidInput(f"{text!r} uses {scheme}; only absolute http:// and https:// URLs can be fetched.")
    if not parsed.host:
        raise InvalidInput(
            f"{text!r} has no host name; give an absolute URL such as https://example.com/page."
        )
    return str(parsed.copy_with(fragment=None))


def format_size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB"
    if count >= 1024:
        return f"{count / 1024:.0f} KiB"
    return f"{count} bytes"
