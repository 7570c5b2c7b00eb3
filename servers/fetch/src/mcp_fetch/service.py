"""What mcp-fetch offers, as plain Python: the fetch tool's reply and description, the prompt's text.

`FetchService` holds one `Fetcher` (one connection pool) for as long as the server runs; `server.py`
only registers its methods. The tool and prompt are drop-in compatible with the reference server
(`mcp-server-fetch`): the reply starts "Contents of URL:", and a truncated chunk ends with the
marker naming the next start_index.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mcp_batteries.errors import BatteriesError
from mcp_batteries.safety import scrub

from .client import Fetcher, FetchResult, FetchSettings, Format
from .netguard import Resolver
from .urls import shorten

INSTRUCTIONS = """Fetches web pages (http/https) and returns their main content as Markdown, plain
text or HTML, one chunk at a time: when a reply ends with a truncation notice, call fetch again
with the start_index it names. Documents (PDF, Word, Excel and OpenDocument spreadsheets,
PowerPoint, EPUB, CSV, JSON, RSS/Atom) come back as Markdown too; the reply's "Document:" line says
how many pages, sheets or slides there are, and the pages argument selects some. JavaScript is not
run. Private and internal addresses are refused unless the operator allowed them, and robots.txt is
honoured."""

#: The prompt returns the whole page in one message, up to this many characters.
PROMPT_MAX_LENGTH = 200_000


@dataclass(frozen=True)
class ToolReply:
    """The fetch tool's answer: text, and for an image the image itself."""

    text: str
    image: bytes | None = None
    image_mime: str | None = None

    @property
    def image_base64(self) -> str:
        return base64.b64encode(self.image or b"").decode("ascii")


class FetchService:
    """One Fetcher for as long as the server runs, and the tool's and prompt's replies."""

    def __init__(self, settings: FetchSettings, *, resolver: Resolver | None = None) -> None:
        self.settings = settings
        self._resolver = resolver
        self._fetcher: Fetcher | None = None

    @property
    def fetcher(self) -> Fetcher:
        if self._fetcher is None:
            raise RuntimeError("the fetch service is not running")
        return self._fetcher

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Fetcher]:
        self._fetcher = Fetcher(self.settings, resolver=self._resolver)
        try:
            yield self._fetcher
        finally:
            fetcher, self._fetcher = self._fetcher, None
            await fetcher.aclose()

    async def tool_reply(
        self,
        url: str,
        *,
        max_length: int,
        start_index: int,
        raw: bool,
        format: Format,
        pages: str | None = None,
    ) -> ToolReply:
        result = await self.fetcher.fetch(
            url, format=format, raw=raw, start_index=start_index, max_length=max_length, pages=pages
        )
        if result.image is None:
            return ToolReply(render(result))
        caption = (
            f"Contents of {result.final_url}: an image ({result.image_mime}, {len(result.image)} bytes)."
        )
        if result.notice:
            caption = f"{result.notice}\n{caption}"
        return ToolReply(caption, result.image, result.image_mime or result.content_type)

    async def prompt_text(self, url: str) -> str:
        """The whole page for the prompt; a failure becomes the message text."""
        # A user picked this prompt and URL themselves, so robots.txt (rules for automated
        # agents) is not consulted, as in the reference server.
        try:
            result = await self.fetcher.fetch(url, max_length=PROMPT_MAX_LENGTH, check_robots=False)
        except BatteriesError as exc:
            # The URL is repeated as the user typed it: bounded, and safe to serialize whatever it holds.
            return f"Failed to fetch {shorten(scrub(url))}: {exc}"
        if result.image is not None:
            return (
                f"Contents of {result.final_url}: an image ({result.image_mime}); "
                "use the fetch tool to see it."
            )
        return render(result)


def render(result: FetchResult) -> str:
    """The reply text, shaped like the reference server's."""
    prefix = ""
    if result.notice:
        prefix = f"{result.notice}\n"
    lines = [f"{prefix}Contents of {result.final_url}:"]
    if result.title:
        lines.append(f"Title: {result.title}")
    if result.outline:
        lines.append(result.outline)
    text = "\n".join(lines) + "\n" + result.content
    if result.truncated and result.next_start_index is not None:
        # The same pages value must be passed again, or the start_index would index another text.
        same_pages = f' and the same pages="{result.pages}"' if result.pages else ""
        text += (
            f"\n\n<error>Content truncated. Call the fetch tool with a start_index of "
            f"{result.next_start_index}{same_pages} to get more content.</error>"
        )
    elif result.next_pages:
        text += f'\n\n(More follows: call fetch with pages="{result.next_pages}" for the next part.)'
    return text


def tool_description(settings: FetchSettings) -> str:
    """The fetch tool's description, for the model, with the operator's actual limits."""
    mib = settings.max_download_bytes / (1024 * 1024)
    doc_mib = max(settings.max_document_bytes, settings.max_download_bytes) / (1024 * 1024)
    return (
        "Fetch a URL from the internet and return its content: HTML pages are reduced to their main "
        "content and converted to Markdown (or plain text / cleaned HTML with `format`). Documents are "
        "converted to Markdown too: PDF (by page), Word .docx, Excel .xlsx/.xls and OpenDocument .ods "
        "(a table per sheet), PowerPoint .pptx (by slide), EPUB (by chapter), CSV/TSV (a table), JSON, "
        "and RSS/Atom feeds (a list of entries). Other text comes back as it is; PNG, JPEG, GIF and "
        "WebP images come back as images.\n\n"
        "Long content is returned in chunks of at most max_length characters (default 5000). When a "
        'reply ends with "<error>Content truncated...", call fetch again with the same url and the '
        "start_index it names to read on (the page is normally not downloaded again). For a document, "
        'the reply\'s "Document:" line says how many pages, sheets or slides it has; `pages` selects '
        'some ("3", "2-5", a sheet name), and start_index then pages through that selection.\n\n'
        f"Limits: downloads are capped at {mib:g} MiB ({doc_mib:g} MiB for documents) and "
        f"{settings.fetch_timeout:g} s, with at most "
        f"{settings.max_redirects} redirects. JavaScript is NOT run, so pages that build their content "
        "in the browser may come back nearly empty. Only http:// and https:// URLs (no user:password@); "
        "private and internal network addresses are refused unless the operator allowed them"
        + ("" if settings.ignore_robots_txt else ", and sites' robots.txt rules are respected")
        + "."
    )
