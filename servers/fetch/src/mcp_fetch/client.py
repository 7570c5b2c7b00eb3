"""The Fetcher: one guarded HTTP client, redirects followed by hand, limits, conversion, paging cache.

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
`max_redirects` hops are refused.

With a proxy configured the proxy resolves target names, so connections cannot be pinned; each hop's
host is then resolved and checked here before the request (a rebinding DNS server could still answer
the proxy differently; operators who need that guarantee must enforce it in the proxy too).

Paging cache: the converted text is cached under (URL, format, raw), so reading a long page chunk by
chunk does not refetch it. Cache-Control no-store is honoured (never stored); max-age / no-cache set
freshness, and stale entries are revalidated with If-None-Match / If-Modified-Since when the server sent
validators. Continuation requests (start_index > 0) are served from a stale entry for up to
PAGING_GRACE_SECONDS so all chunks come from the same version of the page.
"""

from __future__ import annotations

import html as html_lib
import re
import sys
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.to_thread
import httpx
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, UpstreamError

from .body import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    BoundedDecoder,
    decode_text,
    effective_media_type,
    kind_of,
    parse_content_type,
)
from .cache import LRUCache, freshness_of
from .netguard import AddressPolicy, PinnedTransport, Resolver, resolve_host
from .paging import page
from .robots import MAX_ROBOTS_BYTES, RobotsAnswer, RobotsChecker

if TYPE_CHECKING:
    from .extract import Output

Format = Literal["markdown", "text", "html"]
_FORMATS: tuple[Format, ...] = ("markdown", "text", "html")
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
PAGING_GRACE_SECONDS = 600.0
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class FetchSettings:
    user_agent: str = "ModelContextProtocol/1.0 (mcp-batteries-fetch; +https://github.com/mcp-batteries)"
    proxy: str | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_download_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 10
    allow_hosts: tuple[str, ...] = ()
    allow_private: bool = False
    ignore_robots_txt: bool = False
    cache_entries: int = 64
    cache_max_bytes: int = 64 * 1024 * 1024
    # HTML beyond this many bytes is cut off before conversion: parsing and markdownify cost
    # roughly 2-3 s of CPU per MB.
    max_convert_bytes: int = 2 * 1024 * 1024


@dataclass(frozen=True)
class FetchResult:
    url: str  # as requested
    final_url: str  # after redirects
    status: int
    content_type: str  # the media type the content was treated as (after sniffing)
    title: str | None
    content: str  # the requested chunk; empty for images
    total_length: int  # characters of the whole converted text
    start_index: int
    next_start_index: int | None  # where the next chunk starts; None when nothing remains
    truncated: bool
    notice: str | None = None
    image: bytes | None = None
    image_mime: str | None = None
    from_cache: bool = False


@dataclass(frozen=True)
class _Response:
    url: str
    status: int
    headers: httpx.Headers
    body: bytes


@dataclass(frozen=True)
class _Entry:
    """A converted page as cached: everything needed to answer any chunk of it."""

    final_url: str
    status: int
    content_type: str
    title: str | None
    text: str
    notice: str | None
    image: bytes | None
    etag: str | None
    last_modified: str | None


class Fetcher:
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
        self._robots = RobotsChecker(self._fetch_robots, settings.user_agent)
        self._pages: LRUCache[_Entry] = LRUCache(settings.cache_entries, settings.cache_max_bytes)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(
        self,
        url: str,
        *,
        format: Format = "markdown",
        raw: bool = False,
        start_index: int = 0,
        max_length: int = 5000,
        check_robots: bool = True,
    ) -> FetchResult:
        if format not in _FORMATS:
            raise InvalidInput(f"format must be one of {', '.join(_FORMATS)}; got {format!r}.")
        if start_index < 0 or max_length < 1:
            page("", start_index, max_length)  # raises the explanatory InvalidInput
        requested = _validated_url(url)
        check_robots = check_robots and not self._settings.ignore_robots_txt
        key = (requested, format, raw)
        conditional: dict[str, str] = {}
        found = self._pages.get_with_freshness(key)
        if found is not None:
            entry, fresh = found
            if fresh or start_index > 0:
                if check_robots:
                    await self._robots.ensure_allowed(requested)
                return _result(url, entry, start_index, max_length, from_cache=True)
            if entry.etag:
                conditional["If-None-Match"] = entry.etag
            if entry.last_modified:
                conditional["If-Modified-Since"] = entry.last_modified
        response = await self._get(requested, check_robots=check_robots, extra_headers=conditional)
        if response.status == 304 and found is not None:
            entry = found[0]
            self._store(key, entry, response.headers)
            return _result(url, entry, start_index, max_length, from_cache=True)
        if response.status >= 400 or response.status == 304:
            raise _http_error(response)
        entry = await self._convert(response, format, raw)
        self._store(key, entry, response.headers)
        return _result(url, entry, start_index, max_length)

    # --- HTTP -----------------------------------------------------------------------------------

    async def _get(
        self,
        url: str,
        *,
        check_robots: bool,
        extra_headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> _Response:
        """GET url, following redirects by hand; the final response with its whole (decoded) body."""
        chain = [url]
        current = url
        for _ in range(self._settings.max_redirects + 1):
            if check_robots:
                await self._robots.ensure_allowed(current)
            response = await self._exchange(current, extra_headers or {}, max_bytes)
            location = response.headers.get("location")
            if response.status not in _REDIRECT_STATUSES or not location:
                return response
            target = _validated_url(str(httpx.URL(current).join(location.strip())), redirected_from=current)
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

    async def _exchange(self, url: str, headers: dict[str, str], max_bytes: int | None) -> _Response:
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
                        return _Response(url, response.status_code, response.headers, b"")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise BodyTooLarge()
                    decoder = BoundedDecoder(response.headers.get("content-encoding", ""), limit)
                    pieces = [decoder.feed(chunk) async for chunk in response.aiter_raw()]
                    pieces.append(decoder.finish())
                finally:
                    await response.aclose()
                return _Response(url, response.status_code, response.headers, b"".join(pieces))
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
                f"{url} is larger than the {_size(limit)} download limit; the download was stopped. "
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
            response = await self._get(robots_url, check_robots=False, max_bytes=MAX_ROBOTS_BYTES)
        except BatteriesError as exc:
            return RobotsAnswer(status=None, error=str(exc))
        _, charset = parse_content_type(response.headers.get("content-type"))
        text = decode_text(response.body, charset, is_html=False)[0] if response.status < 300 else ""
        return RobotsAnswer(status=response.status, text=text)

    # --- content --------------------------------------------------------------------------------

    async def _convert(self, response: _Response, output: Output, raw: bool) -> _Entry:
        header_mime, charset = parse_content_type(response.headers.get("content-type"))
        mime = effective_media_type(header_mime, response.body)
        kind = kind_of(mime)
        entry = partial(
            _Entry,
            final_url=response.url,
            status=response.status,
            content_type=mime,
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
        )
        if kind == "image":
            return entry(title=None, text="", notice=None, image=response.body)
        if kind == "binary":
            raise InvalidInput(
                f"{response.url} is {mime} ({_size(len(response.body))}), which cannot be converted to text. "
                "This tool converts HTML to Markdown, returns text formats (plain text, JSON, XML, CSV) as "
                "they are, and PNG, JPEG, GIF and WebP images as images."
            )
        if kind == "text" or raw:
            text = decode_text(response.body, charset, is_html=kind == "html")[0]
            title = _raw_title(text) if kind == "html" else None
            notice = None if raw else f"Content is {mime}, not HTML; returned as-is."
            return entry(title=title, text=text, notice=notice, image=None)
        body, cut = response.body, False
        if len(body) > self._settings.max_convert_bytes:
            cut_at = body.rfind(b"<", 0, self._settings.max_convert_bytes)
            body, cut = body[: cut_at if cut_at > 0 else self._settings.max_convert_bytes], True
        text = decode_text(body, charset, is_html=True)[0]
        # Imported on first conversion: bs4, lxml and markdownify cost ~0.2 s of start-up.
        from .extract import convert_html

        converted = await anyio.to_thread.run_sync(partial(convert_html, text, response.url, output))
        notices = []
        if cut:
            notices.append(
                f"The page is {_size(len(response.body))}; only its first "
                f"{_size(self._settings.max_convert_bytes)} were converted."
            )
        if converted.whole_page:
            notices.append(
                "No main content was found (the page is mostly navigation); the whole page was converted."
            )
        return entry(
            title=converted.title, text=converted.content, notice=" ".join(notices) or None, image=None
        )

    def _store(self, key: tuple[str, Format, bool], entry: _Entry, headers: httpx.Headers) -> None:
        freshness = freshness_of(headers)
        if not freshness.storable:
            self._pages.discard(key)
            return
        size = sys.getsizeof(entry.text) + len(entry.image or b"") + 512
        self._pages.put(key, entry, size=size, ttl=freshness.ttl, keep_for=PAGING_GRACE_SECONDS)


def _validated_url(url: str, *, redirected_from: str | None = None) -> str:
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


def _result(
    url: str, entry: _Entry, start_index: int, max_length: int, *, from_cache: bool = False
) -> FetchResult:
    common = {
        "url": url,
        "final_url": entry.final_url,
        "status": entry.status,
        "content_type": entry.content_type,
        "title": entry.title,
        "notice": entry.notice,
        "from_cache": from_cache,
    }
    if entry.image is not None:
        if start_index > 0:
            raise InvalidInput(f"{url} is an image; start_index does not apply to images.")
        return FetchResult(
            **common,  # type: ignore[arg-type]
            content="",
            total_length=0,
            start_index=0,
            next_start_index=None,
            truncated=False,
            image=entry.image,
            image_mime=entry.content_type,
        )
    chunk = page(entry.text, start_index, max_length)
    return FetchResult(
        **common,  # type: ignore[arg-type]
        content=chunk.content,
        total_length=chunk.total_length,
        start_index=chunk.start_index,
        next_start_index=chunk.next_start_index,
        truncated=chunk.truncated,
    )


def _http_error(response: _Response) -> UpstreamError:
    reason = httpx.codes.get_reason_phrase(response.status)
    snippet = " ".join(response.body[:2000].decode("utf-8", errors="replace").split())[:200]
    detail = f" The server said: {snippet!r}." if snippet and not snippet.lstrip().startswith("<") else ""
    return UpstreamError(f"Fetching {response.url} failed with HTTP {response.status} {reason}.{detail}")


def _raw_title(text: str) -> str | None:
    match = _TITLE.search(text[:65536])
    return " ".join(html_lib.unescape(match.group(1)).split()) or None if match else None


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB"
    if count >= 1024:
        return f"{count / 1024:.0f} KiB"
    return f"{count} bytes"


__all__ = ["FetchResult", "FetchSettings", "Fetcher"]
