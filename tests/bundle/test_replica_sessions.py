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
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_batteries.testing import Notifications, connect_http, legacy_subscribe

from .conftest import BundleProcess
from .test_replicas import TIMEOUT_S, bus_url, haproxy, replicas, status  # noqa: F401 - fixtures

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
    haproxy: str,  # noqa: F811 - fixtures
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
