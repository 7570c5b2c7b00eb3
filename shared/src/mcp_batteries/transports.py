"""Running a server: the console scripts' entry, logging, and the choice of transport.

`serve_main` is what every console script runs (through `ServerDefinition.main`): argv ->
settings -> server -> stdio or Streamable HTTP. Configuration mistakes become one line on
stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

import anyio

from mcp_batteries.cli import fail, parse_settings
from mcp_batteries.errors import ConfigError
from mcp_batteries.redact import RedactingFormatter

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer
    from mcp_batteries.definition import ServerDefinition


def configure_logging(level: str) -> None:
    """Logs go to stderr, always: on stdio, stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    # Through the one redaction: no log line shows a password, whichever code wrote it.
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def say(message: str) -> None:
    """A line for a person watching the terminal (stderr, never stdout)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


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
            from functools import partial

            from mcp_batteries.http import bind_sockets, build_http_app, serve_http

            sockets = bind_sockets(server.settings)  # a bad --host/--port: one line, exit 2
            app = build_http_app(server)
            # uvicorn drains on SIGTERM, restores the previous handler and re-raises the signal;
            # with this handler in place that ends the process with status 0, not -15.
            signal.signal(signal.SIGTERM, _exit_cleanly)
            anyio.run(partial(serve_http, server, app, sockets=sockets))
        else:
            from mcp_batteries.stdio import serve_stdio

            anyio.run(serve_stdio, server, script)
    except KeyboardInterrupt:
        pass


def serve_main(definition: ServerDefinition[Any], argv: list[str] | None = None) -> None:
    """A console script's whole life: parse, build, serve; bad configuration exits 2."""
    prog = definition.prog()
    settings = parse_settings(
        definition.settings, argv, prog=prog, description=definition.description, epilog=definition.epilog()
    )
    try:
        server = definition.build_server(settings)
        run(server, script=definition.distribution)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    except BaseExceptionGroup as group:
        # A service that cannot start (a database that refuses connections) fails inside the
        # lifespan's task group: still one line for the person, not a traceback.
        config_errors, _ = group.split(ConfigError)
        if config_errors is None:
            raise
        fail(str(_first_leaf(config_errors)), prog=prog)


def _first_leaf(group: BaseExceptionGroup[ConfigError]) -> BaseException:
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first
