"""The stdio transport: every line answered or dispatched, framing in linear time, prompt and
bounded shutdown; on each platform family (the portable one reads stdin in a daemon thread, writes
from worker threads and hears signals through plain handlers, as on Windows)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_batteries._platform import family
from mcp_batteries._transport.stdio import (
    SHUTTING_DOWN,
    STDIO_EXIT_BOUND_S,
    STDIO_SHUTDOWN_GRACE_S,
    StdioTransport,
)

from ..hostile_server import STARTED, HostileSettings, build_server

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("each_platform_family")]

HOSTILE = Path(__file__).parents[1] / "hostile_server.py"
INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def call(rid: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


class Pipe:
    """The client's ends of an in-process stdio connection."""

    def __init__(self, to_server: int, from_server: int) -> None:
        self.to_server = to_server
        self.from_server = from_server
        self._buffer = b""
        self.served = anyio.Event()  # set when the transport has returned
        self.server_stdin = -1

    def close_input(self) -> None:
        """End of input, as when the client closes the server's stdin."""
        if self.to_server >= 0:
            os.close(self.to_server)
            self.to_server = -1

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            await anyio.wait_writable(self.to_server)
            view = view[os.write(self.to_server, view) :]

    async def receive(self, timeout: float = 10) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while b"\n" not in self._buffer:
                await anyio.wait_readable(self.from_server)
                chunk = os.read(self.from_server, 1 << 20)
                if not chunk:
                    raise EOFError("the server closed stdout")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        decoded: dict[str, Any] = json.loads(raw)
        return decoded

    async def answer_to(self, rid: Any, timeout: float = 10) -> dict[str, Any]:
        """The next message that answers `rid` (notifications in between are skipped)."""
        while True:
            message = await self.receive(timeout)
            if "method" not in message and message.get("id") == rid:
                return message


@asynccontextmanager
async def stdio_connection(max_frame: int = 1 << 20, initialize: bool = True) -> AsyncIterator[Pipe]:
    server = build_server(HostileSettings())
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    os.set_blocking(in_write, False)
    pipe = Pipe(in_write, out_read)
    pipe.server_stdin = in_read
    transport = StdioTransport(in_read, out_write, max_frame=max_frame)
    try:
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                await transport.serve(server.mcp)
                pipe.served.set()

            tg.start_soon(serve)
            if initialize:
                await pipe.send(line(INIT))
                await pipe.answer_to("init")
                await pipe.send(line(INITIALIZED))
            yield pipe
            pipe.close_input()  # the transport finishes what is in flight and returns
    finally:
        pipe.close_input()
        for fd in (in_read, out_read, out_write):
            os.close(fd)


async def test_a_line_over_the_limit_is_answered_with_its_id_and_the_next_line_is_served() -> None:
    async with stdio_connection(max_frame=4096) as pipe:
        big = call(7, "echo", text="x" * 20_000)
        await pipe.send(line(big) + line({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        refused = await pipe.answer_to(7)
        assert refused["error"]["code"] == -32600 and "4,096" in refused["error"]["message"]
        assert await pipe.answer_to(8) == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_lines_are_framed_whatever_the_chunking_and_line_endings() -> None:
    async with stdio_connection() as pipe:
        frames = line(call(1, "echo", text="a")).replace(b"\n", b"\r\n") + line(call(2, "echo", text="b"))
        for byte in range(0, len(frames), 7):  # a line split over many writes, two lines in one
            await pipe.send(frames[byte : byte + 7])
        assert "str:'a'" in (await pipe.answer_to(1))["result"]["content"][0]["text"]
        assert "str:'b'" in (await pipe.answer_to(2))["result"]["content"][0]["text"]


async def test_a_large_request_and_a_large_reply_cross_intact() -> None:
    text = "y" * (8 * 1024 * 1024)
    async with stdio_connection(max_frame=64 << 20) as pipe:
        await pipe.send(line(call(1, "echo", text=text)))
        reply = await pipe.answer_to(1, timeout=60)
        assert reply["result"]["content"][0]["text"].startswith(f"str:'{text}'")


async def test_a_frame_error_is_answered_on_the_spot_and_the_connection_lives_on() -> None:
    async with stdio_connection() as pipe:
        await pipe.send(
            b"not json at all\n" + b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}\n'
        )
        parse_error = await pipe.receive()
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        assert (await pipe.answer_to(3))["error"]["code"] == -32600
        await pipe.send(line({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
        assert (await pipe.answer_to(4))["result"] == {}


async def test_a_request_before_initialize_is_told_to_initialize_first() -> None:
    async with stdio_connection(initialize=False) as pipe:
        await pipe.send(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        error = (await pipe.answer_to(1))["error"]
        assert error["code"] == -32600 and "before initialize" in error["message"]
        assert error["message"] != "Invalid request parameters"
        await pipe.send(line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        assert (await pipe.answer_to(2))["result"] == {}


async def test_end_of_input_lets_the_calls_in_flight_answer_before_the_transport_ends() -> None:
    async with stdio_connection() as pipe:
        await pipe.send(line(call(1, "sleep", seconds=0.3)))
        pipe.close_input()
        assert (await pipe.answer_to(1))["result"]["content"][0]["text"] == "slept 0.3"
        with anyio.fail_after(5):  # then the transport ends
            await pipe.served.wait()


async def test_a_modern_client_leaving_with_a_listen_stream_open_ends_the_transport_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An open subscriptions/listen stream is not a call in flight: a 2026-07-28 client that
    # hangs up must not wait out the grace period (nor be told calls were cancelled).
    listen = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {
            "_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}},
            "notifications": {"resourcesListChanged": True},
        },
    }
    async with stdio_connection(initialize=False) as pipe:
        await pipe.send(line(listen))
        acknowledged = await pipe.receive()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged", acknowledged
        pipe.close_input()
        with anyio.fail_after(STDIO_SHUTDOWN_GRACE_S - 0.5):
            await pipe.served.wait()
    assert not [r for r in caplog.records if "still running" in r.getMessage()]


# -- the process: signals -------------------------------------------------------------------


def start_hostile(*args: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, str(HOSTILE), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, family.ENVIRONMENT_VARIABLE: family.active()},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line(INIT) + line(INITIALIZED))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == "init"
    return process


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(line(message))
    process.stdin.flush()


def answers(process: subprocess.Popen[bytes]) -> list[dict[str, Any]]:
    assert process.stdout is not None
    return [json.loads(raw) for raw in process.stdout.read().splitlines() if raw.strip()]


def wait_for_stderr(process: subprocess.Popen[bytes], text: str) -> None:
    """Until the server writes a line containing `text` on stderr (a process test's only event)."""
    assert process.stderr is not None
    for raw in process.stderr:
        if text in raw.decode(errors="replace"):
            return
    raise AssertionError(f"the server exited without saying {text!r}")


def wait_started(process: subprocess.Popen[bytes]) -> None:
    """Until the hostile server's sleep or block tool says that the call is running."""
    wait_for_stderr(process, STARTED)


def stop(process: subprocess.Popen[bytes], timeout: float) -> float:
    """SIGTERM with stdin still open; seconds until the process is gone."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=timeout) == 0
    return time.monotonic() - started


def test_sigterm_with_stdin_open_and_nothing_in_flight_exits_at_once() -> None:
    process = start_hostile()
    try:
        elapsed = stop(process, timeout=15)
    finally:
        process.kill()
    assert elapsed < 1.5, f"took {elapsed:.2f} s"
    assert process.stderr is not None and b"Traceback" not in process.stderr.read()


def test_sigterm_lets_a_call_in_flight_answer_then_exits() -> None:
    process = start_hostile()
    try:
        send(process, call(1, "sleep", seconds=0.5))
        wait_started(process)
        elapsed = stop(process, timeout=15)
    finally:
        process.kill()
    assert elapsed < STDIO_SHUTDOWN_GRACE_S + 1.0
    assert [a["result"]["content"][0]["text"] for a in answers(process) if a.get("id") == 1] == ["slept 0.5"]


def test_sigterm_cancels_calls_that_outlast_the_grace_period_and_answers_them() -> None:
    process = start_hostile()
    try:
        send(process, call(1, "sleep", seconds=60))
        wait_started(process)
        elapsed = stop(process, timeout=15)
    finally:
        process.kill()
    assert STDIO_SHUTDOWN_GRACE_S - 0.5 < elapsed < STDIO_SHUTDOWN_GRACE_S + 2.0
    closed = [a for a in answers(process) if a.get("id") == 1]
    assert len(closed) == 1 and "error" in closed[0]


def test_a_call_stuck_in_a_thread_cannot_hold_the_process_past_the_exit_bound() -> None:
    # Why the forced exit exists: a worker thread that ignores cancellation (a blocking system
    # call) would otherwise keep the process alive for the whole 60 s.
    process = start_hostile()
    try:
        send(process, call(1, "block", seconds=60))
        wait_started(process)
        elapsed = stop(process, timeout=30)
    finally:
        process.kill()
    assert elapsed < STDIO_EXIT_BOUND_S + 2.0, f"took {elapsed:.2f} s"
    assert process.stderr is not None and b"stuck in a thread" in process.stderr.read()


def test_a_request_that_arrives_while_stopping_is_refused_not_ignored() -> None:
    process = start_hostile("--log-level", "info")  # to hear that the signal arrived
    try:
        send(process, call(1, "sleep", seconds=1.0))
        wait_started(process)
        process.send_signal(signal.SIGTERM)
        wait_for_stderr(process, "finishing the calls in flight")
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert process.wait(timeout=15) == 0
    finally:
        process.kill()
    replies = {a["id"]: a for a in answers(process) if "id" in a}
    assert replies[1]["result"]["content"][0]["text"] == "slept 1.0"
    assert replies[2]["error"]["code"] == SHUTTING_DOWN


async def test_stdin_that_the_event_loop_cannot_watch_is_read_by_a_daemon_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wait_readable = anyio.wait_readable
    unwatchable: set[int] = set()

    async def cannot_watch(fd: int) -> None:
        if fd in unwatchable:
            raise OSError(22, "Invalid argument")  # as kqueue answers for a terminal on macOS
        await wait_readable(fd)

    monkeypatch.setattr(anyio, "wait_readable", cannot_watch)
    async with stdio_connection(initialize=False) as pipe:
        unwatchable.add(pipe.server_stdin)
        await pipe.send(line(INIT))
        await pipe.answer_to("init")
        await pipe.send(line({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        assert (await pipe.answer_to(1))["result"] == {}
        pipe.close_input()
        with anyio.fail_after(5):
            await pipe.served.wait()
