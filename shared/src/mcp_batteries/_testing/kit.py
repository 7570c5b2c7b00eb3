"""Test kit: drive any MCP Batteries server the ways real clients do.

- `connect(server, era)`: in-process, in either protocol era;
- `stdio_params(script, *args)`: start the server's console script as a subprocess over stdio;
- `http_server(script, *args)`: start it over HTTP on a free loopback port and yield the URL;
- `Notifications`: collect notifications and wait for one, with a timeout (no sleeps);
- `RAW_INITIALIZE`, `MCP_POST_HEADERS`: for tests that speak HTTP by hand (refusals, limits).

`ERAS` names the two eras: "legacy" is the `initialize` handshake (Claude Desktop, Cline);
"modern" is 2026-07-28.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

Era = Literal["legacy", "modern"]
ERAS: tuple[Era, ...] = ("legacy", "modern")
TIMEOUT_S = 10.0

#: An `initialize` request (handshake era) as JSON, for tests that post to `/mcp` by hand.
RAW_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
#: The headers Streamable HTTP asks of every POST.
MCP_POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

_URL_IN_BANNER = re.compile(r"at (http://\S+) \(")


def client_mode(era: Era) -> Literal["legacy", "auto"]:
    return "legacy" if era == "legacy" else "auto"


def script_path(script: str) -> str:
    """The console script installed next to this interpreter (the workspace venv), else on PATH."""
    candidate = Path(sys.executable).parent / script
    if candidate.exists():
        return str(candidate)
    found = shutil.which(script)
    if found is None:
        raise FileNotFoundError(f"console script {script!r} is not installed")
    return found


def write_private(path: Path, text: str) -> Path:
    """A secret's file (a tokens file, a token file) readable by its owner only, as the servers
    require (`mcp_batteries._safety.secret_files`)."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)
    return path


def stdio_params(script: str, *args: str, env: Mapping[str, str] | None = None) -> StdioServerParameters:
    merged = {**os.environ, **(env or {})}
    return StdioServerParameters(command=script_path(script), args=list(args), env=merged)


class Notifications:
    """A `message_handler` that records server notifications and lets a test wait for one."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.received.append(getattr(message, "root", message))
        self._changed.set()
        self._changed = anyio.Event()

    def methods(self) -> list[str]:
        return [getattr(n, "method", "") for n in self.received]

    async def wait_for(self, predicate: Callable[[Any], bool], timeout: float = TIMEOUT_S) -> Any:
        with anyio.fail_after(timeout):
            seen = 0
            while True:
                for note in self.received[seen:]:
                    if predicate(note):
                        return note
                seen = len(self.received)
                await self._changed.wait()

    async def wait_method(self, method: str, uri: str | None = None, timeout: float = TIMEOUT_S) -> Any:
        def matches(note: Any) -> bool:
            if getattr(note, "method", None) != method:
                return False
            return uri is None or str(getattr(getattr(note, "params", None), "uri", "")) == uri

        return await self.wait_for(matches, timeout)


@asynccontextmanager
async def connect(target: Any, era: Era, **kwargs: Any) -> AsyncIterator[Client]:
    """A connected `Client` to an `MCPServer`, stdio parameters or an HTTP URL, in `era`."""
    async with Client(target, mode=client_mode(era), **kwargs) as client:
        yield client


@asynccontextmanager
async def connect_http(url: str, era: Era, token: str | None = None, **kwargs: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode=client_mode(era), **kwargs) as client,
    ):
        yield client


async def legacy_subscribe(client: Client, uri: str) -> None:
    """`resources/subscribe`, which the SDK client marks deprecated (it is legacy-era only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.subscribe_resource(uri)


async def legacy_unsubscribe(client: Client, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.unsubscribe_resource(uri)


class RunningServer:
    def __init__(self, process: subprocess.Popen[bytes], url: str, stderr_lines: list[str]) -> None:
        self.process = process
        self.url = url
        self.stderr_lines = stderr_lines

    @property
    def base_url(self) -> str:
        return self.url.rsplit("/", 1)[0] if self.url.count("/") > 2 else self.url

    async def stderr_line(self, text: str, timeout: float = 10.0) -> str:
        """The first line of the server's stderr containing `text`, waiting for it to be read (a
        thread reads the pipe: a line the server has written may not be in `stderr_lines` yet)."""
        with anyio.fail_after(timeout):
            while True:
                for line in self.stderr_lines:
                    if text in line:
                        return line
                await anyio.sleep(0.02)  # another process's pipe: there is no event to wait on


@asynccontextmanager
async def http_server(
    script: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 30.0,
    preexec_fn: Callable[[], None] | None = None,
) -> AsyncIterator[RunningServer]:
    """Run `script --transport http --port 0 ARGS` and yield it once its banner names the URL.

    `preexec_fn` runs in the child before the server starts (e.g. to lower its open-file limit).
    """
    command = [script_path(script), *args, "--transport", "http", "--port", "0"]
    process = subprocess.Popen(  # noqa: ASYNC220 - the server runs beside the test, not awaited
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
    )
    assert process.stderr is not None
    lines: list[str] = []
    stderr = process.stderr

    def read_until_url() -> str:
        for raw in stderr:
            line = raw.decode(errors="replace").rstrip()
            lines.append(line)
            found = _URL_IN_BANNER.search(line)
            if found:
                return found.group(1)
        raise RuntimeError("server exited before announcing its URL:\n" + "\n".join(lines))

    try:
        with anyio.fail_after(startup_timeout):
            url = await anyio.to_thread.run_sync(read_until_url, abandon_on_cancel=True)

        def drain() -> None:
            for raw in stderr:
                lines.append(raw.decode(errors="replace").rstrip())

        # Keep draining stderr so a chatty server never blocks on a full pipe.
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(anyio.to_thread.run_sync, drain, abandon_on_cancel=True))
            yield RunningServer(process, url, lines)
            tg.cancel_scope.cancel()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                await anyio.to_thread.run_sync(lambda: process.wait(timeout=15))
            except subprocess.TimeoutExpired:
                process.kill()


@asynccontextmanager
async def serve_http_in_process(
    server: Any, *, wrap: Callable[[Any], Any] | None = None
) -> AsyncIterator[tuple[str, Any]]:
    """Serve `server` (a `BatteriesServer`) over HTTP inside this process, on a free loopback port.

    Yields the MCP URL and the `mcp_batteries._transport.http.HttpApp` (its event stores, Host guard and
    sessions are there to inspect). `wrap` may put an ASGI middleware in front of the app, e.g.
    one that sets `scope["user"]` to test several identities.
    """
    from mcp_batteries._transport.http import bind_sockets, build_http_app, serve_http

    server.settings.port = 0
    app = build_http_app(server)
    if wrap is not None:
        app.asgi = wrap(app.asgi)
    sockets = bind_sockets(server.settings)
    started = anyio.Event()
    ports: list[int] = []

    async def on_started(port: int) -> None:
        ports.append(port)
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve_http, server, app, sockets=sockets, on_started=on_started))
        with anyio.fail_after(TIMEOUT_S):
            await started.wait()
        try:
            yield f"http://127.0.0.1:{ports[0]}{server.settings.path}", app
        finally:
            app.stop()  # drain and stop as on SIGTERM; cancel only if that takes too long
            tg.cancel_scope.deadline = anyio.current_time() + TIMEOUT_S
