"""Serving a `BatteriesServer` over Streamable HTTP.

uvicorn serves it with DNS-rebinding protection always on (the SDK silently turns it off when
binding 0.0.0.0), an optional static bearer token, `/healthz`, and clean shutdown on
SIGINT/SIGTERM.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp

from mcp_batteries.auth import AuthMiddleware, authenticate
from mcp_batteries.events import BoundedEventStore
from mcp_batteries.transports import say

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer

logger = logging.getLogger(__name__)

LOOPBACK_HOST_PATTERNS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
SSE_RETRY_MS = 1000
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def transport_security(server: BatteriesServer) -> TransportSecuritySettings:
    """Host/Origin allow-lists: loopback names always, plus what the operator names explicitly."""
    s = server.settings
    hosts = list(LOOPBACK_HOST_PATTERNS) + list(s.allowed_hosts)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=list(LOOPBACK_ORIGINS) + list(s.allowed_origins),
    )


def build_http_app(server: BatteriesServer) -> ASGIApp:
    """The ASGI app for `server`: MCP at `settings.path`, `/healthz`, auth when configured."""
    s = server.settings

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": server.mcp.name, "version": server.mcp.version})

    server.mcp.custom_route("/healthz", methods=["GET"])(healthz)
    app: ASGIApp = server.mcp.streamable_http_app(
        streamable_http_path=s.path,
        stateless_http=s.stateless,
        # Resumable SSE (priming event, ids, a retry hint): a dropped connection loses nothing.
        event_store=None if s.stateless else BoundedEventStore(),
        retry_interval=None if s.stateless else SSE_RETRY_MS,
        transport_security=transport_security(server),
        host=s.host,
    )
    # Authentication (mcp_batteries.auth): static token, tokens file and/or OAuth; refuses a
    # non-loopback bind without any of them.
    app = authenticate(app, s, resource_path=s.path, writing_tools=server.writing_tools)
    return app


def _http_banner(server: BatteriesServer, port: int, authenticated: bool) -> str:
    s = server.settings
    host = f"[{s.host}]" if ":" in s.host else s.host
    url = f"http://{host}:{port}{s.path}"
    mode = "stateless" if s.stateless else "stateful sessions"
    auth = "bearer token required" if authenticated else "no authentication"
    extra = (
        ""
        if s.allowed_hosts or s.is_loopback
        else (
            "\n  note: only loopback Host headers are accepted; add --allowed-hosts NAME:* for remote clients"
        )
    )
    return (
        f"{server.mcp.name} {server.mcp.version}: MCP over Streamable HTTP at {url} ({mode}, {auth}); "
        f"health check at http://{host}:{port}/healthz. Ctrl-C stops it.{extra}"
    )


async def serve_http(
    server: BatteriesServer, app: ASGIApp, *, on_started: Callable[[int], Awaitable[None]] | None = None
) -> None:
    import uvicorn  # only HTTP needs it; stdio servers start ~0.1 s sooner without it

    s = server.settings
    config = uvicorn.Config(
        app, host=s.host, port=s.port, log_level=s.log_level, lifespan="on", access_log=False
    )
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            # uvicorn offers a flag, not an event, for "listening".
            while not web.started:  # noqa: ASYNC110
                await anyio.sleep(0.02)
            port = web.servers[0].sockets[0].getsockname()[1] if web.servers else s.port
            say(_http_banner(server, port, isinstance(app, AuthMiddleware)))
            if on_started is not None:
                await on_started(port)

        tg.start_soon(announce)
        await web.serve()  # uvicorn handles SIGINT/SIGTERM itself: it drains and exits
        tg.cancel_scope.cancel()
