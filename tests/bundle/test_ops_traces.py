"""Traces from a real bundle, exported by OTLP/HTTP to a receiver this test serves on 127.0.0.1:
the SDK's span for a tool call is the child of the caller's `traceparent` (HTTP header, or the
request's `_meta`) and names the server, tool, outcome and caller; and the same names on a
single server's spans over stdio."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_batteries.testing import MCP_POST_HEADERS, connect, stdio_params
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from .conftest import bundle_process

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
HEADER_PARENT = "00f067aa0ba902b7"
META_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
META_PARENT = "b7ad6b7169203331"


class Receiver:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.paths: list[str] = []
        self.arrived = threading.Condition()

    def wait_for(self, count: int, timeout: float) -> list[Span]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.spans) < count and time.monotonic() < deadline:
                self.arrived.wait(deadline - time.monotonic())
            return list(self.spans)


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Receiver]]:
    """An OTLP/HTTP trace receiver (protobuf) on a free loopback port."""
    receiver = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            with receiver.arrived:
                receiver.paths.append(self.path)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend(scope_spans.spans)
                receiver.arrived.notify_all()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", receiver
    finally:
        server.shutdown()
        server.server_close()


def modern_call(tool: str, request_id: int, meta: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                **(meta or {}),
            },
        },
    }


def attributes(span: Span) -> dict[str, str]:
    return {item.key: item.value.string_value for item in span.attributes}


def test_tool_call_spans_reach_an_otlp_receiver_parented_by_the_callers_trace(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    config = tmp_path / "bundle.toml"
    config.write_text(f'[filesystem]\ndirectories = ["{tree}"]\n')
    headers = {
        **MCP_POST_HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "list_allowed_directories",
    }
    with otlp_receiver() as (endpoint, receiver):
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "OTEL_SERVICE_NAME": "bundle-under-test",
        }
        with bundle_process("filesystem", "--config", str(config), env=env) as running:
            url = f"{running.base}/filesystem/mcp"

            async def calls() -> None:
                async with httpx2.AsyncClient(timeout=30) as http:
                    by_header = await http.post(
                        url,
                        json=modern_call("list_allowed_directories", 1),
                        headers={**headers, "traceparent": f"00-{TRACE_ID}-{HEADER_PARENT}-01"},
                    )
                    by_meta = await http.post(
                        url,
                        json=modern_call(
                            "list_allowed_directories",
                            2,
                            {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT}-01"},
                        ),
                        headers=headers,
                    )
                assert by_header.status_code == 200 and by_meta.status_code == 200

            anyio.run(calls)
            spans = receiver.wait_for(2, timeout=30)
    assert receiver.paths and all(path == "/v1/traces" for path in receiver.paths)
    tool_spans = {span.trace_id.hex(): span for span in spans if attributes(span).get("mcp.tool")}
    header_span, meta_span = tool_spans[TRACE_ID], tool_spans[META_TRACE_ID]
    assert header_span.parent_span_id.hex() == HEADER_PARENT
    assert meta_span.parent_span_id.hex() == META_PARENT
    for span in (header_span, meta_span):
        said = attributes(span)
        assert said["mcp.server"] == "filesystem"
        assert said["mcp.tool"] == "list_allowed_directories"
        assert said["mcp.outcome"] == "ok"
        assert said["enduser.id"].startswith("local:")
        assert span.kind == Span.SPAN_KIND_SERVER


def test_a_stdio_server_names_server_tool_outcome_and_caller_on_its_exported_spans(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    with otlp_receiver() as (endpoint, receiver):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}

        async def calls() -> None:
            async with connect(stdio_params("mcp-batteries-filesystem", str(tree), env=env), "legacy") as c:
                meta = {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT}-01"}
                ok = await c.call_tool("list_allowed_directories", {}, meta=meta)  # type: ignore[arg-type]
                failed = await c.call_tool("read_text_file", {"path": str(tree / "missing.txt")})
                assert not ok.is_error and failed.is_error

        anyio.run(calls)
        spans = receiver.wait_for(2, timeout=30)
    named = {attributes(span).get("mcp.tool"): span for span in spans if attributes(span).get("mcp.tool")}
    listed, read = named["list_allowed_directories"], named["read_text_file"]
    assert listed.trace_id.hex() == META_TRACE_ID and listed.parent_span_id.hex() == META_PARENT
    assert attributes(listed)["mcp.outcome"] == "ok" and attributes(read)["mcp.outcome"] == "tool_error"
    for span in (listed, read):
        said = attributes(span)
        assert said["mcp.server"] == "filesystem" and said["enduser.id"].startswith("local:")


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_export_is_on_only_when_the_standard_variables_ask_for_it(
    environ: dict[str, str], wanted: bool
) -> None:
    from mcp_batteries._ops.tracing import export_wanted

    assert export_wanted(environ) is wanted
