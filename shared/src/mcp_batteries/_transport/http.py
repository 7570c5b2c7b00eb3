"""Serving a `BatteriesServer` over Streamable HTTP.

uvicorn serves it with:
- Host/Origin checks always on, parsed and compared exactly (`mcp_batteries._transport.hosts`; the SDK
  silently turns its own off when binding 0.0.0.0, and matches by prefix);
- an optional static bearer token, and `/healthz` (no token, any Host);
- metrics at `/metrics` (behind the sign-in), the audit trail, per-caller limits and trace
  context from headers (`mcp_batteries._ops`);
- resumable SSE with an event store per session, bounded, dropped when the session ends
  (`mcp_batteries._transport.events`); sessions expire when idle and are capped in number;
- connection limits: idle and slow connections are closed, surplus ones make room or are
  refused (`mcp_batteries._transport.http_limits`);
- one line and exit status 2 for an address that cannot be bound, and clean shutdown on
  SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import JSONRPCRequest
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_batteries._core.request_state import KEY_ENV, load_keys
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._ops.observe import Ops
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.frames import FRAME_SCOPE_KEY
from mcp_batteries._signin.auth import authenticate
from mcp_batteries._transport.console import say
from mcp_batteries._transport.events import EventStores
from mcp_batteries._transport.hosts import HostGuard, parse_host
from mcp_batteries._transport.http_limits import (
    ConnectionLimits,
    ConnectionTable,
    connection_budget,
    guarded_protocol,
    keep_alive_for_uvicorn,
    log_accept_errors_sparingly,
)
from mcp_batteries._transport.sessions import SessionForwarder, default_advertise_url, registry_for
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn

    from mcp_batteries._core.app import BatteriesServer

logger = logging.getLogger(__name__)

SSE_RETRY_MS = 1000
#: After SIGTERM, how long requests still being answered (and open event streams) get.
GRACEFUL_SHUTDOWN_S = 5
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "", "*"})


#: How long a shutdown waits for calls in flight before it closes the sessions anyway.
SHUTDOWN_GRACE_S = 10.0


@dataclass
class HttpApp:
    """The ASGI app for one server, with the state its limits keep (for the banner and tests)."""

    server: BatteriesServer
    asgi: ASGIApp
    #: None for stateless HTTP (no sessions, nothing to resume).
    events: EventStores | None
    guard: HostGuard
    authenticated: bool
    #: A configuration mistake that stopped the server's services from starting (a database
    #: that cannot be opened): `serve_http` raises it, so the person gets one line.
    startup_error: ConfigError | None = None
    #: The connections being served (set by `serve_http`).
    connections: ConnectionTable | None = None
    #: Metrics, audit, limits and traces (`mcp_batteries._ops`).
    ops: Ops | None = None
    #: With a bus: forwards requests for sessions other replicas hold (`_transport.sessions`).
    forwarder: SessionForwarder | None = None
    _web: uvicorn.Server | None = None

    #: Calls being answered (POST requests other than listen streams): a shutdown waits for them.
    calls_in_flight: int = 0
    _idle: anyio.Event | None = None

    async def drain(self, grace: float = SHUTDOWN_GRACE_S) -> None:
        """Let calls in flight finish, for at most `grace` seconds."""
        with anyio.move_on_after(grace):
            while self.calls_in_flight:
                self._idle = anyio.Event()
                await self._idle.wait()
        if self.calls_in_flight:
            logger.warning("stopping with %d call(s) still in flight", self.calls_in_flight)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            if not is_call(scope):
                await self.asgi(scope, receive, send)
                return
            self.calls_in_flight += 1
            try:
                await self.asgi(scope, receive, send)
            finally:
                self.calls_in_flight -= 1
                if not self.calls_in_flight and self._idle is not None:
                    self._idle.set()
            return

        started = False

        async def send_without_traceback(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "lifespan.startup.complete"
            # Starlette reports a failed start with the whole traceback, which uvicorn logs.
            if message["type"] == "lifespan.startup.failed":
                message = {"type": "lifespan.startup.failed", "message": ""}
            await send(message)

        try:
            await self.asgi(scope, receive, send_without_traceback)
        except Exception as exc:
            mistake = _config_error_in(exc)
            if started or mistake is None:
                if not started:
                    logger.error("the server could not start", exc_info=exc)
                raise
            self.startup_error = mistake

    def stop(self) -> None:
        """Ask the running server to drain and stop, as SIGTERM does."""
        if self._web is not None:
            self._web.should_exit = True

    @property
    def open_sessions(self) -> int:
        return 0 if self.server.settings.stateless else sdk.open_sessions(self.server.mcp.session_manager)


def mcp_endpoint(
    server: BatteriesServer, path: str
) -> tuple[ASGIApp, EventStores | None, SessionForwarder | None]:
    """`server`'s MCP endpoint at `path` (the SDK's Streamable HTTP app), its event stores, and
    with a bus, what forwards requests for sessions other replicas hold (`_transport.sessions`).

    Without sign-in and Host/Origin checks, which wrap it: a single server (`build_http_app`) and
    each mount of the bundle (`mcp-batteries serve`) build their endpoints here, so both behave
    the same. Custom routes (`/healthz`) must be registered before.
    """
    s = server.settings
    app: ASGIApp = server.mcp.streamable_http_app(
        streamable_http_path=path,
        stateless_http=s.stateless,
        # Resumable SSE (priming event, ids, a retry hint): a dropped connection loses nothing.
        # The store is per session (below), not the manager's one store for every session.
        event_store=None,
        retry_interval=None if s.stateless else SSE_RETRY_MS,
        session_idle_timeout=s.session_idle_timeout or None,
        max_sessions=s.max_sessions,
        # HostGuard does the Host/Origin checks (exactly); the SDK keeps its Content-Type check.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=s.host,
    )
    events = None
    if not s.stateless:
        events = EventStores()
        sdk.use_session_event_stores(server.mcp.session_manager, events)
    sdk.answer_single_replies_with_json(
        server.mcp.session_manager, partial(single_reply, stateless=s.stateless)
    )
    forwarder = None
    if s.bus and not s.stateless:
        # Records say where callers' requests (and their tokens) go: sealed under keys every
        # replica shares, or not written at all (`_transport/sessions.py`).
        keys = load_keys(s.request_state_key_file)
        if keys:
            registry = registry_for(s.bus, s.bus_channel, idle_timeout=s.session_idle_timeout, keys=keys)
            app = forwarder = SessionForwarder(app, server.mcp.session_manager, registry)
        else:
            logger.warning(
                "%s: handshake-era sessions are not forwarded between replicas: give every replica the "
                "same request-state key (request_state_key_file, or %s) so they can trust each "
                "other's session records; until then route those clients with stickiness",
                s.server_name,
                KEY_ENV,
            )
    return app, events, forwarder


def single_reply(scope: Scope, *, stateless: bool) -> bool:
    """Whether this POST is answered by its result alone, so one `application/json` body carries
    it: no SSE stream, its priming event and its task group (bench/http_calls.py: -25 to -40 %
    of the server's CPU per cheap call).

    A request whose only message back is its result: one that asks for no progress
    (`_meta.progressToken`), outside a handshake-era session (whose calls may send the client
    requests and notifications on their stream), and not a `subscriptions/listen` stream. The
    server sends nothing else tied to a request: change notifications go to sessions' and
    listeners' own streams, and stateless HTTP has none (`BatteriesServer.legacy_notifications`).
    Both answers are the spec's choice to make; a client must accept both.
    """
    message = scope.get(FRAME_SCOPE_KEY)
    if not isinstance(message, JSONRPCRequest) or message.method == "subscriptions/listen":
        return False
    if not stateless and not _modern_era(scope):
        return False
    meta = (message.params or {}).get("_meta")
    return not (isinstance(meta, dict) and "progressToken" in meta)


def _modern_era(scope: Scope) -> bool:
    """Routed as a 2026-07-28 request: a protocol version header that no handshake era names (the
    SDK's own routing rule)."""
    for key, value in scope.get("headers", ()):
        if key == b"mcp-protocol-version":
            return value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
    return False


def build_http_app(server: BatteriesServer) -> HttpApp:
    """The ASGI app for `server`: MCP at `settings.path`, `/healthz`, auth when configured."""
    s = server.settings

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "server": server.mcp.name, "version": server.mcp.version})

    server.mcp.custom_route("/healthz", methods=["GET"])(healthz)
    # Metrics, audit, limits, traces (mcp_batteries._ops); /metrics is behind the sign-in.
    ops = Ops(s)
    if ops.metrics is not None:
        server.mcp.custom_route("/metrics", methods=["GET"])(ops.metrics_route)
    endpoint, events, forwarder = mcp_endpoint(server, s.path)
    ops.attach(server, event_bytes=(lambda: events.total_bytes) if events is not None else None)
    app = ops.wrap(endpoint, server)
    # Authentication (mcp_batteries._signin.auth): static token, tokens file and/or OAuth; refuses a
    # non-loopback bind without any of them.
    authenticated = authenticate(
        app, s, resource_path=s.path, writing_tools=server.writing_tools, on_refusal=ops.auth_refused
    )
    # Outermost: a request for a foreign Host or Origin is refused before anything else runs.
    # A malformed --allowed-hosts/--allowed-origins entry is a ConfigError here.
    guard = HostGuard(authenticated, allowed_hosts=s.allowed_hosts, allowed_origins=s.allowed_origins)
    return HttpApp(
        server, guard, events, guard, authenticated=authenticated is not app, ops=ops, forwarder=forwarder
    )


def _config_error_in(exc: BaseException) -> ConfigError | None:
    if isinstance(exc, ConfigError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _config_error_in(inner)
            if found is not None:
                return found
    return None


# -- binding -----------------------------------------------------------------------------------


def bind_sockets(settings: ServerSettings) -> list[socket.socket]:
    """Listening sockets for `--host`/`--port`, or a ConfigError saying what is wrong and what to do.

    Binds every address the host name resolves to (IPv4 and IPv6 for `localhost`), like
    asyncio; an address family the machine lacks is skipped, a port in use is an error.
    """
    host, port = settings.host, settings.port
    try:
        infos = socket.getaddrinfo(
            None if host in ("", "*") else host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ConfigError(
            f"--host {host}: cannot resolve this name ({exc.strerror}); give a name or address of this "
            "machine, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
        ) from None
    sockets: list[socket.socket] = []
    first_error: OSError | None = None
    seen: set[tuple[int, object]] = set()
    for family, kind, proto, _, address in infos:
        if (family, address) in seen:
            continue
        seen.add((family, address))
        if sockets and port == 0:
            address = (address[0], sockets[0].getsockname()[1], *address[2:])  # one free port for all
        try:
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            first_error = first_error or exc
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE or exc.errno == errno.EACCES:
                for bound in sockets:
                    bound.close()
                raise ConfigError(_bind_error(host, port, exc)) from None
            first_error = first_error or exc
            continue
        sockets.append(sock)
    if not sockets:
        raise ConfigError(_bind_error(host, port, first_error))
    return sockets


def _bind_error(host: str, port: int, exc: OSError | None) -> str:
    reason = exc.strerror if exc is not None and exc.strerror else str(exc)
    code = exc.errno if exc is not None else None
    if code == errno.EADDRINUSE:
        return (
            f"--port {port}: {_display_host(host)}:{port} is already in use (is another server running?); "
            "choose another --port, or --port 0 for any free one"
        )
    if code == errno.EACCES:
        return (
            f"--port {port}: permission denied ({reason}); ports below 1024 need privileges, "
            "use 1024 or above"
        )
    if code == errno.EADDRNOTAVAIL:
        return (
            f"--host {host}: not an address of this machine ({reason}); use 127.0.0.1 (this machine only), "
            "0.0.0.0 (every interface) or one of this machine's own addresses"
        )
    return f"--host {host} --port {port}: cannot listen there ({reason})"


# -- the banner --------------------------------------------------------------------------------


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _local_host(bound: str) -> str:
    """A host a person on this machine can open: loopback for a wildcard bind, else the bind host."""
    if bound in WILDCARD_HOSTS:
        return "[::1]" if bound == "::" else "127.0.0.1"
    return _display_host(bound)


def http_banner(app: HttpApp, port: int) -> str:
    server, s = app.server, app.server.settings
    base = f"http://{_local_host(s.host)}:{port}"
    mode = "stateless" if s.stateless else "stateful sessions"
    auth = "authentication required" if app.authenticated else "no authentication"
    lines = [
        f"{server.mcp.name} {server.mcp.version}: MCP over Streamable HTTP at {base}{s.path} "
        f"({mode}, {auth}); health check at {base}/healthz. Ctrl-C stops it."
    ]
    if s.host in WILDCARD_HOSTS:
        name = socket.gethostname().lower() or "THIS-HOST"
        remote = f"  listening on every interface: other machines use http://{name}:{port}{s.path}"
        authority = parse_host(f"{name}:{port}")
        if authority is None or not app.guard.host_allowed(str(authority)):
            remote += f" (add --allowed-hosts '{name}:*' so that name is accepted)"
        lines.append(remote)
    elif not s.is_loopback and not s.allowed_hosts:
        lines.append(
            "  note: only loopback Host headers are accepted; add --allowed-hosts 'NAME:*' for the name "
            "remote clients use"
        )
    return "\n".join(lines)


# -- serving -----------------------------------------------------------------------------------


def uvicorn_config(app: ASGIApp, settings: ServerSettings) -> tuple[uvicorn.Config, ConnectionTable]:
    """uvicorn's configuration for `app` with the connection limits `settings` ask for (a single
    server's and the bundle's), and the table of the connections it will serve."""
    import uvicorn  # only HTTP needs it; stdio servers start ~0.1 s sooner without it

    explicit = "max_connections" in settings.model_fields_set
    max_connections, warning = connection_budget(settings.max_connections, explicit=explicit)
    if warning is not None:
        logger.warning(warning)
    limits = ConnectionLimits(
        max_connections=max_connections,
        keep_alive_timeout=settings.keep_alive_timeout,
        request_timeout=settings.request_timeout,
    )
    table = ConnectionTable(limits)
    log_accept_errors_sparingly(asyncio.get_running_loop())
    config = uvicorn.Config(
        app,
        log_level=settings.log_level,
        lifespan="on",
        # uvicorn's own logging setup would give its loggers handlers of their own, past the
        # redaction and the trace filter on the root handler (`_transport/console.py`).
        log_config=None,
        access_log=False,
        http=guarded_protocol(table),
        timeout_keep_alive=keep_alive_for_uvicorn(limits),
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return config, table


_LISTEN_METHOD = b"subscriptions/listen"


def is_call(scope: Scope) -> bool:
    """A request that must be answered before shutdown: a POST that is not a listen stream."""
    if scope.get("type") != "http" or scope.get("method") != "POST":
        return False
    return all(not (key == b"mcp-method" and value == _LISTEN_METHOD) for key, value in scope["headers"])


def draining_server(config: uvicorn.Config, drain: Callable[[], Awaitable[None]]) -> uvicorn.Server:
    """A uvicorn server that shuts down in the order that loses nothing.

    uvicorn waits for open connections before it shuts the app down, and an open event stream
    never ends by itself; sse-starlette (under the SDK's SSE responses) ends every stream, calls in
    flight included, the moment uvicorn sees the signal. So its automatic drain is off while we
    serve; on shutdown: stop accepting, `drain()` (calls in flight finish), end the streams that are
    left, then let uvicorn close the app (its sessions and services).
    """
    import uvicorn
    from sse_starlette.sse import AppStatus

    class DrainingServer(uvicorn.Server):
        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            AppStatus.enable_automatic_graceful_drain = False
            try:
                await super().serve(sockets)
            finally:
                AppStatus.should_exit = False  # process-wide: a later server must start afresh
                AppStatus.enable_automatic_graceful_drain = True

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for listener in self.servers:
                listener.close()
            await drain()
            AppStatus.should_exit = True
            await super().shutdown(sockets)

    return DrainingServer(config)


async def serve_http(
    server: BatteriesServer,
    app: HttpApp,
    *,
    sockets: list[socket.socket] | None = None,
    on_started: Callable[[int], Awaitable[None]] | None = None,
) -> None:

    s = server.settings
    if sockets is None:
        sockets = bind_sockets(s)
    config, app.connections = uvicorn_config(app, s)
    if app.forwarder is not None:
        port = sockets[0].getsockname()[1]
        app.forwarder.advertise_url = s.advertise_url or default_advertise_url(s.host, port)
    web = app._web = draining_server(config, app.drain)

    def not_after_a_reported_mistake(record: logging.LogRecord) -> bool:
        # The mistake itself is the one line the person sees (see HttpApp.startup_error).
        return app.startup_error is None or not record.getMessage().startswith("Application startup failed")

    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(not_after_a_reported_mistake)
    try:
        if app.ops is not None:
            announce_metrics_listener(app.ops.start_metrics_listener())
        await _serve_until_stopped(web, app, sockets, on_started)
    finally:
        uvicorn_log.removeFilter(not_after_a_reported_mistake)
        if app.ops is not None:
            app.ops.close()
        if app.forwarder is not None:
            await app.forwarder.close()


def announce_metrics_listener(listening: tuple[str, int] | None) -> None:
    """One line for `--metrics-port` (before the banner, so whoever waits for it has both)."""
    if listening is not None:
        host, port = listening
        say(f"metrics without sign-in (--metrics-port): http://{_display_host(host)}:{port}/metrics")


async def _serve_until_stopped(
    web: uvicorn.Server,
    app: HttpApp,
    sockets: list[socket.socket],
    on_started: Callable[[int], Awaitable[None]] | None,
) -> None:
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            # uvicorn offers a flag, not an event, for "listening".
            while not web.started:  # noqa: ASYNC110
                await anyio.sleep(0.02)
            port = sockets[0].getsockname()[1]
            say(http_banner(app, port))
            if on_started is not None:
                await on_started(port)

        tg.start_soon(announce)
        try:
            await web.serve(sockets=sockets)  # uvicorn handles SIGINT/SIGTERM itself: it drains and exits
        except SystemExit:
            if app.startup_error is not None:
                raise app.startup_error from None
            raise
        tg.cancel_scope.cancel()
