"""The Fetcher: fetch a URL, convert it to the requested format, page it, cache the converted text.

The HTTP side (one guarded client, redirects followed by hand with each hop re-validated, the SSRF
policy, robots.txt, time and size limits) is in `download`, which knows nothing of this module: its
`DownloadSettings` are what it needs, and `FetchSettings` here extends them with what this layer adds.
Here: the public `Fetcher`, `FetchSettings` and `FetchResult`, the content handling (images returned
as images, text formats as they are, HTML cut at `max_convert_bytes` and converted by `extract` in a
worker thread) and the paging cache.

Documents (PDF, Word, workbooks, slides, EPUB, CSV/TSV, JSON, XML feeds) are recognised by
`documents.detect_format` and converted by `documents.convert` in a child process under a time and
memory budget; the converted document is cached whole, and `pages` selects its pages, sheets or
slides when a reply is cut from it (`documents.select`), so changing pages does not refetch either.

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
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Literal

import anyio.to_thread
import httpx
from mcp_batteries.errors import InvalidInput, LimitExceeded, UpstreamError

from . import documents
from .body import decode_text, effective_media_type, kind_of, parse_content_type
from .cache import LRUCache, freshness_of
from .download import Downloader, DownloadSettings, Response, format_size
from .netguard import Resolver
from .paging import page
from .urls import validated_url

if TYPE_CHECKING:
    from .extract import Output

Format = Literal["markdown", "text", "html"]
_FORMATS: tuple[Format, ...] = ("markdown", "text", "html")
PAGING_GRACE_SECONDS = 600.0
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class FetchSettings(DownloadSettings):
    """The HTTP layer's settings plus what this layer adds: robots.txt, the page cache, conversion."""

    ignore_robots_txt: bool = False
    cache_entries: int = 64
    cache_max_bytes: int = 64 * 1024 * 1024
    # HTML beyond this many bytes is cut off before conversion: parsing and markdownify cost
    # roughly 2-3 s of CPU per MB.
    max_convert_bytes: int = 2 * 1024 * 1024
    # A document's conversion: wall-clock seconds and address space of its child process.
    document_timeout: float = 30.0
    document_memory_bytes: int = 1024 * 1024 * 1024
    document_limits: documents.DocumentLimits = field(default_factory=documents.DocumentLimits)


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
    outline: str | None = None  # for documents: what it holds and what is shown ("PDF, 120 pages...")
    pages: str | None = None  # for documents: the selection asked for
    next_pages: str | None = None  # for documents: the `pages` value that continues a selection


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
    document: documents.Document | None = None


class Fetcher:
    def __init__(self, settings: FetchSettings, *, resolver: Resolver | None = None) -> None:
        self._settings = settings
        self._http = Downloader(settings, resolver=resolver)
        self._pages: LRUCache[_Entry] = LRUCache(settings.cache_entries, settings.cache_max_bytes)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def fetch(
        self,
        url: str,
        *,
        format: Format = "markdown",
        raw: bool = False,
        start_index: int = 0,
        max_length: int = 5000,
        check_robots: bool = True,
        pages: str | None = None,
    ) -> FetchResult:
        if format not in _FORMATS:
            raise InvalidInput(f"format must be one of {', '.join(_FORMATS)}; got {format!r}.")
        if start_index < 0 or max_length < 1:
            page("", start_index, max_length)  # raises the explanatory InvalidInput
        requested = validated_url(url)
        check_robots = check_robots and not self._settings.ignore_robots_txt
        deadline = self._http.deadline()
        key = (requested, format, raw)
        conditional: dict[str, str] = {}
        found = self._pages.get_with_freshness(key)
        if found is not None:
            entry, fresh = found
            if fresh or start_index > 0:
                if check_robots:
                    await self._http.ensure_robots_allowed(requested, deadline)
                return _result(url, entry, start_index, max_length, pages, from_cache=True)
            if entry.etag:
                conditional["If-None-Match"] = entry.etag
            if entry.last_modified:
                conditional["If-Modified-Since"] = entry.last_modified
        response = await self._http.get(
            requested, check_robots=check_robots, deadline=deadline, extra_headers=conditional
        )
        if response.status == 304 and found is not None:
            entry = found[0]
            self._store(key, entry, response.headers)
            return _result(url, entry, start_index, max_length, pages, from_cache=True)
        if response.status >= 400 or response.status == 304:
            raise _http_error(response)
        entry = await self._convert(response, format, raw)
        self._store(key, entry, response.headers)
        return _result(url, entry, start_index, max_length, pages)

    async def _convert(self, response: Response, output: Output, raw: bool) -> _Entry:
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
        document_format = documents.detect_format(mime, response.body) if kind != "html" else None
        if document_format is not None and (document_format in documents.BINARY_FORMATS or not raw):
            return await self._convert_document(response, document_format, output, raw, charset, entry)
        if len(response.body) > self._settings.max_download_bytes:
            raise LimitExceeded(
                f"{response.url} is {format_size(len(response.body))} of {mime or 'unknown content'}, larger "
                f"than the {format_size(self._settings.max_download_bytes)} download limit for anything but "
                "documents. The operator can raise --max-download-bytes."
            )
        if kind == "binary":
            raise InvalidInput(
                f"{response.url} is {mime} ({format_size(len(response.body))}), which cannot be converted "
                "to text. This tool converts HTML pages and documents (PDF, Word .docx, Excel .xlsx/.xls, "
                "OpenDocument .ods, PowerPoint .pptx, EPUB, CSV/TSV, JSON, XML/RSS/Atom) to Markdown, "
                "returns "
                "other text as it is, and PNG, JPEG, GIF and WebP images as images."
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
                f"The page is {format_size(len(response.body))}; only its first "
                f"{format_size(self._settings.max_convert_bytes)} were converted."
            )
        if converted.whole_page:
            notices.append(
                "No main content was found (the page is mostly navigation); the whole page was converted."
            )
        return entry(
            title=converted.title, text=converted.content, notice=" ".join(notices) or None, image=None
        )

    async def _convert_document(
        self,
        response: Response,
        document_format: documents.Format,
        output: Output,
        raw: bool,
        charset: str | None,
        entry: partial[_Entry],
    ) -> _Entry:
        settings = self._settings
        notices = []
        name = documents.NAMES[document_format]
        if raw:
            notices.append(f"raw does not apply to a {name}; its converted text follows.")
        if output == "html":
            notices.append(f"format html applies to web pages; the {name} is returned as Markdown.")
        document = await documents.convert(
            document_format,
            response.body,
            url=response.url,
            output="text" if output == "text" else "markdown",
            charset=charset,
            limits=settings.document_limits,
            budget=documents.Budget(settings.document_timeout, settings.document_memory_bytes),
        )
        notices.extend(document.notices)
        return entry(
            title=document.title,
            text=document.text,
            notice=" ".join(notices) or None,
            image=None,
            document=document,
        )

    def _store(self, key: tuple[str, Format, bool], entry: _Entry, headers: httpx.Headers) -> None:
        freshness = freshness_of(headers)
        if not freshness.storable:
            self._pages.discard(key)
            return
        size = sys.getsizeof(entry.text) + len(entry.image or b"") + 512
        if entry.document is not None:  # the sections hold the text a second time
            size += sum(sys.getsizeof(section.text) for section in entry.document.sections)
        self._pages.put(key, entry, size=size, ttl=freshness.ttl, keep_for=PAGING_GRACE_SECONDS)


def _result(
    url: str,
    entry: _Entry,
    start_index: int,
    max_length: int,
    pages: str | None = None,
    *,
    from_cache: bool = False,
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
    text, outline, next_pages = entry.text, None, None
    if entry.document is not None:
        selection = documents.select(entry.document, pages)
        text, outline, next_pages = selection.text, selection.outline, selection.next_pages
    elif pages is not None and pages.strip():
        raise InvalidInput(
            f"pages applies to documents (PDF pages, workbook sheets, slides, book chapters); {url} is "
            f"{entry.content_type}: read it with start_index."
        )
    chunk = page(text, start_index, max_length)
    return FetchResult(
        **common,  # type: ignore[arg-type]
        content=chunk.content,
        total_length=chunk.total_length,
        start_index=chunk.start_index,
        next_start_index=chunk.next_start_index,
        truncated=chunk.truncated,
        outline=outline,
        pages=pages.strip() if entry.document is not None and pages and pages.strip() else None,
        next_pages=next_pages,
    )


def _http_error(response: Response) -> UpstreamError:
    reason = httpx.codes.get_reason_phrase(response.status)
    snippet = " ".join(response.body[:2000].decode("utf-8", errors="replace").split())[:200]
    detail = f" The server said: {snippet!r}." if snippet and not snippet.lstrip().startswith("<") else ""
    return UpstreamError(f"Fetching {response.url} failed with HTTP {response.status} {reason}.{detail}")


def _raw_title(text: str) -> str | None:
    match = _TITLE.search(text[:65536])
    return " ".join(html_lib.unescape(match.group(1)).split()) or None if match else None


__all__ = ["FetchResult", "FetchSettings", "Fetcher"]
