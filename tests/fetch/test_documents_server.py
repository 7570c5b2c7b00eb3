"""Documents through the server as a client drives it: a stdio subprocess, pages, and pings meanwhile."""

from __future__ import annotations

import warnings

import anyio
import pytest
from mcp import MCPDeprecationWarning
from mcp.types import TextContent
from mcp_batteries.testing import connect, stdio_params

from . import docmaker
from .conftest import Site

pytestmark = pytest.mark.anyio

PDF = "application/pdf"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def server() -> object:
    return stdio_params(
        "mcp-batteries-fetch", "--allow-private", "--ignore-robots-txt", "--log-level", "error"
    )


def text_of(result: object) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))  # type: ignore[attr-defined]


async def test_the_tool_offers_pages_and_reads_a_workbook_sheet_by_sheet(site: Site) -> None:
    site.serve("/data.xlsx", docmaker.xlsx(20), content_type=XLSX)
    url = site.url("/data.xlsx")
    async with connect(server(), "legacy") as client:
        tool = (await client.list_tools()).tools[0]
        assert "pages" in tool.input_schema["properties"]
        assert "sheet" in tool.input_schema["properties"]["pages"]["description"]
        first = await client.call_tool("fetch", {"url": url, "pages": "1"})
        second = await client.call_tool("fetch", {"url": url, "pages": "Data", "max_length": 300})
    assert not first.is_error, text_of(first)
    assert text_of(first).startswith(
        f'Contents of {url}:\nDocument: Excel workbook, 2 sheets: 1 "Summary" (3 rows), 2 "Data" (21 rows). '
        "Showing sheet 1.\n## Sheet 1: Summary\n"
    )
    assert text_of(first).endswith('(More follows: call fetch with pages="2" for the next part.)')
    assert "start_index of" in text_of(second) and 'the same pages="Data"' in text_of(second)
    assert site.hits("/data.xlsx") == 1


async def test_server_answers_pings_while_a_200_page_pdf_converts(site: Site) -> None:
    site.serve("/long.pdf", docmaker.pdf(200, paragraphs_per_page=6), content_type=PDF)
    answered_while_converting = 0
    done = anyio.Event()
    result: list[object] = []
    async with connect(server(), "legacy") as client:

        async def fetch() -> None:
            result.append(await client.call_tool("fetch", {"url": site.url("/long.pdf"), "pages": "200"}))
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(fetch)
            with anyio.fail_after(60):
                while not done.is_set():
                    with warnings.catch_warnings():  # the SDK marks ping deprecated (legacy era only)
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.send_ping()
                    if not done.is_set():
                        answered_while_converting += 1
    assert not result[0].is_error, text_of(result[0])  # type: ignore[attr-defined]
    assert "# Chapter 200" in text_of(result[0])
    assert answered_while_converting >= 3
