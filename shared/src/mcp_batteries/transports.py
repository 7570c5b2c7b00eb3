"""Serving a `BatteriesServer` over stdio or Streamable HTTP.

stdout is the protocol on stdio, so everything meant for a person goes to stderr. HTTP is served
by uvicorn with DNS-rebinding protection always on (the SDK silently turns it off when binding
0.0.0.0), an optional static bearer token, `/healthz`, and clean shutdown on SIGINT/SIGTERM.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp

from mcp_batteries.auth import TOKEN_ENV, BearerTokenMiddleware, load_token
from mcp_batteries.errors import ConfigError
from mcp_batteries.events import BoundedEventStore

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer

logger = logging.getLogger(__name__)

LOOPBACK_HOST_PATTERNS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
SSE_RETRY_MS = 1000
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def configure_logging(level: str) -> None:
    """Logs go to stderr, always: on stdio, stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def say(message: str) -> None:
    """A line for a person watching the terminal (stderr, never stdout)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


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
    """The ASGI app for `server`: MCP at `settings.path`, `/healthz`, auth when a token is set."""
    s = server.settings
    token = load_token(s.auth_token_file)
    if token is None and not s.is_loopback and not s.insecure_no_auth:
        raise ConfigError(
            f"refusing to serve {s.host} without authentication: set {TOKEN_ENV} or --auth-token-file, "
            "or pass --insecure-no-auth if a proxy in front authenticates"
        )

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
    if token is not None:
        app = BearerTokenMiddleware(app, token)
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


def _stdio_banner(server: BatteriesServer, script: str) -> str:
    return (
        f"{server.mcp.name} {server.mcp.version} speaks MCP (JSON-RPC) on stdin/stdout: it is meant to be "
        "started by an MCP client, not typed at.\n"
        f'  Add it to a client config, e.g. Claude Desktop: {{"command": "uvx", "args": ["{script}", ...]}}\n'
        f"  Or serve it over HTTP: {script} --transport http --port 8000\n"
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
            say(_http_banner(server, port, isinstance(app, BearerTokenMiddleware)))
            if on_started is not None:
                await on_started(port)

        tg.start_soon(announce)
        await web.serve()  # uvicorn handles SIGINT/SIGTERM itself: it drains and exits
        tg.cancel_scope.cancel()


def tune_gc() -> None:
    """Keep the cyclic garbage collector from dominating big responses, once start-up is over.

    A large result (10,000 rows, a long listing) allocates tens of thousands of containers that
    hold no cycles; at the default threshold (700) collection after collection scans them, and
    full collections re-scan every module and model loaded at start-up too (measured: ~50 ms of
    a ~130 ms query). Start-up objects live as long as the process, so they are frozen out of
    the collector (reference counting still frees them), and young collections run after 50,000
    net allocations rather than 700.
    """
    gc.freeze()
    gc.set_threshold(50_000)


def _exit_cleanly(signum: int, frame: object) -> None:
    """Runs after uvicorn has drained: returning lets `serve()` finish, so the exit status is 0."""


def run(server: BatteriesServer, *, script: str) -> None:
    """Serve until the client hangs up or a signal arrives. Configuration errors raise ConfigError."""
    configure_logging(server.settings.log_level)
    server.check_tool_lists()
    tune_gc()
    try:
        if server.settings.transport == "http":
            app = build_http_app(server)
            # uvicorn drains on SIGTERM, restores the previous handler and re-raises the signal;
            # with this handler in place that ends the process with status 0, not -15.
            signal.signal(signal.SIGTERM, _exit_cleanly)
            anyio.run(serve_http, server, app)
        else:
            anyio.run(serve_stdio, server, script)
    except KeyboardInterrupt:
        pass
