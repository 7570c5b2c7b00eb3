"""Serving a `BatteriesServer` over stdio: stdout is the protocol, everything for a person goes
to stderr.

The transport is our own rather than the SDK's `stdio_server`, which drops every line it cannot
validate without a word (so a request with a malformed envelope, a lone surrogate or deep
nesting was never answered), ends the process when one outgoing message cannot be encoded, and
reads stdin in a thread that cannot be interrupted (so a SIGTERM took seconds). Here:

- stdin is read as bytes into a linear line buffer, bounded by `STDIO_MAX_FRAME_BYTES`; each
  line goes through `frames.check_frame`, and a frame error is answered on the spot (parse
  error with id null, invalid request, invalid params naming the parameter);
- each outgoing message is encoded once by `frames.encode_message`; one that cannot be encoded
  becomes an error response for its request (or, a notification, is dropped), logged on stderr;
- reading waits on the descriptor in the event loop, so it is cancellable at once (where the loop
  cannot wait on a pipe, Windows, a daemon thread reads and worker threads write:
  `_platform/stdio.py`). On SIGTERM or SIGINT (Windows: Ctrl-C, Ctrl-Break; `_platform/signals.py`)
  or end of input the server stops taking requests, gives the calls in flight
  `STDIO_SHUTDOWN_GRACE_S` to answer, then cancels them (each is answered "Connection closed")
  and closes its services. Open `subscriptions/listen` streams are not calls: they end at once.
  A call stuck in a thread that ignores cancellation cannot hold the process past
  `STDIO_EXIT_BOUND_S`.

While serving, fd 0 reads from the null device and fd 1 writes to stderr, so a stray `print` or a
child process cannot corrupt the protocol stream (`_platform.stdio.claimed_stdio`).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from mcp_batteries._platform.signals import stop_signals
from mcp_batteries._platform.stdio import claimed_stdio, loop_waits_on_stdio
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.frames import Reply, Unsendable, check_frame, encode_message, oversized_reply
from mcp_batteries._transport.console import say

if TYPE_CHECKING:
    from mcp_batteries._core.app import BatteriesServer

logger = logging.getLogger(__name__)

#: Largest message accepted on stdin. A longer line is skipped (never held in memory) and
#: answered with an error naming the limit.
STDIO_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: After SIGTERM/SIGINT or end of input: how long calls in flight get to send their answers.
STDIO_SHUTDOWN_GRACE_S = 2.0
#: After SIGTERM/SIGINT: when the process leaves even if work stuck in a thread still runs.
STDIO_EXIT_BOUND_S = STDIO_SHUTDOWN_GRACE_S + 3.0
#: JSON-RPC "server error" code for a request that arrives while the server is stopping.
SHUTTING_DOWN = -32000

#: Requests whose answer is a stream that lasts until the client leaves: not calls in flight, so
#: stopping never waits for them (they end with the connection).
_STREAMS = frozenset({"subscriptions/listen"})

_READ_CHUNK = 256 * 1024
_HEAD = 512  # bytes of an oversized frame kept to find its id


def _stdio_banner(server: BatteriesServer, script: str) -> str:
    return (
        f"{server.mcp.name} {server.mcp.version} speaks MCP (JSON-RPC) on stdin/stdout: it is meant to be "
        "started by an MCP client, not typed at.\n"
        f'  Add it to a client config, e.g. Claude Desktop: {{"command": "uvx", "args": ["{script}", ...]}}\n'
        f"  Or serve it over HTTP: uvx {script} --transport http --port 8000\n"
        "  Ctrl-C (or end of input) stops it."
    )


async def serve_stdio(server: BatteriesServer, script: str) -> None:
    if sys.stdin.isatty():
        say(_stdio_banner(server, script))
    with claimed_stdio() as (stdin_fd, stdout_fd):
        await StdioTransport(stdin_fd, stdout_fd).serve(server.mcp)


def _is_stream(fd: int) -> bool:
    """A pipe or socket: safe to use without blocking (a terminal is shared with stderr)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Output:
    """Whole lines onto stdout, one writer at a time, without blocking the event loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()
        self._waitable = _is_stream(fd) and loop_waits_on_stdio()
        # Where the loop cannot wait on the pipe (Windows), a blocking write happens in a worker
        # thread, so a client slow to read never stalls the loop.
        self._threaded = not loop_waits_on_stdio()
        if self._waitable:
            os.set_blocking(fd, False)
        self.broken = False

    async def write_line(self, data: bytes) -> None:
        if self.broken:
            return
        async with self._lock:
            view = memoryview(data + b"\n")
            try:
                if self._threaded:
                    await self._write_in_thread(view)
                    return
                while view:
                    try:
                        written = os.write(self._fd, view)
                    except BlockingIOError:
                        await anyio.wait_writable(self._fd)
                        continue
                    view = view[written:]
            except (BrokenPipeError, ConnectionResetError):
                logger.debug("stdout closed by the client")
                self.broken = True
            except OSError:
                if not self._threaded:
                    raise
                logger.debug("stdout closed by the client")  # Windows says EINVAL for a closed pipe
                self.broken = True

    async def _write_in_thread(self, view: memoryview) -> None:
        # A direct write starts without a checkpoint, so a line handed over while the transport
        # is being cancelled (answers to the calls it cancels) still goes out; so does this one,
        # within a bound, so a client that stopped reading cannot hold the exit. Otherwise a
        # cancellation abandons the thread, whose write still completes.
        stopping = anyio.current_effective_deadline() == -math.inf
        with anyio.move_on_after(STDIO_SHUTDOWN_GRACE_S if stopping else math.inf, shield=stopping):
            while view:
                written = await anyio.to_thread.run_sync(os.write, self._fd, view, abandon_on_cancel=True)
                view = view[written:]


class _InFlight:
    """Ids of requests handed to the SDK and not yet answered (or cancelled by the client)."""

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def add(self, request_id: Any) -> None:
        self._ids.add(_key(request_id))
        if self._idle.is_set():
            self._idle = anyio.Event()

    def done(self, request_id: Any) -> None:
        self._ids.discard(_key(request_id))
        if not self._ids:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()


def _key(request_id: Any) -> str:
    # The SDK correlates "7" and 7 as one id; so does this.
    return str(request_id)


def _read_in_daemon_thread(fd: int) -> MemoryObjectReceiveStream[bytes]:
    """Chunks of `fd` read by a daemon thread (an anyio worker thread would block the exit)."""
    send, receive = anyio.create_memory_object_stream[bytes](0)
    token = anyio.lowlevel.current_token()

    def pump() -> None:
        with suppress(Exception):  # the loop ended or the stream closed: nobody is reading
            while chunk := os.read(fd, _READ_CHUNK):
                anyio.from_thread.run(send.send, chunk, token=token)
        with suppress(Exception):
            anyio.from_thread.run_sync(send.close, token=token)

    threading.Thread(target=pump, name="mcp-batteries stdin", daemon=True).start()
    return receive


class StdioTransport:
    """One MCP connection over a pair of file descriptors (stdin, stdout)."""

    def __init__(self, stdin_fd: int, stdout_fd: int, *, max_frame: int = STDIO_MAX_FRAME_BYTES) -> None:
        self._stdin = stdin_fd
        self._out = _Output(stdout_fd)
        self._max_frame = max_frame
        self._in_flight = _InFlight()
        self._stopping = False
        self._reading = anyio.CancelScope()
        self._serving = anyio.CancelScope()

    async def serve(self, mcp: Any) -> None:
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as watch:
            watch.start_soon(self._on_signals, watch)
            with self._serving:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._read, read_send)
                    tg.start_soon(self._write, write_receive, read_send)
                    await sdk.serve_connection(mcp, read_receive, write_send)
                    # The SDK has sent its last message (among them the answers to the calls it
                    # cancelled): let the writer finish what it holds, within a bound, rather
                    # than cancel a write in progress, which could lose those answers.
                    write_send.close()
                    tg.cancel_scope.deadline = anyio.current_time() + STDIO_SHUTDOWN_GRACE_S
            watch.cancel_scope.cancel()

    # -- stopping -------------------------------------------------------------------------------
    async def _on_signals(self, watch: anyio.abc.TaskGroup) -> None:
        async with stop_signals() as signals:
            signalled = False
            async for signum in signals:
                name = signal.Signals(signum).name
                if signalled:
                    logger.info("second %s: cancelling the calls in flight now", name)
                    self._serving.cancel()
                    continue
                signalled = True
                logger.info("%s: finishing the calls in flight, then exiting", name)
                watch.start_soon(self._exit_after, STDIO_EXIT_BOUND_S)
                watch.start_soon(self._stop)

    async def _stop(self) -> None:
        self._stopping = True
        await self._drain()
        self._reading.cancel()

    async def _drain(self) -> None:
        with anyio.move_on_after(STDIO_SHUTDOWN_GRACE_S) as waited:
            await self._in_flight.wait_idle()
        if waited.cancelled_caught:
            logger.warning(
                "calls still running after %.0f s are cancelled (their clients hear: connection closed)",
                STDIO_SHUTDOWN_GRACE_S,
            )

    @staticmethod
    async def _exit_after(seconds: float) -> None:
        # Only reached when work in a worker thread ignores cancellation: such a thread would
        # otherwise hold the process (and the client waiting for it to exit) until it finishes.
        await anyio.sleep(seconds)
        logger.warning(
            "still busy %.0f s after the stop signal (work stuck in a thread); exiting now", seconds
        )
        logging.shutdown()
        os._exit(0)

    # -- reading --------------------------------------------------------------------------------
    async def _read(self, read_send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        async with read_send:
            with self._reading:
                await self._read_lines(lambda line: self._on_line(line, read_send))
                # End of input: the client may still read what its requests produce.
                self._stopping = True
                await self._drain()
        # Leaving closes the SDK's read stream: it cancels what is left and closes the services.

    async def _read_lines(self, on_line: Callable[[bytes | Reply], Awaitable[None]]) -> None:
        """Split stdin into lines in linear time; a line over the limit becomes a `Reply`."""
        buffer = bytearray()
        skipped = 0  # > 0 while skipping the rest of an oversized line
        head = b""
        read = self._chunk_reader()
        while True:
            chunk = await read()
            if not chunk:
                if buffer.strip() and not skipped:
                    await on_line(bytes(buffer))
                return
            if skipped:
                newline = chunk.find(b"\n")
                if newline < 0:
                    skipped += len(chunk)
                    continue
                await on_line(oversized_reply(head, skipped + newline, self._max_frame))
                skipped, chunk = 0, chunk[newline + 1 :]
            scan_from = len(buffer)
            buffer += chunk
            start = 0
            while (newline := buffer.find(b"\n", scan_from)) >= 0:
                if newline - start > self._max_frame:
                    await on_line(
                        oversized_reply(
                            bytes(buffer[start : start + _HEAD]), newline - start, self._max_frame
                        )
                    )
                else:
                    await on_line(bytes(buffer[start:newline]))
                start = scan_from = newline + 1
            del buffer[:start]
            if len(buffer) > self._max_frame:
                head, skipped = bytes(buffer[:_HEAD]), len(buffer)
                buffer.clear()

    def _chunk_reader(self) -> Callable[[], Awaitable[bytes]]:
        fd = self._stdin
        threaded: MemoryObjectReceiveStream[bytes] | None = None

        async def wait_then_read() -> bytes:
            nonlocal threaded
            if threaded is None and not loop_waits_on_stdio():
                threaded = _read_in_daemon_thread(fd)  # Windows' event loop cannot wait on a pipe
            if threaded is None:
                try:
                    await anyio.wait_readable(fd)
                    return os.read(fd, _READ_CHUNK)
                except OSError:
                    # The event loop cannot watch this descriptor (a terminal, with kqueue on
                    # macOS): read it in a daemon thread, which never holds up the exit.
                    threaded = _read_in_daemon_thread(fd)
            try:
                return await threaded.receive()
            except anyio.EndOfStream:
                return b""

        async def read_now() -> bytes:
            # A regular file (or /dev/null) is always readable and cannot be waited on.
            await anyio.lowlevel.checkpoint()
            return os.read(fd, _READ_CHUNK)

        mode = os.fstat(fd).st_mode
        always_ready = stat.S_ISREG(mode) or (stat.S_ISCHR(mode) and not os.isatty(fd))
        return read_now if always_ready else wait_then_read

    async def _on_line(
        self, line: bytes | Reply, read_send: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        verdict = line if isinstance(line, Reply) else check_frame(line.rstrip(b"\r"))
        if verdict is None:
            return
        if isinstance(verdict, Reply):
            await self._out.write_line(verdict.body)
            return
        message = verdict.message
        if isinstance(message, JSONRPCRequest):
            if self._stopping:
                await self._refuse_while_stopping(message)
                return
            if message.method not in _STREAMS:
                self._in_flight.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if cancelled is not None:
                self._in_flight.done(cancelled)
        await read_send.send(SessionMessage(message))

    async def _refuse_while_stopping(self, request: JSONRPCRequest) -> None:
        error = ErrorData(code=SHUTTING_DOWN, message="the server is shutting down; this request was not run")
        refusal = JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        encoded = encode_message(refusal)
        if isinstance(encoded, bytes):
            await self._out.write_line(encoded)

    # -- writing --------------------------------------------------------------------------------
    async def _write(
        self,
        write_receive: MemoryObjectReceiveStream[SessionMessage],
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async with write_receive:
            async for session_message in write_receive:
                message = session_message.message
                encoded = encode_message(message)
                if isinstance(encoded, bytes):
                    await self._out.write_line(encoded)
                elif isinstance(encoded, Unsendable):
                    # Our own request (roots/list...) never left: fail its waiter instead.
                    failed = JSONRPCError(jsonrpc="2.0", id=encoded.request_id, error=encoded.error)
                    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await read_send.send(SessionMessage(failed))
                if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                    self._in_flight.done(message.id)
