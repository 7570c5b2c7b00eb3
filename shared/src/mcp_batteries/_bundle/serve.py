"""`mcp-batteries serve`: every installed server (or those named) in one uvicorn process.

    argv -> BundleConfig (configfile.py) -> one BatteriesServer per server -> BundleApp (app.py)
         -> uvicorn, until SIGINT/SIGTERM: new calls refused, calls in flight finish (bounded by
            --shutdown-grace), sessions and services close.

Configuration mistakes (an unknown server or key, a bad value, a server that refuses its own
settings, sign-in that cannot work) are one line on stderr and exit status 2. A server whose
services fail when it starts is not a configuration mistake: it is reported by `/status` and
answers 503 while the others serve.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from mcp_batteries._bundle.app import BundleApp, Mount
from mcp_batteries._bundle.configfile import BundleConfig, BundleSettings, parse_serve_args
from mcp_batteries._core.cli import fail
from mcp_batteries._ops.observe import Ops
from mcp_batteries._ops.tracing import start_export
from mcp_batteries._platform.signals import on_reopen_signal
from mcp_batteries._signin.auth import TOKEN_ENV, build_authenticator
from mcp_batteries._transport.console import configure_logging, say, tune_gc
from mcp_batteries._transport.http import (
    announce_metrics_listener,
    bind_sockets,
    draining_server,
    mcp_endpoint,
    uvicorn_config,
)
from mcp_batteries._transport.sessions import default_advertise_url
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    import socket

    from mcp_batteries._entry.definition import ServerDefinition

__all__ = ["build_bundle", "serve_bundle", "serve_main"]

logger = logging.getLogger(__name__)


def _mount(definition: ServerDefinition[Any], settings: Any, ops: Ops) -> Mount:
    path = f"/{definition.name}/mcp"
    try:
        server = definition.build_server(settings)
        server.check_tool_lists()
    except ConfigError as exc:
        raise ConfigError(f"[{definition.name}] {exc}") from None
    except Exception as exc:
        # A server package that cannot even be built (a bug, a missing optional dependency) is
        # that server's failure, not the bundle's.
        logger.error("%s could not be built", definition.name, exc_info=True)
        return Mount.failed(definition, path, f"could not be built: {type(exc).__name__}: {exc}")
    # The same endpoint a single server serves (event store per session, idle expiry, session cap).
    endpoint, events, forwarder = mcp_endpoint(server, path)
    # Metrics, audit, limits and traces (mcp_batteries._ops), one `Ops` for the whole bundle.
    ops.attach(server, event_bytes=(lambda: events.total_bytes) if events is not None else None)
    endpoint = ops.wrap(endpoint, server)
    return Mount(
        definition=definition, server=server, path=path, endpoint=endpoint, events=events, forwarder=forwarder
    )


def build_bundle(config: BundleConfig) -> BundleApp:
    """The bundle's app: a mount per server, one authenticator for all; ConfigError for mistakes."""
    settings = config.settings
    authenticator = build_authenticator(settings)
    if authenticator is None and not settings.is_loopback and not settings.insecure_no_auth:
        raise ConfigError(
            f"refusing to serve {settings.host} without authentication: set {TOKEN_ENV}, "
            "--auth-token-file, --tokens-file or --oauth-issuer, "
            "or pass --insecure-no-auth if a proxy in front authenticates"
        )
    ops = Ops(settings, identity_limits=config.identities)
    mounts = [
        _mount(definition, server_settings, ops) for definition, server_settings in config.servers.values()
    ]
    return BundleApp(
        mounts,
        authenticator=authenticator,
        ops=ops,
        startup_timeout=settings.startup_timeout,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )


def _display_host(host: str) -> str:
    if host in ("0.0.0.0", "", "*"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def bundle_banner(bundle: BundleApp, settings: BundleSettings, port: int) -> str:
    base = f"http://{_display_host(settings.host)}:{port}"
    mode = "stateless" if settings.stateless else "stateful sessions"
    auth = "sign-in required" if bundle.authenticator is not None else "no authentication"
    width = max(len(mount.name) for mount in bundle.mounts)
    url_width = max(len(base + mount.path) for mount in bundle.mounts)
    lines = [
        f"mcp-batteries {bundle.version}: {len(bundle.mounts)} server(s) over Streamable HTTP on {base} "
        f"({mode}, {auth}); status at {base}/status, health check at {base}/healthz. Ctrl-C stops it."
    ]
    for mount in bundle.mounts:
        state = mount.state if mount.reason is None else mount.reason
        lines.append(f"  {mount.name.ljust(width)}  {(base + mount.path).ljust(url_width)}  {state}")
    if not settings.is_loopback and not settings.allowed_hosts:
        lines.append(
            "  note: only loopback Host headers are accepted; add --allowed-hosts NAME:* for the name "
            "remote clients use"
        )
    return "\n".join(lines)


async def serve_bundle(
    bundle: BundleApp,
    settings: BundleSettings,
    *,
    on_started: Callable[[int], Awaitable[None]] | None = None,
    stop: anyio.Event | None = None,
    sockets: list[socket.socket] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (or `stop`, for tests and benchmarks), then drain and return.

    The listener is a single server's (`mcp_batteries._transport.http`): the same sockets, connection limits
    and timeouts; Host/Origin checks wrap the whole bundle (`BundleApp.asgi`).
    """
    listening = sockets if sockets is not None else bind_sockets(settings)
    bundle.advertise(
        settings.advertise_url or default_advertise_url(settings.host, listening[0].getsockname()[1])
    )
    config, _ = uvicorn_config(bundle.asgi, settings)
    web = draining_server(config, partial(bundle.drain, settings.shutdown_grace))
    if bundle.ops is not None:
        announce_metrics_listener(bundle.ops.start_metrics_listener())
    try:
        await _serve(web, bundle, settings, listening, on_started, stop)
    finally:
        if bundle.ops is not None:
            bundle.ops.stop_metrics_listener()


async def _serve(
    web: Any,
    bundle: BundleApp,
    settings: BundleSettings,
    listening: list[socket.socket],
    on_started: Callable[[int], Awaitable[None]] | None,
    stop: anyio.Event | None,
) -> None:
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            while not web.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await anyio.sleep(0.02)
            port = listening[0].getsockname()[1]
            say(bundle_banner(bundle, settings, port))
            if on_started is not None:
                await on_started(port)

        async def stop_when_asked(event: anyio.Event) -> None:
            await event.wait()
            web.should_exit = True

        tg.start_soon(announce)
        if stop is not None:
            tg.start_soon(stop_when_asked, stop)
        await web.serve(sockets=listening)  # uvicorn handles SIGINT/SIGTERM: it calls shutdown() above
        tg.cancel_scope.cancel()


def _exit_cleanly(signum: int, frame: object) -> None:
    """uvicorn re-raises the signal after draining; with this handler the exit status is 0."""


def serve_main(
    argv: Sequence[str],
    *,
    prog: str = "mcp-batteries serve",
    installed: Mapping[str, ServerDefinition[Any]] | None = None,
) -> None:
    """`mcp-batteries serve`: parse, build, serve; configuration mistakes exit 2."""
    config = parse_serve_args(argv, prog=prog, installed=installed)
    configure_logging(config.settings.log_level)
    try:
        start_export("mcp-batteries")  # spans by OTLP when OTEL_* asks (nothing imported otherwise)
        bundle = build_bundle(config)
        sockets = bind_sockets(config.settings)  # a port in use is one line, before anything starts
        tune_gc()
        if bundle.ops is not None:
            on_reopen_signal(bundle.ops.reopen_audit_log)  # logrotate's SIGHUP
        signal.signal(signal.SIGTERM, _exit_cleanly)
        anyio.run(partial(serve_bundle, bundle, config.settings, sockets=sockets))
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    except KeyboardInterrupt:
        pass
