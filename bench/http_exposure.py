"""Figures for HTTP exposure (issue 15 items 1 and 4): event-store memory and connections held.

    uv run --all-packages python bench/http_exposure.py            # both, ~1-2 min
    uv run --all-packages python bench/http_exposure.py --sessions 500 --connections 0

1. Sessions: an in-process mcp-filesystem serves N sessions (default 2,000), each of which
   initializes, reads a 20 KB file and then either DELETEs its session (closed) or just goes
   away (abandoned, reaped by a 10 s --session-idle-timeout). Reported: the event store's bytes,
   events and sessions at the peak and afterwards.
2. Connections: mcp-filesystem runs as a subprocess under `ulimit -n 1024`; the bench opens
   1,100 idle connections and 100 slow-header ones, then times /healthz and a full MCP
   initialize + tools/call while they are held. Reported: connections the server still holds,
   how many it closed, request latencies, and the server's stderr line count.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from anyio.abc import SocketStream
from mcp_batteries._transport.events import EventStores
from mcp_batteries.testing import connect_http, http_server, serve_http_in_process
from mcp_filesystem.__main__ import definition
from mcp_filesystem.config import FilesystemSettings

PROTOCOL = "2025-11-25"
IDLE_S = 10
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def one_session(http: httpx.AsyncClient, url: str, close: bool) -> None:
    headers = {**HEADERS, "MCP-Protocol-Version": PROTOCOL}
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=headers
    )
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    call = {"name": "read_text_file", "arguments": {"path": "blob.txt"}}
    read = await http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, headers=headers
    )
    assert "xxxx" in read.text, (read.status_code, read.text[:300], opened.status_code)
    if close:
        await http.delete(url, headers=headers)


async def sessions_figure(count: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "blob.txt").write_text("x" * 20_000)
        for close in (True, False):
            await sessions_run(root, count, close)


async def sessions_run(root: str, count: int, close: bool) -> None:
    idle = 30 if close else IDLE_S
    settings = FilesystemSettings(directories=[root], session_idle_timeout=idle, max_sessions=10_000)
    server = definition.build_server(settings)
    async with serve_http_in_process(server) as (url, app):
        events: EventStores = app.events
        peak = {"bytes": 0, "sessions": 0}
        all_gone = anyio.Event()
        events.on_close.append(lambda _: all_gone.set() if events.sessions == 0 else None)
        started = time.monotonic()
        limiter = anyio.CapacityLimiter(16)

        async def run(http: httpx.AsyncClient) -> None:
            async with limiter:
                await one_session(http, url, close)
                peak["bytes"] = max(peak["bytes"], events.total_bytes)
                peak["sessions"] = max(peak["sessions"], events.sessions)

        pool = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(timeout=60, limits=pool) as http, anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(run, http)
        took = time.monotonic() - started
        after = (events.total_bytes, events.events, events.sessions, app.open_sessions)
        if not close:
            with anyio.fail_after(60):
                await all_gone.wait()
        reaped = (events.total_bytes, events.events, events.sessions, app.open_sessions)
    how = "opened, used and DELETEd" if close else "opened, used and abandoned"
    print(f"{count} sessions {how} in {took:.1f} s:")
    megabytes = peak["bytes"] / 1e6
    print(f"  event store at its peak: {megabytes:.2f} MB in {peak['sessions']} live session stores")
    print(f"  right after: {after[0]} bytes, {after[1]} events, {after[2]} stores, {after[3]} sessions")
    if not close:
        print(
            f"  after the idle timeout ({IDLE_S} s): {reaped[0]} bytes, {reaped[1]} events, "
            f"{reaped[2]} stores, {reaped[3]} sessions"
        )


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


async def _closed_by_server(stream: SocketStream) -> bool:
    with anyio.move_on_after(0.5):
        try:
            return await stream.receive() == b""
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
            return True
    return False


async def count_closed(streams: list[SocketStream]) -> int:
    closed = 0

    async def check(stream: SocketStream) -> None:
        nonlocal closed
        gone = await _closed_by_server(stream)
        closed += gone

    async with anyio.create_task_group() as tg:
        for stream in streams:
            tg.start_soon(check, stream)
    return closed


async def connections_figure(idle: int, slow: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "a.txt").write_text("a\n")
        async with http_server("mcp-batteries-filesystem", root, preexec_fn=_low_fd_limit) as running:
            host, port = "127.0.0.1", int(running.url.rsplit(":", 1)[1].split("/")[0])
            held: list[SocketStream] = []
            started = time.monotonic()
            for n in range(idle + slow):
                stream = await anyio.connect_tcp(host, port)
                if n >= idle:
                    await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                held.append(stream)
            opened = time.monotonic() - started
            closed_at_once = await count_closed(held)
            timings: dict[str, Any] = {}
            t = time.monotonic()
            async with httpx.AsyncClient(timeout=30) as http:
                ok = (await http.get(running.base_url + "/healthz")).status_code
            timings["healthz"] = (ok, time.monotonic() - t)
            t = time.monotonic()
            async with connect_http(running.url, "legacy") as client:
                result = await client.call_tool("read_text_file", {"path": "a.txt"})
            timings["initialize + tools/call"] = (not result.is_error, time.monotonic() - t)
            closed = await count_closed(held)
            for stream in held:
                await stream.aclose()
        print(
            f"{idle} idle + {slow} slow-header connections opened in {opened:.1f} s against ulimit -n 1024:"
        )
        total = idle + slow
        print(
            f"  right after: the server held {total - closed_at_once}, closed {closed_at_once} "
            "to make room (cap 1024 - 128 reserved = 896)"
        )
        print(
            f"  after the requests below: held {total - closed}, closed {closed} "
            "(idle ones also time out after 10 s)"
        )
        for name, (good, seconds) in timings.items():
            print(f"  {name} while they were held: {'ok' if good else 'FAILED'} in {seconds * 1000:.0f} ms")
        errors = [line for line in running.stderr_lines if "Too many open files" in line]
        print(f"  server stderr: {len(running.stderr_lines)} lines, {len(errors)} 'Too many open files'")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=1100, help="idle connections (0 skips the part)")
    args = parser.parse_args()
    if args.sessions:
        await sessions_figure(args.sessions)
    if args.connections:
        await connections_figure(args.connections, 100)


if __name__ == "__main__":
    anyio.run(main)
