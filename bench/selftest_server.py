"""A misbehaving MCP server for bench/selftest.py: it blocks, naps, floods, fails and crashes."""

import asyncio
import os
import time

from mcp.server import MCPServer

mcp = MCPServer("selftest", version="0")


@mcp.tool()
async def block(seconds: float) -> str:
    time.sleep(seconds)  # noqa: ASYNC251 -- blocks the event loop on purpose: pings must stall
    return "done"


@mcp.tool()
async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)  # yields: pings must be answered meanwhile
    return "done"


@mcp.tool()
async def big(mb: int) -> str:
    return "x" * (mb * 1_000_000)  # one large line (sent twice: text + structured content)


@mcp.tool()
async def die() -> str:
    os._exit(3)


@mcp.tool()
async def fail() -> str:
    raise ValueError("nope")


if __name__ == "__main__":
    mcp.run()
