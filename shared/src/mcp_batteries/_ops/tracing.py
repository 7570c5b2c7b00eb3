"""Traces: the SDK's own OpenTelemetry spans, parented by the caller and exported by OTLP.

The SDK opens a span for every request (`mcp.server._otel.OpenTelemetryMiddleware`), parented by
the trace context in the request's `_meta`; `observe` adds the server, tool, outcome and caller
to it (never argument values). Here:

- `TraceHeaders`: a W3C `traceparent` (and `tracestate`) HTTP header becomes the current context
  for the request, so the SDK's span is its child when `_meta` carries none (the SDK hands the
  request's context variables to the handler). A request without the header costs one scan of
  its headers.
- `start_export()`: when the standard variables ask for OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT` or
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, with `OTEL_TRACES_EXPORTER` unset or `otlp`, and
  `OTEL_SDK_DISABLED` not `true`), installs an OpenTelemetry SDK tracer provider with a batch
  processor and the OTLP/HTTP exporter, which read the rest of `OTEL_*` themselves (headers,
  timeout, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`...). Nothing is
  imported when they do not: a stdio server starts as fast as before, and spans stay no-ops.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TraceHeaders", "export_wanted", "start_export"]

logger = logging.getLogger(__name__)

_started = False


def export_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the `OTEL_*` variables ask for spans to be exported by OTLP."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {part.strip().lower() for part in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    if "otlp" not in exporters:
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def start_export(service_name: str) -> bool:
    """Export spans by OTLP/HTTP if the environment asks for it (once per process); whether it does."""
    global _started
    if _started:
        return True
    if not export_wanted():
        return False
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    )
    if protocol != "http/protobuf":
        logger.warning(
            "OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; exporting with http/protobuf", protocol
        )
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Resource.create adds OTEL_RESOURCE_ATTRIBUTES; OTEL_SERVICE_NAME wins over our default name.
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _started = True
    logger.info("exporting traces by OTLP/HTTP")
    return True


class TraceHeaders:
    """Makes the trace context of a request's `traceparent` header current while it is served."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        carrier: dict[str, str] | None = None
        if scope["type"] == "http":
            for key, value in scope["headers"]:
                if key == b"traceparent" or key == b"tracestate":
                    carrier = carrier or {}
                    carrier[key.decode()] = bytes(value).decode("latin-1")
        if carrier is None or "traceparent" not in carrier:
            await self.app(scope, receive, send)
            return
        # Imported here: a stdio server that never sees a header never pays for them.
        from opentelemetry import context, propagate

        token = context.attach(propagate.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)
