"""Idle, slow and surplus connections cannot exhaust an HTTP server (real sockets, real server)."""

from __future__ import annotations

import resource
import time
from contextlib import AsyncExitStack
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from anyio.abc import SocketStream
from mcp_batteries.testing import MCP_POST_HEADERS, RAW_INITIALIZE, RunningServer, connect_http, http_server

pytestmark = pytest.mark.anyio

SERVER = "mcp-batteries-filesystem"


def address(running: RunningServer) -> tuple[str, int]:
    parts = urlsplit(running.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


async def read_until_closed(stream: SocketStream, timeout: float) -> bytes:
    """Everything the server sends until it closes the connection (fails after `timeout`)."""
    data = b""
    with anyio.fail_after(timeout):
        while True:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return data


async def still_serving(running: RunningServer) -> None:
    """/healthz answers, and a real client can initialize and call a tool, within a few seconds."""
    with anyio.fail_after(15):
        async with httpx.AsyncClient(timeout=10) as http:
            health = await http.get(running.base_url + "/healthz")
            assert health.status_code == 200
        async with connect_http(running.url, "legacy") as client:
            result = await client.call_tool("read_text_file", {"path": "a.txt"})
            assert not result.is_error


async def test_a_connection_that_sends_nothing_is_closed(tree: Path) -> None:
    async with http_server(SERVER, str(tree), "--keep-alive-timeout", "0.5") as running:
        started = time.monotonic()
        async with await anyio.connect_tcp(*address(running)) as idle:
            assert await read_until_closed(idle, timeout=10) == b""
        assert time.monotonic() - started < 5


async def test_an_idle_keep_alive_connection_is_closed(tree: Path) -> None:
    async with http_server(SERVER, str(tree), "--keep-alive-timeout", "0.5") as running:
        async with await anyio.connect_tcp(*address(running)) as stream:
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = await read_until_closed(stream, timeout=10)
        assert answer.startswith(b"HTTP/1.1 200")


async def test_slow_headers_get_408_and_the_connection_is_closed(tree: Path) -> None:
    async with http_server(SERVER, str(tree), "--request-timeout", "1") as running:
        async with await anyio.connect_tcp(*address(running)) as slowloris:
            await slowloris.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started = time.monotonic()
            with anyio.move_on_after(0.6):  # keep trickling: the deadline runs from the first byte
                while True:
                    await slowloris.send(b"X-a: b\r\n")
                    await anyio.sleep(0.1)
            answer = await read_until_closed(slowloris, timeout=10)
        assert answer.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5
        await still_serving(running)


async def test_a_slow_body_closes_the_connection(tree: Path) -> None:
    async with http_server(SERVER, str(tree), "--request-timeout", "1") as running:
        async with await anyio.connect_tcp(*address(running)) as slow:
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
            )
            await slow.send(head.encode() + b'{"jsonrpc": ')
            started = time.monotonic()
            await read_until_closed(slow, timeout=10)
        assert time.monotonic() - started < 5
        await still_serving(running)


async def test_idle_and_slow_connections_make_room_for_real_clients(tree: Path) -> None:
    args = (str(tree), "--max-connections", "40", "--request-timeout", "60", "--keep-alive-timeout", "60")
    async with http_server(SERVER, *args) as running:
        held: list[SocketStream] = []
        try:
            for n in range(150):
                stream = await anyio.connect_tcp(*address(running))
                if n % 3 == 0:
                    await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # slowloris
                held.append(stream)
            await still_serving(running)
        finally:
            for stream in held:
                await stream.aclose()


async def test_when_every_connection_is_busy_a_new_one_gets_503(tree: Path) -> None:
    async with http_server(SERVER, str(tree), "--max-connections", "3") as running:
        async with AsyncExitStack() as stack:
            for _ in range(3):
                http = await stack.enter_async_context(httpx.AsyncClient(timeout=10))
                opened = await http.post(running.url, json=RAW_INITIALIZE, headers=MCP_POST_HEADERS)
                session = {**MCP_POST_HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
                session["MCP-Protocol-Version"] = "2025-06-18"
                # The event stream keeps its connection busy for as long as it is open.
                stream = await stack.enter_async_context(http.stream("GET", running.url, headers=session))
                assert stream.status_code == 200
            async with await anyio.connect_tcp(*address(running)) as extra:
                await extra.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                answer = await read_until_closed(extra, timeout=10)
            assert answer.startswith(b"HTTP/1.1 503")
        await still_serving(running)  # the streams are closed: there is room again
    assert sum("--max-connections" in line for line in running.stderr_lines) == 1


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@pytest.mark.slow
async def test_under_a_low_open_file_limit_1100_idle_connections_neither_block_nor_flood_the_log(
    tree: Path,
) -> None:
    async with http_server(SERVER, str(tree), preexec_fn=_low_fd_limit) as running:
        held: list[SocketStream] = []
        try:
            for _ in range(1100):
                held.append(await anyio.connect_tcp(*address(running)))
            await still_serving(running)
            # The server kept below its limit by closing the longest-idle connections.
            closed = 0
            for stream in held[:300]:
                with anyio.move_on_after(0.2):
                    if await read_until_closed(stream, timeout=1) == b"":
                        closed += 1
            assert closed >= 1100 - 1024
        finally:
            for stream in held:
                await stream.aclose()
        await still_serving(running)
    log = "\n".join(running.stderr_lines)
    assert "Too many open files" not in log and "out of system resource" not in log
    assert len(running.stderr_lines) < 10, log


def test_accept_failures_are_logged_once_a_minute_not_once_an_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio
    import errno

    from mcp_batteries._transport.http_limits import log_accept_errors_sparingly

    loop = asyncio.new_event_loop()
    try:
        log_accept_errors_sparingly(loop)
        failure = OSError(errno.EMFILE, "Too many open files")
        with caplog.at_level("INFO"):
            for _ in range(2048):  # what asyncio does per attempt when accept() fails
                loop.call_exception_handler(
                    {"message": "socket.accept() out of system resource", "exception": failure}
                )
    finally:
        loop.close()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1
    assert "Too many open files" in lines[0] and "ulimit -n" in lines[0] and "--max-connections" in lines[0]
