"""The session registry (`mcp_batteries._transport.sessions`) on PostgreSQL and on Redis: who holds
a handshake-era session, with a lifetime, and nothing raised when the engine is unreachable.
Forwarding itself is proven behind HAProxy by tests/bundle/test_replica_sessions.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import asyncpg
import httpx2
import pytest
from mcp_batteries._transport.sessions import (
    ENGINE_TIMEOUT_S,
    TABLE,
    Owner,
    SessionRegistry,
    default_advertise_url,
    registry_for,
)
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import MCP_POST_HEADERS, http_server

from ...buses import POSTGRES

pytestmark = pytest.mark.anyio

HANDSHAKE_VERSION = "2025-11-25"
#: The deployment's shared request-state keys, which seal the registry's records.
KEYS = ["k" * 64]
KEY_ENV = {"MCP_BATTERIES_REQUEST_STATE_KEY": KEYS[0]}


@pytest.fixture
async def registry(bus_url: str) -> AsyncIterator[SessionRegistry]:
    channel = f"t{uuid.uuid4().hex[:12]}"
    found = registry_for(bus_url, channel, idle_timeout=60, keys=KEYS)
    try:
        yield found
    finally:
        await found.close()
        if bus_url.startswith("postgresql"):
            conn = await asyncpg.connect(POSTGRES, timeout=5)
            try:
                await conn.execute(f"DELETE FROM {TABLE} WHERE channel = $1", channel)
            finally:
                await conn.close()


async def test_a_recorded_session_names_its_owner_until_it_is_forgotten(registry: SessionRegistry) -> None:
    owner = Owner("http://10.0.0.2:8000", "tokens:alice")
    assert await registry.lookup("s1") is None
    await registry.record("s1", owner)
    assert await registry.lookup("s1") == owner
    # Recording again (a renewal, or another replica taking it) replaces the record.
    moved = Owner("http://10.0.0.3:8000", "tokens:alice")
    await registry.record("s1", moved)
    assert await registry.lookup("s1") == moved
    await registry.forget("s1")
    assert await registry.lookup("s1") is None


async def test_a_record_not_sealed_under_the_deployments_keys_names_no_owner(bus_url: str) -> None:
    # Whoever can write to the engine must not be able to send callers' requests (and tokens) to
    # an address of their choosing: a record sealed under other keys, or a forged one, is no record.
    channel = f"t{uuid.uuid4().hex[:12]}"
    ours = registry_for(bus_url, channel, idle_timeout=60, keys=KEYS)
    theirs = registry_for(bus_url, channel, idle_timeout=60, keys=["m" * 64])
    try:
        await theirs.record("s1", Owner("http://attacker.example:80", "tokens:alice"))
        assert await ours.lookup("s1") is None
        await ours.record("s1", Owner("http://10.0.0.2:8000", "tokens:alice"))
        assert await ours.lookup("s1") == Owner("http://10.0.0.2:8000", "tokens:alice")
        rotated = registry_for(bus_url, channel, idle_timeout=60, keys=["n" * 64, KEYS[0]])
        try:  # a key being rotated in: records sealed under the old one still verify
            assert await rotated.lookup("s1") == Owner("http://10.0.0.2:8000", "tokens:alice")
        finally:
            await rotated.close()
        await ours.forget("s1")
    finally:
        await ours.close()
        await theirs.close()
        if bus_url.startswith("postgresql"):
            conn = await asyncpg.connect(POSTGRES, timeout=5)
            try:
                await conn.execute(f"DELETE FROM {TABLE} WHERE channel = $1", channel)
            finally:
                await conn.close()


async def test_a_session_record_ends_with_its_lifetime(registry: SessionRegistry) -> None:
    registry.ttl = 0.3
    await registry.record("brief", Owner("http://127.0.0.1:1", ""))
    assert await registry.lookup("brief") is not None
    with anyio.fail_after(10):
        while await registry.lookup("brief") is not None:  # noqa: ASYNC110 - the engine's clock
            await anyio.sleep(0.05)


async def test_registries_of_different_channels_do_not_see_each_others_sessions(bus_url: str) -> None:
    first = registry_for(bus_url, f"t{uuid.uuid4().hex[:12]}", idle_timeout=60, keys=KEYS)
    second = registry_for(bus_url, f"t{uuid.uuid4().hex[:12]}", idle_timeout=60, keys=KEYS)
    try:
        await first.record("shared-id", Owner("http://127.0.0.1:1", ""))
        assert await second.lookup("shared-id") is None
        await first.forget("shared-id")
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize("url", ["redis://127.0.0.1:9/0", "postgresql://postgres@127.0.0.1:9/test"])
async def test_an_unreachable_engine_finds_no_owner_and_raises_nothing(url: str) -> None:
    registry = registry_for(url, "unreachable", idle_timeout=0, keys=KEYS)
    began = time.monotonic()
    try:
        await registry.record("s", Owner("http://127.0.0.1:1", ""))
        assert await registry.lookup("s") is None
        await registry.forget("s")
    finally:
        await registry.close()
    assert time.monotonic() - began < ENGINE_TIMEOUT_S + 1  # the first failure pauses the others


def test_a_bus_url_of_another_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="postgresql"):
        registry_for("mysql://root@127.0.0.1/test", "x", idle_timeout=0, keys=KEYS)


def test_a_replica_advertises_its_bound_address_or_its_host_name_when_it_listens_everywhere() -> None:
    assert default_advertise_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert default_advertise_url("::1", 8000) == "http://[::1]:8000"
    everywhere = default_advertise_url("0.0.0.0", 8000)
    assert everywhere.endswith(":8000") and "0.0.0.0" not in everywhere


async def open_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A handshake-era session opened at `url`: the headers of its later requests."""
    headers = {**MCP_POST_HEADERS, "MCP-Protocol-Version": HANDSHAKE_VERSION}
    opening = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    opened = await http.post(url, json=opening, headers=headers)
    assert opened.status_code == 200, opened.text
    return {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}


async def test_a_single_server_replica_forwards_a_session_it_does_not_hold(
    tmp_path: Path,
    bus_url: str,
) -> None:
    args = (str(tmp_path), "--bus", bus_url, "--bus-channel", f"t{uuid.uuid4().hex[:12]}")
    async with (
        http_server("mcp-batteries-filesystem", *args, env=KEY_ENV) as owner,
        http_server("mcp-batteries-filesystem", *args, env=KEY_ENV) as other,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        headers = await open_session(http, owner.url)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(other.url, json=note, headers=headers)).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        listed = await http.post(other.url, json=listing, headers=headers)
        assert listed.status_code == 200 and "list_allowed_directories" in listed.text, listed.text


async def test_without_a_shared_key_replicas_do_not_forward_sessions(tmp_path: Path, bus_url: str) -> None:
    # Nothing to seal the records with that another replica could verify: no forwarding (the log
    # says how to turn it on).
    args = (str(tmp_path), "--bus", bus_url, "--bus-channel", f"t{uuid.uuid4().hex[:12]}")
    async with (
        http_server("mcp-batteries-filesystem", *args) as owner,
        http_server("mcp-batteries-filesystem", *args) as other,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        headers = await open_session(http, owner.url)
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert (await http.post(other.url, json=listing, headers=headers)).status_code == 404


async def test_after_the_engine_fails_it_is_left_alone_for_a_while() -> None:
    class Failing(SessionRegistry):
        attempts = 0

        async def _lookup(self, session_id: str) -> Owner | None:
            self.attempts += 1
            raise ConnectionRefusedError("down")

    registry = Failing("redis://127.0.0.1:9", "x", ttl=60, keys=KEYS)
    assert await registry.lookup("s") is None
    assert await registry.lookup("s") is None  # within the pause: not attempted
    assert registry.attempts == 1
