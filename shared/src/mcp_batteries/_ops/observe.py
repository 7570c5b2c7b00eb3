"""`Ops`: metrics, audit, limits and traces for one HTTP app, attached to each of its servers.

    ops = Ops(settings)                          # the app's (or the bundle's) settings
    ops.attach(server, event_bytes=...)          # a middleware around every request of `server`
    endpoint = ops.wrap(endpoint, server)        # limits and traceparent, inside the sign-in
    ops.metrics_app                              # GET /metrics, behind the sign-in
    ops.start_metrics_listener()                 # --metrics-port: /metrics without sign-in

The middleware runs inside the SDK's OpenTelemetry span (it is second in the SDK's chain, so
what it sees is what the client gets): for a tool call it times the call, counts it by server,
tool and outcome, names server, tool, outcome and caller on the span, and writes the audit line
before returning the result, so the line is in the file before the reply is sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from opentelemetry import trace
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_batteries._core.identity import Caller, current_caller
from mcp_batteries._ops.audit import AuditLog, arguments_digest, collecting_changes, now_iso, shown_arguments
from mcp_batteries._ops.limits import CallerLimits
from mcp_batteries._ops.tracing import TraceHeaders
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.trace import current_trace
from mcp_batteries._safety.names import scrub
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    from mcp_batteries._core.app import BatteriesServer
    from mcp_batteries._core.settings import ServerSettings
    from mcp_batteries._ops.metrics import Metrics

__all__ = ["Ops", "attach_span_names"]

logger = logging.getLogger(__name__)

MAX_AUDITED_NAME = 200


class Ops:
    """What an operator sees and governs of one HTTP app (see the module docstring)."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        identity_limits: Mapping[str, tuple[float | None, int | None]] | None = None,
    ) -> None:
        self.settings = settings
        #: subject -> (rate, calls in flight): the bundle's `[identities."<subject>"]`.
        self.identity_limits = dict(identity_limits or {})
        self.metrics: Metrics | None = None
        if settings.metrics:
            from mcp_batteries._ops.metrics import Metrics  # prometheus-client: HTTP only

            self.metrics = Metrics()
            self.metrics.add_reading("mcp_sessions", "Open stateful sessions.", self._sessions)
            self.metrics.add_reading(
                "mcp_event_store_bytes", "Bytes kept for resumable event streams.", self._event_bytes
            )
            self.metrics.add_reading(
                "mcp_watched_paths",
                "Files and directories watched for live resources (subscribed and listed).",
                partial(self._watched, 0),
            )
            self.metrics.add_reading(
                "mcp_os_watches",
                "OS file watches (directories or trees) covering the watched paths.",
                partial(self._watched, 1),
            )
        self.audit: AuditLog | None = None
        if settings.audit_log is not None:
            self.audit = AuditLog(
                settings.audit_log, fsync=settings.audit_fsync, max_bytes=settings.audit_max_bytes
            )
        self.audit_all = settings.audit_all
        if settings.metrics_port is not None and self.metrics is None:
            raise ConfigError("--metrics-port serves the metrics, which --no-metrics turned off: drop one")
        self._listener: Any = None
        #: (host, port) of the `--metrics-port` listener while it runs.
        self.metrics_address: tuple[str, int] | None = None
        self._servers: list[tuple[str, BatteriesServer, Callable[[], int] | None]] = []

    # -- wiring ---------------------------------------------------------------------------------
    def attach(self, server: BatteriesServer, *, event_bytes: Callable[[], int] | None = None) -> None:
        """Observe every request `server` answers (see the module docstring)."""
        label = server.settings.server_name
        self._servers.append((label, server, event_bytes))
        # After the SDK's span (index 0), before everything of ours.
        server.mcp.middleware.insert(1, partial(self._observe, server, label))

    def wrap(self, endpoint: ASGIApp, server: BatteriesServer) -> ASGIApp:
        """`server`'s MCP endpoint with the per-caller limits and traceparent headers; goes inside
        the sign-in (the limits need to know who calls)."""
        s = server.settings
        app = endpoint
        if s.rate_limit or s.max_calls_in_flight or s.tokens_file is not None or self.identity_limits:
            app = CallerLimits(
                app,
                server=s.server_name,
                rate=s.rate_limit,
                in_flight=s.max_calls_in_flight,
                on_refusal=partial(self._limited, s.server_name),
                overrides=self.identity_limits,
            )
        return TraceHeaders(app)

    def auth_refused(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.auth_failed(reason)

    def reopen_audit_log(self) -> None:
        if self.audit is not None:
            self.audit.request_reopen()

    def start_metrics_listener(self) -> tuple[str, int] | None:
        """With `--metrics-port`: serve the metrics, without sign-in, on their own listener (the
        client library's threaded server; a scrape reads counters and sizes, which is safe from
        its thread). Returns the (host, port) it listens on, or None when not asked."""
        s = self.settings
        if s.metrics_port is None or self.metrics is None or self._listener is not None:
            return None
        from prometheus_client import start_http_server

        try:
            self._listener, _ = start_http_server(
                s.metrics_port, addr=s.metrics_host, registry=self.metrics.registry
            )
        except OSError as exc:
            raise ConfigError(
                f"--metrics-host {s.metrics_host} --metrics-port {s.metrics_port}: cannot listen there "
                f"({exc.strerror or exc}); choose another --metrics-port, or 0 for any free one"
            ) from None
        self.metrics_address = (s.metrics_host, int(self._listener.server_port))
        return self.metrics_address

    def stop_metrics_listener(self) -> None:
        self.metrics_address = None
        if self._listener is not None:
            listener, self._listener = self._listener, None
            listener.shutdown()
            listener.server_close()

    def close(self) -> None:
        self.stop_metrics_listener()
        if self.audit is not None:
            self.audit.close()

    async def metrics_route(self, request: Request) -> Response:
        """`GET /metrics` as a Starlette route (a single server registers it on its app)."""
        from mcp_batteries._ops.metrics import CONTENT_TYPE

        assert self.metrics is not None
        return Response(
            self.metrics.exposition(), headers={"content-type": CONTENT_TYPE, "cache-control": "no-store"}
        )

    async def metrics_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`GET /metrics` in the Prometheus text format."""
        if self.metrics is None or scope.get("method") not in ("GET", "HEAD"):
            status, body, kind = (404 if self.metrics is None else 405), b"", b"text/plain"
        else:
            from mcp_batteries._ops.metrics import CONTENT_TYPE

            status, body, kind = 200, self.metrics.exposition(), CONTENT_TYPE.encode()
        headers = [
            (b"content-type", kind),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body if scope.get("method") != "HEAD" else b""})

    # -- readings -------------------------------------------------------------------------------
    def _sessions(self) -> Iterable[tuple[str, float]]:
        for label, server, _ in self._servers:
            if server.settings.stateless:
                yield label, 0.0
                continue
            try:
                yield label, float(sdk.open_sessions(server.mcp.session_manager))
            except Exception:  # not serving yet (the bundle's mount still starting)
                yield label, 0.0

    def _event_bytes(self) -> Iterable[tuple[str, float]]:
        for label, _, read in self._servers:
            yield label, float(read() if read is not None else 0)

    def _watched(self, which: int, /) -> Iterable[tuple[str, float]]:
        for label, server, _ in self._servers:
            yield label, float(sum(read()[which] for read in server.watch_readings))

    def _limited(self, server: str, limit: str) -> None:
        if self.metrics is not None:
            self.metrics.limited.labels(server, limit).inc()

    def _write_audit(self, record: dict[str, Any]) -> None:
        assert self.audit is not None
        try:
            self.audit.write(record)
        except OSError as exc:
            # The call has happened either way: answer it, and say loudly what the trail lacks.
            logger.error(
                "could not write the audit line for %s:%s by %s: %s",
                record["server"],
                record["tool"],
                record["caller"],
                exc,
            )

    # -- the middleware -------------------------------------------------------------------------
    async def _observe(self, server: BatteriesServer, label: str, ctx: Any, call_next: Any) -> Any:
        metrics = self.metrics
        if ctx.method != "tools/call":
            if metrics is not None and ctx.request_id is not None:
                metrics.request(label, ctx.method)
            return await call_next(ctx)
        params = ctx.params or {}
        name = params.get("name")
        name = name if isinstance(name, str) else ""
        known = sdk.has_tool(server.mcp, name)
        tool = name if known else "unknown"  # a label: only names the server registered
        caller = current_caller()
        audited = self.audit is not None and (self.audit_all or name in server.writing_tools)
        changes = collecting_changes() if audited else None
        outcome = _Outcome()
        started = time.perf_counter()
        in_flight = metrics.calls_in_flight(label) if metrics is not None else None
        if in_flight is not None:
            in_flight.inc()
        try:
            return await _classified_call(server, caller, name, known, call_next, ctx, outcome)
        finally:
            elapsed = time.perf_counter() - started
            if metrics is not None and in_flight is not None:
                in_flight.dec()
                metrics.tool_call(label, tool, outcome.value, elapsed)
            _name_span(label, tool, outcome.value, caller.subject)
            if audited and self.audit is not None:
                arguments = params.get("arguments") or {}
                traced = current_trace()
                self._write_audit(
                    {
                        "time": now_iso(),
                        "caller": caller.subject,
                        "caller_name": caller.name,
                        "server": label,
                        "tool": scrub(name[:MAX_AUDITED_NAME]),
                        "arguments_sha256": arguments_digest(arguments),
                        "arguments": shown_arguments(arguments),
                        "outcome": outcome.value,
                        "duration_ms": round(elapsed * 1000, 3),
                        "trace_id": traced.trace_id if traced is not None else None,
                        "changes": changes or [],
                    }
                )


def attach_span_names(server: BatteriesServer) -> None:
    """Name the server, tool, outcome and caller on the SDK's span of each tool call, without
    the rest of `Ops`: for stdio, where spans are exported but nothing is counted or audited."""
    server.mcp.middleware.insert(1, partial(_name_spans, server, server.settings.server_name))


async def _name_spans(server: BatteriesServer, label: str, ctx: Any, call_next: Any) -> Any:
    if ctx.method != "tools/call":
        return await call_next(ctx)
    params = ctx.params or {}
    name = params.get("name")
    name = name if isinstance(name, str) else ""
    known = sdk.has_tool(server.mcp, name)
    caller = current_caller()
    outcome = _Outcome()
    try:
        return await _classified_call(server, caller, name, known, call_next, ctx, outcome)
    finally:
        _name_span(label, name if known else "unknown", outcome.value, caller.subject)


class _Outcome:
    """How a tool call ended, in the words metrics, spans and the audit trail share."""

    value = "error"


async def _classified_call(
    server: BatteriesServer,
    caller: Caller,
    name: str,
    known: bool,
    call_next: Any,
    ctx: Any,
    outcome: _Outcome,
) -> Any:
    """Call on, setting `outcome` however the call ends (the one classification of outcomes)."""
    try:
        result = await call_next(ctx)
        outcome.value = _result_outcome(result)
        return result
    except MCPError as exc:
        outcome.value = _code_outcome(exc.error.code)
        if outcome.value == "invalid_params" and known and not server.mcp.may_call(caller, name):
            outcome.value = "denied"
        raise
    except anyio.get_cancelled_exc_class():
        outcome.value = "cancelled"
        raise
    except Exception:
        outcome.value = "internal_error"
        raise


def _name_span(server: str, tool: str, outcome: str, caller: str) -> None:
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(
            {"mcp.server": server, "mcp.tool": tool, "mcp.outcome": outcome, "enduser.id": caller}
        )


def _result_outcome(result: Any) -> str:
    if isinstance(result, dict):
        if result.get("isError") is True:
            return "tool_error"
        return "task" if "task" in result else "ok"
    if getattr(result, "is_error", False) is True:
        return "tool_error"
    return "task" if getattr(result, "task", None) is not None else "ok"


def _code_outcome(code: int) -> str:
    if code == INVALID_PARAMS:
        return "invalid_params"
    return "internal_error" if code == INTERNAL_ERROR else "error"
