"""The change bus: a change one replica observes reaches the others once, on both engines,
and a replica that loses the bus says so and recovers without a restart."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio
import anyio.abc
import asyncpg
import pytest
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._live.bus import BusEvent, ChangeRelay, engine_for, stat_digest
from mcp_batteries._live.resources import LiveResources, WatchTarget
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import connect
from redis.asyncio import Redis

from ...buses import POSTGRES, REDIS
from ..conftest import DemoSettings

pytestmark = pytest.mark.anyio

TIMEOUT_S = 10


def channel() -> str:
    """A channel of its own for each test (xdist runs tests side by side)."""
    return f"test_bus_{uuid.uuid4().hex[:12]}"


async def kill_bus_connections(url: str, channel: str) -> None:
    """End every bus connection on `channel` from the engine's side, as a failover would."""
    if url.startswith("postgresql"):
        conn = await asyncpg.connect(POSTGRES, timeout=5)
        try:
            killed = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                f"mcp-batteries-bus {channel}"[:63],
            )
        finally:
            await conn.close()
    else:
        client = Redis.from_url(REDIS)
        try:
            killed = 0
            for entry in await client.client_list():
                if entry.get("name") == f"mcp-batteries-bus:{channel}":
                    killed += await client.client_kill_filter(_id=entry["id"])
        finally:
            await client.aclose()
    assert killed, "no bus connection was found to kill"


class Inbox:
    def __init__(self) -> None:
        self.events: list[BusEvent] = []
        self._arrived = anyio.Event()

    async def __call__(self, events: list[BusEvent]) -> None:
        self.events.extend(events)
        self._arrived.set()

    async def wait(self, count: int) -> None:
        with anyio.fail_after(TIMEOUT_S):
            while len(self.events) < count:
                self._arrived = anyio.Event()
                await self._arrived.wait()


async def wait_reconnected(relay: ChangeRelay) -> None:
    with anyio.fail_after(TIMEOUT_S):
        while not (relay.reconnects and relay.connected):
            await relay.state_changed()


async def test_a_published_change_reaches_the_other_replica_once_and_never_its_own(bus_url: str) -> None:
    name = channel()
    a_inbox, b_inbox = Inbox(), Inbox()
    a = ChangeRelay(engine_for(bus_url), name, a_inbox)
    b = ChangeRelay(engine_for(bus_url), name, b_inbox)
    async with a.running(), b.running():
        assert a.connected and b.connected
        await a.publish([BusEvent("u", "demo://x", "v1"), BusEvent("l")])
        await b_inbox.wait(2)
        assert b_inbox.events == [BusEvent("u", "demo://x", "v1"), BusEvent("l")]
        # The same change observed by B itself (a shared volume) is not news there any more...
        assert not b.claim(BusEvent("u", "demo://x", "v1"))
        # ... while a new state of the same resource is.
        assert b.claim(BusEvent("u", "demo://x", "v2"))
        await b.publish([BusEvent("u", "demo://y")])
        await a_inbox.wait(1)
        assert a_inbox.events == [BusEvent("u", "demo://y")]
    assert a.published == 2 and b.received == 2


async def test_the_same_change_seen_by_two_replicas_reaches_a_third_once(bus_url: str) -> None:
    name = channel()
    inbox = Inbox()
    a = ChangeRelay(engine_for(bus_url), name, Inbox())
    b = ChangeRelay(engine_for(bus_url), name, Inbox())
    c = ChangeRelay(engine_for(bus_url), name, inbox)
    async with a.running(), b.running(), c.running():
        await a.publish([BusEvent("u", "demo://x", "same")])
        await b.publish([BusEvent("u", "demo://x", "same"), BusEvent("u", "demo://end")])
        await inbox.wait(2)
        assert inbox.events == [BusEvent("u", "demo://x", "same"), BusEvent("u", "demo://end")]
        assert c.duplicates == 1


async def test_a_replica_that_loses_the_bus_says_so_and_recovers_without_a_restart(bus_url: str) -> None:
    name = channel()
    a_inbox, b_inbox = Inbox(), Inbox()
    a = ChangeRelay(engine_for(bus_url), name, a_inbox)
    b = ChangeRelay(engine_for(bus_url), name, b_inbox)
    async with a.running(), b.running():
        await kill_bus_connections(bus_url, name)
        await wait_reconnected(a)
        await wait_reconnected(b)
        assert "last_error" in a.status()
        # Each told its own subscribers that anything may have changed in the gap.
        assert BusEvent("a") in a_inbox.events and BusEvent("a") in b_inbox.events
        b_inbox.events.clear()
        await a.publish([BusEvent("u", "demo://after", "v")])
        await b_inbox.wait(1)
        assert BusEvent("u", "demo://after", "v") in b_inbox.events


async def test_an_unreachable_bus_is_reported_and_publishing_does_not_fail_the_change() -> None:
    relay = ChangeRelay(engine_for("redis://127.0.0.1:9/0"), channel(), Inbox())
    async with relay.running():
        assert relay.state == "disconnected"
        assert relay.status()["state"] == "disconnected" and "last_error" in relay.status()
        await relay.publish([BusEvent("u", "demo://x")])  # logged, not raised
        assert relay.published == 0


def test_a_bus_url_of_another_kind_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="neither a PostgreSQL URL"):
        engine_for("amqp://secret@broker/")


def test_a_message_too_long_for_notify_becomes_everything_changed() -> None:
    relay = ChangeRelay(engine_for("redis://127.0.0.1:9"), channel(), Inbox())
    payload = relay.encode(BusEvent("u", "demo://" + "x" * 9000, "d"))
    assert len(payload) < 200 and '"k":"a"' in payload


def test_a_digest_tells_states_apart_and_agrees_for_the_same_state(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("one")
    first = stat_digest([path])
    assert stat_digest([path]) == first
    path.write_text("three")
    assert stat_digest([path]) != first
    path.unlink()
    assert stat_digest([path]) != first


# -- two replicas of a live server, in one process --------------------------------------------------


class Files:
    def __init__(self, root: Path) -> None:
        self.root = root

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        return [WatchTarget.file(self.root / uri.removeprefix("demo://file/"))]

    async def list_targets(self) -> Sequence[WatchTarget]:
        return [WatchTarget.dir(self.root)]


def replica(root: Path, bus: str, name: str) -> tuple[BatteriesServer, LiveResources]:
    async def anything(session: object, uri: str) -> None:
        return None

    server = BatteriesServer(
        DemoSettings(bus=bus, bus_channel=name), instructions="live demo", subscriptions=anything
    )
    return server, LiveResources(server, Files(root))


async def listened(events: AsyncIterator[object], count: int) -> list[str]:
    seen = []
    with anyio.fail_after(TIMEOUT_S):
        async for event in events:
            seen.append(str(getattr(event, "uri", event)))
            if len(seen) == count:
                return seen
    return seen


async def test_a_listener_on_one_replica_hears_a_change_another_replica_made(
    tmp_path: Path, bus_url: str
) -> None:
    name = channel()
    a, a_live = replica(tmp_path, bus_url, name)
    b, _ = replica(tmp_path, bus_url, name)
    async with (
        connect(a.mcp, "modern") as on_a,
        connect(b.mcp, "modern") as on_b,
        on_b.listen(resource_subscriptions=["demo://file/pushed", "demo://file/end"]) as events,
    ):
        await on_a.list_tools()
        await a_live.changed({"demo://file/pushed"})
        await a_live.changed({"demo://file/end"})
        assert await listened(events, 2) == ["demo://file/pushed", "demo://file/end"]
        assert b.reports["bus"]()["state"] == "connected"


async def test_two_replicas_watching_one_volume_notify_a_write_once(tmp_path: Path, bus_url: str) -> None:
    target = tmp_path / "shared.txt"
    target.write_text("0")
    (tmp_path / "end.txt").write_text("0")
    name = channel()
    a, _ = replica(tmp_path, bus_url, name)
    b, _ = replica(tmp_path, bus_url, name)
    uris = ["demo://file/shared.txt", "demo://file/end.txt"]
    async with (
        connect(a.mcp, "modern") as on_a,
        connect(b.mcp, "modern") as on_b,
        on_a.listen(resource_subscriptions=uris) as a_events,
        on_b.listen(resource_subscriptions=uris) as b_events,
    ):
        target.write_text("1")  # both replicas watch it: each observes the write
        assert await listened(b_events, 1) == ["demo://file/shared.txt"]
        assert await listened(a_events, 1) == ["demo://file/shared.txt"]
        # The bus is ordered per publisher; a later change from both ends the window for duplicates.
        (tmp_path / "end.txt").write_text("1")
        assert await listened(b_events, 1) == ["demo://file/end.txt"]
        assert await listened(a_events, 1) == ["demo://file/end.txt"]


async def test_a_file_that_comes_and_goes_each_time_is_a_list_change_each_time(
    tmp_path: Path, bus_url: str
) -> None:
    # A SQLite journal appears and vanishes with every transaction: the same paths each time, so
    # the list's digest must also tell the moments apart (its directory's modification time).
    server, _ = replica(tmp_path, bus_url, channel())
    journal = tmp_path / "db-journal"
    async with (
        connect(server.mcp, "modern") as client,
        client.listen(resources_list_changed=True) as events,
    ):
        for _ in range(3):
            journal.write_text("x")
            journal.unlink()
            with anyio.fail_after(TIMEOUT_S):
                async for _event in events:
                    break


class Stall:
    """A TCP relay to the engine that can stop passing bytes without closing anything, as a cut
    network does (nothing tells either end)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.resumed = anyio.Event()
        self.resumed.set()

    def stop(self) -> None:
        self.resumed = anyio.Event()

    def resume(self) -> None:
        self.resumed.set()

    async def _pump(self, source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
        try:
            async for chunk in source:
                await self.resumed.wait()
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with (
            client,
            await anyio.connect_tcp(self.host, self.port) as upstream,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(self._pump, client, upstream)
            await self._pump(upstream, client)
            tg.cancel_scope.cancel()


@pytest.fixture
async def stalled_bus(bus_url: str) -> AsyncIterator[tuple[str, Stall]]:
    """The bus's URL through a `Stall` on a free loopback port."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(bus_url)
    stall = Stall(
        parts.hostname or "127.0.0.1", parts.port or (5432 if bus_url.startswith("postgres") else 6379)
    )
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    netloc = (parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else "") + f"127.0.0.1:{port}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, stall._handle)
        yield urlunsplit(parts._replace(netloc=netloc)), stall
        tg.cancel_scope.cancel()


async def test_a_bus_that_stops_answering_without_closing_is_noticed_and_rejoined(
    stalled_bus: tuple[str, Stall], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_batteries._live import bus

    monkeypatch.setattr(bus, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(bus, "HEARTBEAT_TIMEOUT_S", 0.5)
    monkeypatch.setattr(bus, "CONNECT_TIMEOUT_S", 1.0)
    url, stall = stalled_bus
    inbox = Inbox()
    relay = ChangeRelay(engine_for(url), channel(), inbox)
    async with relay.running():
        assert relay.connected
        stall.stop()
        with anyio.fail_after(TIMEOUT_S):
            while relay.state != "disconnected":
                await relay.state_changed()
        assert relay.status()["state"] == "disconnected" and relay.last_error
        stall.resume()
        await wait_reconnected(relay)
        assert BusEvent("a") in inbox.events
