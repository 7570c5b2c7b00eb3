"""mcp-fetch: registers the fetch tool and prompt; the work is in `mcp_fetch.service` and below."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import ImageContent, TextContent
from mcp_batteries.server import BatteriesServer
from pydantic import Field

from mcp_fetch.config import FetchServerSettings, fetch_settings
from mcp_fetch.service import INSTRUCTIONS, FetchService, tool_description


def build_server(settings: FetchServerSettings) -> BatteriesServer:
    server = BatteriesServer(settings, title="Fetch", instructions=INSTRUCTIONS)
    service = FetchService(fetch_settings(settings))
    server.service(service.running)

    # The description names this operator's limits, so it is built from the settings.
    @server.tool(
        title="Fetch a web page or document",
        read_only=True,
        open_world=True,
        idempotent=True,
        structured_output=False,
        description=tool_description(service.settings),
        paging="call it again with a smaller max_length, and start_index where this reply stopped",
        task_support="optional",
    )
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
        pages: Annotated[
            str | None,
            Field(
                max_length=200,
                description="Documents only: which pages of a PDF, sheets of a workbook, slides of a deck or "
                'chapters of a book to return, counted from 1: "3", "2-5", "1,4,7-9", "10-" (to the end), '
                "or a sheet's name. Omit it to read the whole document. The reply's \"Document:\" line says "
                "what exists.",
            ),
        ] = None,
    ) -> list[TextContent | ImageContent]:
        reply = await service.tool_reply(
            url, max_length=max_length, start_index=start_index, raw=raw, format=format, pages=pages
        )
        blocks: list[TextContent | ImageContent] = [TextContent(type="text", text=reply.text)]
        if reply.image is not None:
            blocks.append(
                ImageContent(type="image", data=reply.image_base64, mime_type=str(reply.image_mime))
            )
        return blocks

    @server.prompt(name="fetch", description="Fetch a URL and extract its contents as markdown")
    async def fetch_prompt(url: Annotated[str, Field(description="URL to fetch")]) -> str:
        return await service.prompt_text(url)

    server.check_tool_lists()
    return server
