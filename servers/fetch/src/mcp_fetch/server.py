"""mcp-fetch: registers the fetch tool and prompt; the work is in `mcp_fetch.client`.

The tool and prompt are drop-in compatible with the reference server (`mcp-server-fetch`): same
names, same arguments (url, max_length, start_index, raw) and the same reply shape ("Contents of
URL:", the truncation marker naming the next start_index), plus `format`.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Literal

from mcp.types import ImageContent, TextContent
from mcp_batteries.app import BatteriesServer
from mcp_batteries.errors import BatteriesError
from pydantic import Field

from mcp_fetch.client import Fetcher, FetchResult, FetchSettings
from mcp_fetch.config import FetchServerSettings, fetch_settings

INSTRUCTIONS = """Fetches web pages (http/https) and returns their main content as Markdown, plain
text or HTML, one chunk at a time: when a reply ends with a truncation notice, call fetch again
with the start_index it names. JavaScript is not run. Private and internal addresses are refused
unless the operator allowed them, and robots.txt is honoured."""

#: The prompt returns the whole page in one message, up to this many characters.
PROMPT_MAX_LENGTH = 200_000


class _FetcherService:
    """One Fetcher (one connection pool) for as long as the server runs."""

    def __init__(self, settings: FetchSettings) -> None:
        self._settings = settings
        self._fetcher: Fetcher | None = None

    @property
    def fetcher(self) -> Fetcher:
        if self._fetcher is None:
            raise RuntimeError("the fetch service is not running")
        return self._fetcher

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Fetcher]:
        self._fetcher = Fetcher(self._settings)
        try:
            yield self._fetcher
        finally:
            fetcher, self._fetcher = self._fetcher, None
            await fetcher.aclose()


def render(result: FetchResult) -> str:
    """The reply text, shaped like the reference server's."""
    prefix = ""
    if result.notice:
        prefix = f"{result.notice}\n"
    lines = [f"{prefix}Contents of {result.final_url}:"]
    if result.title:
        lines.append(f"Title: {result.title}")
    text = "\n".join(lines) + "\n" + result.content
    if result.truncated and result.next_start_index is not None:
        text += (
            f"\n\n<error>Content truncated. Call the fetch tool with a start_index of "
            f"{result.next_start_index} to get more content.</error>"
        )
    return text


def tool_description(settings: FetchServerSettings) -> str:
    """The fetch tool's description, for the model, with the operator's actual limits."""
    mib = settings.max_download_bytes / (1024 * 1024)
    return (
        "Fetch a URL from the internet and return its content: HTML pages are reduced to their main "
        "content and converted to Markdown (or plain text / cleaned HTML with `format`); text, JSON and "
        "XML come back as they are; PNG, JPEG, GIF and WebP images come back as images.\n\n"
        "Long content is returned in chunks of at most max_length characters (default 5000). When a "
        'reply ends with "<error>Content truncated...", call fetch again with the same url and the '
        "start_index it names to read on (the page is normally not downloaded again).\n\n"
        f"Limits: downloads are capped at {mib:g} MiB and "
        f"{settings.connect_timeout + settings.read_timeout:g} s, with at most "
        f"{settings.max_redirects} redirects. JavaScript is NOT run, so pages that build their content "
        "in the browser may come back nearly empty. Only http:// and https:// URLs; private and "
        "internal network addresses are refused unless the operator allowed them"
        + ("" if settings.ignore_robots_txt else ", and sites' robots.txt rules are respected")
        + "."
    )


def build_server(settings: FetchServerSettings) -> BatteriesServer:
    server = BatteriesServer(
        settings,
        title="Fetch",
        instructions=INSTRUCTIONS,
    )
    shared = _FetcherService(fetch_settings(settings))
    server.service(shared.running)

    async def fetch(
        url: Annotated[str, Field(description="The http:// or https:// URL to fetch.")],
        max_length: Annotated[
            int, Field(gt=0, lt=1_000_000, description="Maximum number of characters to return.")
        ] = 5000,
        start_index: Annotated[
            int,
            Field(
                ge=0,
                description="Return output starting at this character index; use the start_index given "
                "in a truncation notice to read the next chunk.",
            ),
        ] = 0,
        raw: Annotated[
            bool, Field(description="Return the page's HTML/text as received, without simplification.")
        ] = False,
        format: Annotated[
            Literal["markdown", "text", "html"],
            Field(description="markdown (default), plain text, or cleaned-up HTML of the main content."),
        ] = "markdown",
    ) -> list[TextContent | ImageContent]:
        result = await shared.fetcher.fetch(
            url, format=format, raw=raw, start_index=start_index, max_length=max_length
        )
        if result.image is not None:
            caption = (
                f"Contents of {result.final_url}: an image ({result.image_mime}, {len(result.image)} bytes)."
            )
            if result.notice:
                caption = f"{result.notice}\n{caption}"
            return [
                TextContent(type="text", text=caption),
                ImageContent(
                    type="image",
                    data=base64.b64encode(result.image).decode(),
                    mime_type=result.image_mime or result.content_type,
                ),
            ]
        return [TextContent(type="text", text=render(result))]

    # The description names this operator's limits, so it is built from the settings.
    server.tool(
        title="Fetch a web page",
        read_only=True,
        open_world=True,
        idempotent=True,
        structured_output=False,
        description=tool_description(settings),
    )(fetch)

    @server.mcp.prompt(name="fetch", description="Fetch a URL and extract its contents as markdown")
    async def fetch_prompt(url: Annotated[str, Field(description="URL to fetch")]) -> str:
        # A user picked this prompt and URL themselves, so robots.txt (rules for automated
        # agents) is not consulted, as in the reference server.
        try:
            result = await shared.fetcher.fetch(url, max_length=PROMPT_MAX_LENGTH, check_robots=False)
        except BatteriesError as exc:
            return f"Failed to fetch {url}: {exc}"
        if result.image is not None:
            return (
                f"Contents of {result.final_url}: an image ({result.image_mime}); "
                "use the fetch tool to see it."
            )
        return render(result)

    server.check_tool_lists()
    return server
