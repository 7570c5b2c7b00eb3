"""A slow host cannot starve the others: per-host connection slots, a fetch deadline, pool exhaustion
reported as what it is. The hanging host is a local server that accepts connections and never answers."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import anyio
import pytest
from mcp_batteries.errors import BatteriesError, LimitExceeded
from mcp_fetch.client import Fetcher

from .conftest import Site, loopback_settings

pytestmark = pytest.mark.anyio


class HangingHost:
    """Accepts TCP connections, reads nothing, answers nothing; counts what it accepted."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self._connections: list[socket.socket] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._changed:
                self._connections.append(connection)
                self.accepted += 1
                self._changed.notify_all()

    def wait_for_connections(self, count: int, timeout: float = 5.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.accepted >= count, timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join(5)
        for connection in self._connections:
            connection.close()


@pytest.fixture
def hanging() -> Iterator[HangingHost]:
    host = HangingHost()
    try:
        yield host
    finally:
        host.close()


async def _fetch_ignoring_errors(client: Fetcher, url: str) -> None:
    with contextlib.suppress(BatteriesError):
        await client.fetch(url)


async def test_twenty_fetches_of_a_hanging_host_do_not_starve_a_healthy_host(
    site: Site, hanging: HangingHost
) -> None:
    site.serve("/ok", "<main><p>The healthy host answers at once.</p></main>")
    # The pool of 20 the issue describes; 4 connections per host.
    client = Fetcher(
        loopback_settings(
            ignore_robots_txt=True, read_timeout=30.0, max_connections=20, max_connections_per_host=4
        )
    )
    try:
        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(_fetch_ignoring_errors, client, hanging.url())
            assert await anyio.to_thread.run_sync(hanging.wait_for_connections, 4)
            with anyio.fail_after(5):
                result = await client.fetch(site.url("/ok"))
            assert "The healthy host answers at once." in result.content
            assert hanging.accepted == 4  # the other 16 wait for a slot of their own host
            group.cancel_scope.cancel()
    finally:
        await client.aclose()


async def test_a_fetch_queued_behind_a_busy_host_says_so(hanging: HangingHost) -> None:
    client = Fetcher(
        loopback_settings(
            ignore_robots_txt=True, connect_timeout=0.5, read_timeout=30.0, max_connections_per_host=2
        )
    )
    try:
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(_fetch_ignoring_errors, client, hanging.url("/held"))
            assert await anyio.to_thread.run_sync(hanging.wait_for_connections, 2)
            with anyio.fail_after(5), pytest.raises(LimitExceeded) as caught:
                await client.fetch(hanging.url("/queued"))
            group.cancel_scope.cancel()
    finally:
        await client.aclose()
    message = str(caught.value)
    assert f"all 2 connections allowed to 127.0.0.1:{hanging.port} are busy" in message
    assert "--max-fetch-connections-per-host" in message
    assert "stopped sending data" not in message


async def test_an_exhausted_pool_is_reported_as_such(site: Site, hanging: HangingHost) -> None:
    site.serve("/ok", "<p>never reached</p>")
    client = Fetcher(
        loopback_settings(
            ignore_robots_txt=True,
            connect_timeout=0.5,
            read_timeout=30.0,
            max_connections=2,
            max_connections_per_host=2,
        )
    )
    try:
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(_fetch_ignoring_errors, client, hanging.url())
            assert await anyio.to_thread.run_sync(hanging.wait_for_connections, 2)
            with anyio.fail_after(5), pytest.raises(LimitExceeded) as caught:
                await client.fetch(site.url("/ok"))
            group.cancel_scope.cancel()
    finally:
        await client.aclose()
    message = str(caught.value)
    assert "all 2 connections of this server are busy with other fetches" in message
    assert "--max-fetch-connections." in message
    assert site.hits("/ok") == 0


async def test_the_fetch_timeout_bounds_a_fetch_as_a_whole(hanging: HangingHost) -> None:
    client = Fetcher(loopback_settings(ignore_robots_txt=True, read_timeout=30.0, fetch_timeout=0.5))
    try:
        with anyio.fail_after(5), pytest.raises(LimitExceeded) as caught:
            await client.fetch(hanging.url())
    finally:
        await client.aclose()
    assert "did not complete within the fetch timeout of 0.5 s" in str(caught.value)


async def test_the_fetch_timeout_covers_every_redirect_hop(site: Site) -> None:
    release = threading.Event()

    def slow_hop(request) -> None:  # type: ignore[no-untyped-def]
        # Each hop is well within connect + read timeout, but together they exceed the fetch timeout.
        release.wait(0.3)
        request.send_response(302)
        request.send_header("Location", f"/hop{int(request.path[4:]) + 1}")
        request.send_header("Content-Length", "0")
        request.end_headers()

    for hop in range(10):
        site.handle(f"/hop{hop}", slow_hop)
    client = Fetcher(loopback_settings(ignore_robots_txt=True, read_timeout=5.0, fetch_timeout=1.0))
    try:
        with anyio.fail_after(5), pytest.raises(LimitExceeded, match="within the fetch timeout of 1 s"):
            await client.fetch(site.url("/hop0"))
    finally:
        release.set()
        await client.aclose()
    assert 2 <= site.hits("/hop0") + sum(site.hits(f"/hop{n}") for n in range(1, 10)) <= 5
