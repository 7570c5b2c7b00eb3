"""The trace context a request carries in `_meta` (W3C traceparent) reaches the server's log lines."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from mcp_batteries._protocol.trace import TraceLogFilter, current_trace
from mcp_batteries.testing import ERAS, Era, connect_http, http_server
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def test_records_carry_the_current_trace_and_nothing_outside_one() -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "hello", None, None)
    TraceLogFilter().filter(record)
    assert (record.trace, record.trace_id) == ("", "")
    assert current_trace() is None
    span = NonRecordingSpan(
        SpanContext(int(TRACE_ID, 16), int(SPAN_ID, 16), is_remote=True, trace_flags=TraceFlags(1))
    )
    with trace.use_span(span):
        TraceLogFilter().filter(record)
        assert current_trace() is not None
    assert (record.trace, record.trace_id, record.span_id) == (f" trace={TRACE_ID}", TRACE_ID, SPAN_ID)


@pytest.mark.parametrize("era", ERAS)
async def test_a_requests_traceparent_is_on_the_log_lines_of_its_handling(era: Era, tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    args = (str(tmp_path / "files"), "--log-level", "info")
    async with http_server("mcp-filesystem", *args, env={"HOME": str(tmp_path)}) as running:
        async with connect_http(running.url, era) as client:
            traceparent = f"00-{TRACE_ID}-{SPAN_ID}-01"
            result = await client.call_tool(
                "read_text_file", {"path": "missing.txt"}, meta={"traceparent": traceparent}
            )
            assert result.is_error
            untraced = await client.call_tool("read_text_file", {"path": "also-missing.txt"})
            assert untraced.is_error
        await running.stderr_line("also-missing.txt")  # the later call's line: both are read
        traced = [line for line in running.stderr_lines if "missing.txt" in line and "also-" not in line]
        assert traced and all(f": trace={TRACE_ID} " in line for line in traced), running.stderr_lines
        plain = [line for line in running.stderr_lines if "also-missing.txt" in line]
        assert plain and not any("trace=" in line for line in plain)
