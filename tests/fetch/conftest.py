"""A local HTTP server (a thread running http.server) that tests script route by route."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp_fetch.client import Fetcher, FetchSettings

PAGES = Path(__file__).parent / "pages"

Handler = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Site:
    """Routes by path; `requests` records (path, headers) of everything the server received."""

    port: int = 0
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def handle(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    def serve(
        self,
        path: str,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body

        def respond(request: BaseHTTPRequestHandler) -> None:
            request.send_response(status)
            if content_type is not None:
                request.send_header("Content-Type", content_type)
            for name, value in (headers or {}).items():
                request.send_header(name, value)
            request.send_header("Content-Length", str(len(data)))
            request.end_headers()
            request.wfile.write(data)

        self.routes[path] = respond

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.serve(path, b"", status=status, content_type=None, headers={"Location": location})

    def hits(self, path: str) -> int:
        return sum(1 for seen, _ in self.requests if seen == path)


@pytest.fixture
def site() -> Iterator[Site]:
    state = Site()

    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            route = state.routes.get(self.path) or state.routes.get(path)
            if route is None:
                self.send_response(404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "9")
                self.end_headers()
                self.wfile.write(b"not found")
                return
            # The client may hang up on purpose (size or time limit).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                route(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def loopback_settings(**overrides: object) -> FetchSettings:
    """Settings that let tests reach their own 127.0.0.1 server, robots.txt ignored unless asked."""
    values: dict[str, object] = {
        "allow_hosts": ("127.0.0.0/8",),
        "connect_timeout": 2.0,
        "read_timeout": 5.0,
    }
    values.update(overrides)
    return FetchSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    client = Fetcher(loopback_settings())
    try:
        yield client
    finally:
        await client.aclose()
