"""Serving a `BatteriesServer` over stdio: stdout is the protocol, everything for a person goes
to stderr."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

import anyio

from mcp_batteries.transports import say

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer


def _stdio_banner(server: BatteriesServer, script: str) -> str:
    return (
        f"{server.mcp.name} {server.mcp.version} speaks MCP (JSON-RPC) on stdin/stdout: it is meant to be "
        "started by an MCP client, not typed at.\n"
        f'  Add it to a client config, e.g. Claude Desktop: {{"command": "uvx", "args": ["{script}", ...]}}\n'
        f"  Or serve it over HTTP: uvx {script} --transport http --port 8000\n"
        "  Ctrl-C (or end of input) stops it."
    )


STDIO_SHUTDOWN_GRACE_S = 3.0


async def _until_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            # The stdin reader is a blocking read in a worker thread that cancellation cannot
            # interrupt: give the services a moment to close, then leave without waiting for it.
            timer = threading.Timer(STDIO_SHUTDOWN_GRACE_S, os._exit, (0,))
            timer.daemon = True
            timer.start()
            return


async def serve_stdio(server: BatteriesServer, script: str) -> None:
    if sys.stdin.isatty():
        say(_stdio_banner(server, script))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_until_signal, tg.cancel_scope)
        await server.mcp.run_stdio_async()
        tg.cancel_scope.cancel()
