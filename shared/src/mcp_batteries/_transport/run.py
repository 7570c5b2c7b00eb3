"""Running a built server on the transport its settings choose, until the client or a signal ends it.

`run` is the last step of a console script (`ServerDefinition.main`: argv -> settings -> server
-> here): logging to stderr, the start-up checks, then stdio or Streamable HTTP. The transports
are imported only when chosen, so a stdio server never loads the HTTP stack.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

import anyio

from mcp_batteries._ops.tracing import start_export
from mcp_batteries._platform.signals import on_reopen_signal
from mcp_batteries._transport.console import configure_logging, tune_gc

if TYPE_CHECKING:
    from mcp_batteries._core.app import BatteriesServer

__all__ = ["run"]


def _exit_cleanly(signum: int, frame: object) -> None:
    """Runs after uvicorn has drained: returning lets `serve()` finish, so the exit status is 0."""


def run(server: BatteriesServer, *, script: str) -> None:
    """Serve until the client hangs up or a signal arrives. Configuration errors raise ConfigError."""
    configure_logging(server.settings.log_level)
    server.check_tool_lists()
    tune_gc()
    # Spans exported by OTLP when the OTEL_* variables ask for it (nothing imported otherwise).
    exporting = start_export(server.mcp.name)
    try:
        if server.settings.transport == "http":
            from functools import partial

            from mcp_batteries._transport.http import bind_sockets, build_http_app, serve_http

            sockets = bind_sockets(server.settings)  # a bad --host/--port: one line, exit 2
            app = build_http_app(server)
            if app.ops is not None:
                on_reopen_signal(app.ops.reopen_audit_log)  # logrotate's SIGHUP
            # uvicorn drains on SIGTERM, restores the previous handler and re-raises the signal;
            # with this handler in place that ends the process with status 0, not -15.
            signal.signal(signal.SIGTERM, _exit_cleanly)
            anyio.run(partial(serve_http, server, app, sockets=sockets))
        else:
            from mcp_batteries._transport.stdio import serve_stdio

            if exporting:  # over HTTP, Ops names the spans along with everything else it does
                from mcp_batteries._ops.observe import attach_span_names

                attach_span_names(server)
            anyio.run(serve_stdio, server, script)
    except KeyboardInterrupt:
        pass
