"""Measuring through the official SDK client, as agent frameworks use it.

`harness.McpClient` times the server (raw JSON-RPC, linear reader). What a user waits for is the
server plus what the SDK's `Client`/`ClientSession` does with each reply: parse the JSON-RPC line,
validate it into `CallToolResult`, and check `structuredContent` against the tool's output schema
with `jsonschema`. This module runs the real SDK client over stdio with one change: a linear line
reader instead of `stdio_client`'s (which re-splits its whole buffer on every ~64 KiB chunk and
would measure itself on big replies; notes/sdk-v2.md §9).

    async with sdk_session(spec) as client:            # mcp.Client, legacy handshake
        seconds, result = await timed_call(client, "query", {"sql": "..."})

`measure_sdk(specs, calls, repeat)` alternates servers per repetition (a, b, then b, a) like the
harness and returns the median seconds per call and server.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client
from mcp.shared.message import SessionMessage

from harness import ServerSpec, server_environment

READ_CHUNK = 1 << 20


@asynccontextmanager
async def linear_stdio(spec: ServerSpec) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport contract (read stream, write stream), with a linear reader."""
    process = await anyio.open_process(spec.argv, env=server_environment(spec.env), cwd=spec.cwd, stderr=None)
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        partial: list[bytes] = []
        async with read_send:
            try:
                while True:
                    chunk = await stdout.receive(READ_CHUNK)
                    pieces = chunk.split(b"\n")
                    if len(pieces) == 1:
                        partial.append(chunk)
                        continue
                    partial.append(pieces[0])
                    lines = [b"".join(partial), *pieces[1:-1]]
                    partial = [pieces[-1]] if pieces[-1] else []
                    for line in lines:
                        if line.strip():
                            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            await read_send.send(SessionMessage(message))
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def writer() -> None:
        async with write_receive:
            async for item in write_receive:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.send(data.encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_receive, write_send
        finally:
            tg.cancel_scope.cancel()
            await stdin.aclose()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()
            # anyio closes the pipes but not asyncio's subprocess transport; collect it while the
            # loop still runs, or its finaliser complains at exit ("Event loop is closed").
            del process
            gc.collect()


@asynccontextmanager
async def sdk_session(spec: ServerSpec) -> AsyncIterator[Client]:
    """A connected SDK `Client` (legacy handshake, as today's hosts) that has listed the tools,
    so it validates `structuredContent` against their output schemas like a host does."""
    async with Client(linear_stdio(spec), mode="legacy") as client:
        await client.list_tools()
        yield client


async def timed_call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    return time.perf_counter() - started, result


@dataclass
class SdkCall:
    """One workload: a tool call repeated `repeat` times in one long-lived process per server."""

    name: str
    tool: str
    arguments: dict[str, Any]
    repeat: int = 20
    #: Servers (by spec name) that take part; empty = all.
    only: tuple[str, ...] = ()
    #: Per-server arguments (a reference server with other argument names).
    per_server: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Per-server tool names (a reference server whose tool has another name).
    tools: dict[str, str] = field(default_factory=dict)

    def for_server(self, name: str) -> tuple[str, dict[str, Any]]:
        return self.tools.get(name, self.tool), self.per_server.get(name, self.arguments)


async def measure_sdk(specs: Sequence[ServerSpec], calls: Sequence[SdkCall]) -> dict[str, dict[str, float]]:
    """{workload name: {server name: median seconds}} through the SDK client, errors excluded."""
    medians: dict[str, dict[str, float]] = {}
    async with anyio.create_task_group() as tg:
        sessions: dict[str, Client] = {}
        ready = anyio.Event()
        done = anyio.Event()

        async def hold(spec: ServerSpec) -> None:
            async with sdk_session(spec) as client:
                sessions[spec.name] = client
                if len(sessions) == len(specs):
                    ready.set()
                await done.wait()

        for spec in specs:
            tg.start_soon(hold, spec)
        with anyio.fail_after(120):
            await ready.wait()
        for call in calls:
            names = [s.name for s in specs if not call.only or s.name in call.only]
            times: dict[str, list[float]] = {n: [] for n in names}
            for name in names:  # one warm-up call each
                await sessions[name].call_tool(*call.for_server(name))
            for i in range(call.repeat):
                order = names if i % 2 == 0 else list(reversed(names))
                for name in order:
                    seconds, result = await timed_call(sessions[name], *call.for_server(name))
                    if not getattr(result, "is_error", False):
                        times[name].append(seconds)
            medians[call.name] = {n: statistics.median(t) for n, t in times.items() if t}
        done.set()
    return medians


def format_sdk_table(medians: dict[str, dict[str, float]], ours: str, anchor: str) -> str:
    lines = [f"| workload (SDK client) | {ours} | {anchor} | ratio |", "|---|---|---|---|"]
    for name, by_server in medians.items():
        a, b = by_server.get(ours), by_server.get(anchor)
        ratio = f"{a / b:.2f}x" if a is not None and b else "n/a"
        shown = [f"{v * 1000:.2f} ms" if v is not None else "n/a" for v in (a, b)]
        lines.append(f"| {name} | {shown[0]} | {shown[1]} | {ratio} |")
    return "\n".join(lines)
