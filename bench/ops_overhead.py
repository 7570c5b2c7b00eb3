"""What operating a server costs per tool call, measured in-process (no network, no contention).

    uv run --all-packages python bench/ops_overhead.py            # 20,000 calls per variant

Runs the ops middleware (`mcp_batteries._ops.observe.Ops`) around a tool call that does nothing,
under a span as the SDK opens one, and reports the process CPU time per call (export threads
included: the OTLP exporter encodes and sends in a thread of the same process, to a loopback
sink here) for: nothing, metrics, the audit line of a writing call (the default), audit of every
call, traces exported by OTLP, and everything at once. Divide by a real call's CPU
(`bench/load.py` reports `server_cpu_ms/call`, about 0.7 ms for a cheap call) for the share of
throughput it costs a CPU-bound server. `bench/load.py --only ops` measures the same end to end,
but on a shared 2-core machine its throughput figures move with the neighbours' load.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import os
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._ops.observe import Ops
from opentelemetry import trace

ARGUMENTS = {"path": "/srv/docs/notes/2026/plan.md", "content": "x" * 200, "create_parents": True}


class BenchSettings(ServerSettings):
    server_name = "bench"
    distribution = "mcp-batteries"


def build(settings: BenchSettings) -> BatteriesServer:
    server = BatteriesServer(settings, instructions="bench")

    @server.tool(title="Write", read_only=False)
    async def write_file(path: str, content: str, create_parents: bool = False) -> str:
        """Write."""
        return "ok"

    @server.tool(title="Read", read_only=True)
    async def read_file(path: str) -> str:
        """Read."""
        return "ok"

    return server


def sink() -> str:
    class Sink(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


async def run(variant: str, calls: int, work: Path) -> float:
    """CPU seconds per call for `variant`."""
    options: dict[str, Any] = {"transport": "http", "metrics": "metrics" in variant or variant == "all"}
    if "audit" in variant or variant == "all":
        options["audit_log"] = work / f"{variant}.jsonl"
        options["audit_all"] = variant == "audit-all"
    server = build(BenchSettings(**options))
    ops = Ops(server.settings) if variant != "none" else None
    tool = "read_file" if variant == "audit-all" else "write_file"
    context = SimpleNamespace(
        method="tools/call", params={"name": tool, "arguments": ARGUMENTS}, request_id=1
    )
    result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    tracer = trace.get_tracer("bench")

    async def call_next(ctx: Any) -> Any:
        return result

    observe = (lambda ctx, nxt: ops._observe(server, "bench", ctx, nxt)) if ops is not None else None
    started = time.process_time()
    for _ in range(calls):
        with tracer.start_as_current_span(
            "tools/call write_file", attributes={"mcp.method.name": "tools/call"}
        ):
            if observe is not None:
                await observe(context, call_next)
            else:
                await call_next(context)
    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush()
    spent = time.process_time() - started
    if ops is not None:
        ops.close()
    return spent / calls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument(
        "--call-ms", type=float, default=0.7, help="a real call's server CPU (default 0.7 ms)"
    )
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ops-overhead-"))
    rows = []
    for variant in ("none", "metrics", "audit", "audit-all"):
        rows.append((variant, asyncio.run(run(variant, options.calls, work))))
    # Tracing last: the provider is process-wide once installed.
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink()
    # Room for every span of a run: a dropped span would not be encoded, and look free.
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str(options.calls * 2))
    from mcp_batteries._ops.tracing import start_export

    start_export("bench")
    rows.append(("traces", asyncio.run(run("traces", options.calls, work))))
    rows.append(("all", asyncio.run(run("all", options.calls, work))))
    base = rows[0][1]
    print(f"{options.calls} calls per variant; a real call's CPU taken as {options.call_ms} ms")
    print(f"{'variant':>10} | {'cpu us/call':>11} | {'added us':>8} | {'share of a call':>15}")
    for variant, seconds in rows:
        added = (seconds - base) * 1e6
        print(
            f"{variant:>10} | {seconds * 1e6:11.1f} | {added:8.1f} | {added / (options.call_ms * 10):14.1f}%"
        )


if __name__ == "__main__":
    main()
