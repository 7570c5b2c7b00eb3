"""Resumable SSE: a session's events are its own, bounded, unguessable, and freed when it ends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification, JSONRPCResponse
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.identity import Caller, access_token_for
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._transport.events import EventStores
from mcp_batteries.testing import http_server, serve_http_in_process, write_private
from starlette.types import ASGIApp, Receive, Scope, Send

pytestmark = pytest.mark.anyio

PROTOCOL = "2025-11-25"  # priming events (resumability) need at least this version
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class BlobSettings(ServerSettings):
    server_name = "blob"


def build_blob_server(**settings: Any) -> BatteriesServer:
    server = BatteriesServer(BlobSettings(**settings), instructions="blobs")

    @server.tool(title="Secret", read_only=True)
    async def secret(size: int = 10) -> str:
        """Returns a secret of `size` characters."""
        return "SECRET-" + "s" * size

    return server


# -- a raw Streamable HTTP client: we need the event ids the SDK client hides -----------------


def parse_sse(text: str) -> list[tuple[str | None, dict[str, Any] | None]]:
    """(id, JSON data) per event in an SSE body."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event_id, data = None, []
        for line in block.split("\n"):
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if event_id is not None or data:
            payload = "\n".join(data)
            events.append((event_id, json.loads(payload) if payload else None))
    return events


class RawSession:
    def __init__(self, http: httpx.AsyncClient, url: str, token: str | None = None) -> None:
        self.http, self.url = http, url
        self.headers = {**ACCEPT, "MCP-Protocol-Version": PROTOCOL}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.session_id = ""
        self._next_id = 1

    async def open(self) -> RawSession:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        response = await self.http.post(self.url, json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        self.headers["Mcp-Session-Id"] = self.session_id
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(self.url, json=note, headers=self.headers)).status_code == 202
        return self

    async def call(self, tool: str, **arguments: Any) -> list[tuple[str | None, dict[str, Any] | None]]:
        self._next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = await self.http.post(self.url, json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        return parse_sse(response.text)

    async def resume(self, last_event_id: str, *, wanted: int = 0) -> tuple[int, str]:
        """GET with Last-Event-ID; read until `wanted` data events arrived or the stream ends."""
        headers = {**self.headers, "Last-Event-ID": last_event_id, "Accept": "text/event-stream"}
        text = ""
        with anyio.fail_after(10):
            async with self.http.stream("GET", self.url, headers=headers) as response:
                async for chunk in response.aiter_text():
                    text += chunk
                    if wanted and sum(1 for _, data in parse_sse(text) if data) >= wanted:
                        break
        return response.status_code, text

    async def delete(self) -> int:
        return (await self.http.delete(self.url, headers=self.headers)).status_code


def result_event(events: list[tuple[str | None, dict[str, Any] | None]]) -> tuple[str, str]:
    """(priming event id, result event id) of one tools/call stream."""
    priming = next(event_id for event_id, data in events if data is None and event_id)
    result = next(event_id for event_id, data in events if data and "result" in data and event_id)
    return priming, result


class Identities:
    """Authentication stand-in: `Bearer alice` and `Bearer bob` are two different callers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            supplied = dict(scope["headers"]).get(b"authorization", b"").decode()
            name = supplied.removeprefix("Bearer ")
            if name in ("alice", "bob"):
                caller = Caller(subject=f"tokens-file:{name}", name=name, source="tokens-file")
                scope = {**scope, "user": AuthenticatedUser(access_token_for(caller, supplied))}
        await self.app(scope, receive, send)


@asynccontextmanager
async def blob_server(
    wrap: Callable[[ASGIApp], ASGIApp] | None = None, **settings: Any
) -> AsyncIterator[tuple[str, Any, httpx.AsyncClient]]:
    server = build_blob_server(**settings)
    async with serve_http_in_process(server, wrap=wrap) as (url, app), httpx.AsyncClient(timeout=10) as http:
        yield url, app, http


# -- over HTTP ----------------------------------------------------------------------------------


async def test_a_session_cannot_replay_another_sessions_results() -> None:
    async with blob_server() as (url, _app, http):
        a = await RawSession(http, url).open()
        b = await RawSession(http, url).open()
        priming, _ = result_event(await a.call("secret"))
        status, stolen = await b.resume(priming)
        assert status == 200 and "SECRET" not in stolen
        # The owner itself still resumes: what it missed after the priming event is replayed.
        status, own = await a.resume(priming, wanted=1)
        assert status == 200 and "SECRET" in own


async def test_a_caller_cannot_replay_or_enter_another_callers_session() -> None:
    async with blob_server(wrap=Identities) as (url, _app, http):
        alice = await RawSession(http, url, token="alice").open()
        bob = await RawSession(http, url, token="bob").open()
        priming, _ = result_event(await alice.call("secret"))
        # Bob in his own session, with Alice's event id: nothing.
        status, stolen = await bob.resume(priming)
        assert status == 200 and "SECRET" not in stolen
        # Bob with Alice's session id: the session does not exist for him.
        bob.headers["Mcp-Session-Id"] = alice.session_id
        status, stolen = await bob.resume(priming)
        assert status == 404 and "SECRET" not in stolen
        status, own = await alice.resume(priming, wanted=1)
        assert "SECRET" in own


async def test_event_ids_are_random_not_sequential() -> None:
    async with blob_server() as (url, _app, http):
        session = await RawSession(http, url).open()
        ids = [event_id for _ in range(5) for event_id, _ in await session.call("secret") if event_id]
    assert len(ids) == len(set(ids)) == 10
    for event_id in ids:
        assert not event_id.isdigit() and len(event_id) >= 20


async def test_delete_frees_the_sessions_events() -> None:
    async with blob_server() as (url, app, http):
        session = await RawSession(http, url).open()
        priming, _ = result_event(await session.call("secret", size=1_000_000))
        events: EventStores = app.events
        assert events.sessions == 1 and events.total_bytes > 1_000_000
        assert await session.delete() == 200
        assert events.sessions == 0 and events.total_bytes == 0 and events.events == 0
        other = await RawSession(http, url).open()
        _status, stolen = await other.resume(priming)
        assert "SECRET" not in stolen


async def test_idle_sessions_expire_and_free_their_events() -> None:
    async with blob_server(session_idle_timeout=0.5) as (url, app, http):
        events: EventStores = app.events
        closed = anyio.Event()
        events.on_close.append(lambda session_id: closed.set())
        session = await RawSession(http, url).open()
        await session.call("secret", size=100_000)
        assert events.sessions == 1 and events.total_bytes > 100_000
        with anyio.fail_after(10):
            await closed.wait()
        assert events.sessions == 0 and events.total_bytes == 0
        assert app.open_sessions == 0
        status, _ = await session.resume("anything")
        assert status == 404


# -- the store itself ---------------------------------------------------------------------------


def note(n: int, size: int = 0) -> JSONRPCNotification:
    return JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"n": n, "pad": "x" * size}
    )


async def replayed(store: Any, after: str) -> list[int]:
    got: list[EventMessage] = []

    async def collect(message: EventMessage) -> None:
        got.append(message)

    await store.replay_events_after(after, collect)
    return [m.message.params["n"] for m in got]  # type: ignore[union-attr]


async def test_retention_is_bounded_per_session_in_events_and_bytes() -> None:
    stores = EventStores(max_events_per_session=5, max_session_bytes=20_000, max_total_bytes=10**9)
    store = stores.open("s", None)
    ids = [await store.store_event("_GET_stream", note(n)) for n in range(10)]
    assert store.size == 5
    assert await replayed(store, ids[5]) == [6, 7, 8, 9]
    assert await replayed(store, ids[4]) == []  # forgotten: nothing, rather than a gap
    for n in range(10, 13):
        await store.store_event("_GET_stream", note(n, size=8_000))
    assert store.bytes <= 20_000 and stores.total_bytes == store.bytes


async def test_retention_is_bounded_across_sessions_oldest_first() -> None:
    stores = EventStores(max_events_per_session=100, max_session_bytes=10**6, max_total_bytes=30_000)
    first, second = stores.open("a", None), stores.open("b", None)
    early = await first.store_event("_GET_stream", note(0, size=10_000))
    for n in range(1, 4):
        await second.store_event("_GET_stream", note(n, size=10_000))
    assert stores.total_bytes <= 30_000
    assert first.size == 0 and await replayed(first, early) == []
    assert second.size == 2


async def test_an_event_too_large_to_keep_leaves_no_gap() -> None:
    stores = EventStores(max_events_per_session=100, max_session_bytes=10_000)
    store = stores.open("s", None)
    before = await store.store_event("_GET_stream", note(0))
    huge = await store.store_event("_GET_stream", note(1, size=50_000))
    after = await store.store_event("_GET_stream", note(2))
    assert await replayed(store, before) == []  # a replay would miss the huge one: replay nothing
    assert await replayed(store, huge) == [2]
    assert after and stores.total_bytes < 10_000


async def test_replay_is_for_the_owner_only() -> None:
    stores = EventStores()
    alice = {"client_id": "alice", "issuer": None, "subject": "alice"}
    store = stores.open("s", alice)
    first = await store.store_event("1", None)
    await store.store_event("1", JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    with stores.serving({"client_id": "bob", "issuer": None, "subject": "bob"}):
        assert await store.replay_events_after(first, _ignore) is None
    with stores.serving(None):
        assert await store.replay_events_after(first, _ignore) is None
    got: list[EventMessage] = []

    async def collect(message: EventMessage) -> None:
        got.append(message)

    with stores.serving(dict(alice)):
        assert await store.replay_events_after(first, collect) == "1"
    assert len(got) == 1


async def test_a_closed_store_keeps_and_replays_nothing() -> None:
    stores = EventStores()
    store = stores.open("s", None)
    first = await store.store_event("1", note(0))
    stores.close("s")
    stores.close("s")  # twice is fine
    await store.store_event("1", note(1))
    assert store.size == 0 and stores.total_bytes == 0
    assert await store.replay_events_after(first, _ignore) is None


async def _ignore(message: EventMessage) -> None:
    raise AssertionError("nothing should be replayed")


async def test_sessions_are_capped_and_room_returns_when_one_ends() -> None:
    async with blob_server(max_sessions=2) as (url, _app, http):
        first = await RawSession(http, url).open()
        await RawSession(http, url).open()
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        refused = await http.post(url, json=body, headers=ACCEPT)
        assert refused.status_code == 503
        assert await first.delete() == 200
        await RawSession(http, url).open()


async def test_two_users_of_a_tokens_file_cannot_replay_each_others_results(tmp_path: Path) -> None:
    """The same isolation through a real console script and real authentication (--tokens-file)."""
    alice_token, bob_token = "alice-token-0123456789", "bob-token-0123456789"
    tokens = write_private(tmp_path / "tokens.toml", "")
    tokens.write_text(
        f'[[tokens]]\nuser = "alice"\ntoken = "{alice_token}"\n\n'
        f'[[tokens]]\nuser = "bob"\ntoken = "{bob_token}"\n'
    )
    root = tmp_path / "files"
    root.mkdir()
    (root / "secret.txt").write_text("SECRET of alice\n")
    args = (str(root), "--tokens-file", str(tokens))
    async with (
        http_server("mcp-batteries-filesystem", *args) as running,
        httpx.AsyncClient(timeout=10) as http,
    ):
        alice = await RawSession(http, running.url, token=alice_token).open()
        bob = await RawSession(http, running.url, token=bob_token).open()
        priming, _ = result_event(await alice.call("read_text_file", path="secret.txt"))
        status, stolen = await bob.resume(priming)
        assert status == 200 and "SECRET" not in stolen
        bob.headers["Mcp-Session-Id"] = alice.session_id
        status, stolen = await bob.resume(priming)
        assert status == 404 and "SECRET" not in stolen
        status, own = await alice.resume(priming, wanted=1)
        assert "SECRET of alice" in own
