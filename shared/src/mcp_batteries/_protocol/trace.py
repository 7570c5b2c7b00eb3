"""The W3C trace context a request carries in `_meta` (`traceparent`, `tracestate`), in our logs.

A client that traces its work puts `traceparent` in a request's `_meta` (both protocol eras).
The SDK's OpenTelemetry middleware, which wraps every request, makes that context current for the
request's handler and everything it starts (tasks, worker threads, a task's background work):
with only `opentelemetry-api` installed the current span *is* the client's, and with an
OpenTelemetry SDK configured it is the server's span under it, in the same trace.

`current_trace()` reads it for any code that wants to correlate (metrics, audit, exporters), and
`TraceLogFilter` stamps every log record with it, so a request's log lines carry its trace id:

    2026-07-28 10:00:00,000 INFO mcp.server.mcpserver.server: trace=4bf92f3577b34da6a3ce929d0e0e4736 Tool ...
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from opentelemetry import trace

__all__ = ["TraceContext", "TraceLogFilter", "current_trace"]


@dataclass(frozen=True)
class TraceContext:
    """The current trace and span ids, as the lowercase hex `traceparent` carries them."""

    trace_id: str
    span_id: str


def current_trace() -> TraceContext | None:
    """The trace of the request being handled, or None outside a traced request."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return TraceContext(trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id))


class TraceLogFilter(logging.Filter):
    """Adds `trace_id`, `span_id` and `trace` (" trace=<id>", or "" outside a trace) to records."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = current_trace()
        record.trace_id = current.trace_id if current else ""
        record.span_id = current.span_id if current else ""
        record.trace = f" trace={current.trace_id}" if current else ""
        return True
