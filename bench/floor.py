"""The per-call floor: what the MCP Batteries runtime adds to one cheap call, over stdio and HTTP.

Two servers with the same trivial tool (`hello`): a bare `MCPServer` (floor_server.py) and one
built on `BatteriesServer` (runtime_floor_server.py). Measured through the SDK's own `Client`
(legacy handshake; over stdio with the linear reader of sdk_client.py, over HTTP with the SDK's
streamable HTTP client), alternating servers per repetition. Goal: runtime <= 1.2x bare.

    uv run --all-packages python bench/floor.py [--calls 500] [--profile]

`--profile` also runs each stdio server under cProfile for the same calls and prints where the
server's time goes (the SDK's share, and ours).
"""

from __future__ import annotations

import argparse
import pstats
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness import ServerSpec, server_environment
from sdk_client import sdk_session

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
SERVERS = {"runtime": HERE / "runtime_floor_server.py", "bare": HERE / "floor_server.py"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HTTP_BOOT = {
    "bare": (
        "import runpy,sys; ns=runpy.run_path({path!r}); "
        "ns['mcp'].run('streamable-http', host='127.0.0.1', port={port})"
    ),
}


@asynccontextmanager
async def http_client(name: str) -> AsyncIterator[Client]:
    port = free_port()
    if name == "bare":
        argv = [PYTHON, "-c", HTTP_BOOT["bare"].format(path=str(SERVERS["bare"]), port=port)]
    else:
        argv = [PYTHON, str(SERVERS[name]), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(  # noqa: ASYNC220 - the server runs beside the benchmark
        argv, env=server_environment(None), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            while True:  # the bare server prints no banner: wait until it accepts connections
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    await anyio.sleep(0.05)
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            await client.list_tools()
            yield client
    finally:
        process.terminate()
        process.wait(10)


#: A real cheap call of a real server, beside the two floors: mcp-batteries-filesystem get_file_info.
FILESYSTEM_CALL = ("get_file_info", {"path": str(HERE)})


def call_of(name: str) -> tuple[str, dict[str, str]]:
    return FILESYSTEM_CALL if name == "filesystem" else ("hello", {})


async def per_call(clients: dict[str, Client], calls: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for name in names:
        for _ in range(20):  # warm-up
            await clients[name].call_tool(*call_of(name))
    for i in range(calls):
        for name in names if i % 2 == 0 else reversed(names):
            started = time.perf_counter()
            await clients[name].call_tool(*call_of(name))
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


async def measure(transport: str, calls: int) -> dict[str, float]:
    names = [*SERVERS, "filesystem"] if transport == "stdio" else list(SERVERS)
    async with anyio.create_task_group() as tg:
        clients: dict[str, Client] = {}
        ready, done = anyio.Event(), anyio.Event()

        async def hold(name: str) -> None:
            if name == "filesystem":
                script = str(Path(PYTHON).parent / "mcp-batteries-filesystem")
                context = sdk_session(ServerSpec(name, [script, str(HERE)]))
            elif transport == "stdio":
                context = sdk_session(ServerSpec(name, [PYTHON, str(SERVERS[name])]))
            else:
                context = http_client(name)
            async with context as client:
                clients[name] = client
                if len(clients) == len(names):
                    ready.set()
                await done.wait()

        for name in names:
            tg.start_soon(hold, name)
        await ready.wait()
        result = await per_call(clients, calls)
        done.set()
    return result


async def profile(name: str, calls: int) -> pstats.Stats:
    out = HERE / ".work" / f"profile-{name}.out"
    out.parent.mkdir(parents=True, exist_ok=True)
    code = (
        f"import cProfile, runpy, sys; sys.argv = [{str(SERVERS[name])!r}]; "
        f"cProfile.run('runpy.run_path({str(SERVERS[name])!r}, run_name=\"__main__\")', {str(out)!r})"
    )
    async with sdk_session(ServerSpec(name, [PYTHON, "-c", code])) as client:
        for _ in range(calls):
            await client.call_tool("hello", {})
    return pstats.Stats(str(out))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print("| transport | runtime (BatteriesServer) | bare MCPServer | ratio |\n|---|---|---|---|")

    async def both() -> None:
        for transport in ("stdio", "http"):
            medians = await measure(transport, args.calls)
            ours, bare = medians["runtime"], medians["bare"]
            print(f"| {transport} | {ours * 1000:.3f} ms | {bare * 1000:.3f} ms | {ours / bare:.2f}x |")
            if "filesystem" in medians:
                fs = medians["filesystem"]
                row = f"{fs * 1000:.3f} ms | {bare * 1000:.3f} ms | {fs / bare:.2f}x"
                print(f"| {transport}: filesystem get_file_info | {row} |")

    anyio.run(both)
    if args.profile:
        for name in SERVERS:
            print(f"\n== {name}: server-side profile of {args.calls} calls (by own time)")
            anyio.run(profile, name, args.calls).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
