"""Cache hints (SEP-2549): `ttlMs`/`cacheScope` per list and per resource, for 2026-07-28 clients only."""

from __future__ import annotations

import pytest
from mcp.types import Resource
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries.server import CacheHint
from mcp_batteries.testing import connect

from ..conftest import DemoSettings

pytestmark = pytest.mark.anyio


def build() -> BatteriesServer:
    server = BatteriesServer(DemoSettings(), instructions="cached")

    @server.tool(title="Look", read_only=True)
    async def look() -> str:
        """A tool."""
        return "looked"

    @server.prompt()
    def hello() -> str:
        return "hello"

    @server.resource("demo://fixed/{name}")
    def fixed(name: str) -> str:
        return f"fixed {name}"

    @server.resource("demo://live/{name}")
    def live(name: str) -> str:
        return f"live {name}"

    async def lister(session: object, cursor: str | None) -> tuple[list[Resource], str | None]:
        return [Resource(uri="demo://live/a", name="a")], None

    server.list_resources_with(lister, cache=CacheHint(ttl_ms=10_000, scope="private"))
    server.cache(r"demo://fixed/.*", CacheHint(ttl_ms=86_400_000, scope="public"))
    return server


async def test_each_list_and_resource_says_how_long_it_may_be_reused_and_by_whom() -> None:
    async with connect(build().mcp, "modern", cache=None) as client:
        tools = await client.list_tools()
        prompts = await client.list_prompts()
        templates = await client.list_resource_templates()
        listing = await client.list_resources()
        fixed = await client.read_resource("demo://fixed/x")
        live = await client.read_resource("demo://live/x")
    assert (tools.ttl_ms, tools.cache_scope) == (300_000, "private")  # read-only callers see fewer
    assert (prompts.ttl_ms, prompts.cache_scope) == (3_600_000, "public")
    assert (templates.ttl_ms, templates.cache_scope) == (3_600_000, "public")
    assert (listing.ttl_ms, listing.cache_scope) == (10_000, "private")  # the server's own choice
    assert (fixed.ttl_ms, fixed.cache_scope) == (86_400_000, "public")  # its URI rule
    assert (live.ttl_ms, live.cache_scope) == (0, "private")  # the default for data


async def test_handshake_era_clients_get_no_hints() -> None:
    async with connect(build().mcp, "legacy") as client:
        tools = await client.list_tools()
        read = await client.read_resource("demo://fixed/x")
    # Not on their wire (the SDK's models then read the fields' defaults, 0 and private).
    assert (tools.ttl_ms, read.ttl_ms, read.cache_scope) == (0, 0, "private")
