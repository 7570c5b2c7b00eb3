"""Handshake-era sessions behind a balancer WITHOUT stickiness (issue 23, item 2): three replicas
behind HAProxy round-robin, with PostgreSQL and with Redis as the engine holding the session
registry. A replica that receives a request for a session it does not hold forwards it to the
replica that does (`mcp_batteries._transport.sessions`); when that replica is gone, the client
gets 404 and initializes a new session.

The fixtures (HAProxy, the engines, the three replicas) are test_replicas.py's.
"""

from __future__ import annotations

import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_batteries.testing import (
    MCP_POST_HEADERS,
    Notifications,
    connect_http,
    legacy_subscribe,
    write_private,
)

from .conftest import BundleProcess, bundle_process
from .test_replicas import TIMEOUT_S, haproxy, replicas, status  # noqa: F401 - fixtures

pytestmark = pytest.mark.anyio

CALLS = 12
#: After its owner is killed, a session's next request is answered 404 within this many seconds
#: (HAProxy's retry on the dead replica, then one refused connection from the forwarding one).
LOST_OWNER_BOUND_S = 10.0


async def filesystem_report(base: str) -> dict[str, Any]:
    mounts = {server["name"]: server for server in (await status(base))["servers"]}
    report: dict[str, Any] = mounts["filesystem"]
    return report


async def test_a_handshake_era_session_is_served_by_every_replica_and_reinitializes_when_its_owner_dies(
    tmp_path: Path,
    bus_url: str,
    haproxy: str,  # noqa: F811 - fixture
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    processes: list[BundleProcess] = []
    async with replicas(tmp_path, bus_url, prefix, haproxy, processes) as (front, bases, _):
        watched = tmp_path / "files" / "watched.txt"
        heard = Notifications()

        def updates() -> int:
            return heard.methods().count("notifications/resources/updated")

        async with connect_http(f"{front}/filesystem/mcp", "legacy", message_handler=heard) as session:
            await legacy_subscribe(session, watched.as_uri())
            for _ in range(CALLS):
                assert not (await session.call_tool("list_allowed_directories", {})).is_error
            reports = [await filesystem_report(base) for base in bases]
            # One replica holds the session; the two others forwarded the requests they received.
            owners = [i for i, report in enumerate(reports) if report["sessions"] == 1]
            assert len(owners) == 1, reports
            (owner,) = owners
            for i, report in enumerate(reports):
                if i != owner:
                    assert report["sessions"] == 0 and report["forwarded"] >= 1, reports

            # Changes made through every replica reach the session, wherever its stream landed.
            for turn, base in enumerate(bases):
                async with connect_http(f"{base}/filesystem/mcp", "modern") as writer:
                    await writer.call_tool("write_file", {"path": str(watched), "content": f"{turn}\n"})
                await heard.wait_for(lambda _note, turn=turn: updates() > turn, timeout=TIMEOUT_S)

            # The owner dies: the session is lost, the client is told so (404) within the bound.
            processes[owner].process.kill()
            processes[owner].process.wait()
            began = time.monotonic()
            with anyio.fail_after(LOST_OWNER_BOUND_S), pytest.raises(MCPError) as lost:
                for _ in range(CALLS):  # a call may still be in flight: the next one meets the 404
                    await session.call_tool("list_allowed_directories", {})
            assert "Session not found" in str(lost.value) or "Session terminated" in str(lost.value)
            assert time.monotonic() - began < LOST_OWNER_BOUND_S

        # A new session through the balancer works at once, on the replicas still running.
        async with connect_http(f"{front}/filesystem/mcp", "legacy") as again:
            for _ in range(CALLS):
                assert not (await again.call_tool("list_allowed_directories", {})).is_error


ALICE, BOB = "alice-token-" + "a" * 32, "bob-token-" + "b" * 32
HANDSHAKE_VERSION = "2025-11-25"
OPENING = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def tools_list(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}


def signed_in(token: str) -> dict[str, str]:
    return {**MCP_POST_HEADERS, "Authorization": f"Bearer {token}", "MCP-Protocol-Version": HANDSHAKE_VERSION}


async def test_another_replica_forwards_a_session_only_for_its_caller_and_only_once(
    tmp_path: Path,
    bus_url: str,
) -> None:
    tokens = write_private(
        tmp_path / "tokens.toml",
        f'[[tokens]]\nuser = "alice"\ntoken = "{ALICE}"\n\n[[tokens]]\nuser = "bob"\ntoken = "{BOB}"\n',
    )
    key = write_private(tmp_path / "state.key", "k" * 64 + "\n")
    config = tmp_path / "bundle.toml"
    config.write_text(
        f'bus = "{bus_url}"\nbus_channel = "t{uuid.uuid4().hex[:12]}"\ntokens_file = "{tokens}"\n'
        f'request_state_key_file = "{key}"\n\n'
        f'[filesystem]\ndirectories = ["{tmp_path}"]\n'
    )
    with ExitStack() as stack:
        owner = stack.enter_context(bundle_process("--config", str(config), "filesystem"))
        other = stack.enter_context(bundle_process("--config", str(config), "filesystem"))
        async with httpx2.AsyncClient(timeout=TIMEOUT_S) as http:

            async def post(replica: BundleProcess, body: dict[str, Any], headers: dict[str, str]) -> int:
                return (await http.post(replica.url("filesystem"), json=body, headers=headers)).status_code

            alice = signed_in(ALICE)
            opened = await http.post(owner.url("filesystem"), json=OPENING, headers=alice)
            assert opened.status_code == 200, opened.text
            alice["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            # The other replica does not hold the session: it forwards alice's requests.
            assert await post(other, {"jsonrpc": "2.0", "method": "notifications/initialized"}, alice) == 202
            listed = await http.post(other.url("filesystem"), json=tools_list(1), headers=alice)
            assert listed.status_code == 200 and "list_allowed_directories" in listed.text, listed.text

            # Bob, signed in, with alice's session id: not forwarded, 404 as for an unknown session.
            bob = {**alice, "Authorization": f"Bearer {BOB}"}
            assert await post(other, tools_list(2), bob) == 404
            # A request already forwarded once is never forwarded again.
            assert await post(other, tools_list(3), {**alice, "X-MCP-Batteries-Forwarded": "1"}) == 404
            # Bob at the owner itself is refused by the SDK, and changes nothing in the record:
            # neither a request nor a DELETE takes alice's session away from her.
            assert await post(owner, tools_list(4), bob) == 404
            assert (await http.delete(owner.url("filesystem"), headers=bob)).status_code == 404
            assert await post(other, tools_list(5), alice) == 200

            report = (await http.get(other.base + "/status", headers=alice)).json()
            (mount,) = report["servers"]
            assert mount["forwarded"] == 3 and mount["sessions"] == 0, mount

            # DELETE through the other replica ends the session on its owner, and its record.
            ended = await http.delete(other.url("filesystem"), headers=alice)
            assert ended.status_code == 200, ended.text
            assert await post(owner, tools_list(6), alice) == 404
            assert await post(other, tools_list(7), alice) == 404
