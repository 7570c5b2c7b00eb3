"""A rolling restart of three replicas behind HAProxy (round-robin, no stickiness) under 20
2026-07-28 clients completes with 0 failed calls (issue 23).

Each replica in turn gets SIGTERM (it closes its listener, lets its calls in flight finish, then
exits: `mcp_batteries._transport.http.draining_server`), a new one starts on the same port, and
the test waits until HAProxy's health check (`GET /healthz`) sees it up before the next. A call
that meets a refused connection, the `503` a draining replica answers without running the call, or
a reset (a connection left in the accept queue when the listener closed) is retried by HAProxy on
another replica (`retries`, `option redispatch`, `retry-on conn-failure empty-response 503`: the
balancer's configuration in test_replicas.py, as in docs/deploy.md).

The fixtures (HAProxy, the engines, the three replicas) are test_replicas.py's.
"""

from __future__ import annotations

import csv
import io
import signal
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp_batteries.testing import connect_http

from .conftest import BundleProcess, bundle_process
from .test_replicas import SERVERS, TIMEOUT_S, haproxy, replicas  # noqa: F401 - fixtures

pytestmark = pytest.mark.anyio

CLIENTS = 20
#: A replica's restart (drain, exit, start, seen up by HAProxy) on a loaded 2-core machine.
RESTART_BOUND_S = 90


async def haproxy_sees(front: str, server: str, wanted: str) -> None:
    """Wait until HAProxy's stats give `server` of the round-robin backend the status `wanted`."""
    with anyio.fail_after(TIMEOUT_S):
        async with httpx2.AsyncClient() as http:
            while True:
                stats = (await http.get(front + "/haproxy-stats;csv")).text
                rows = csv.DictReader(io.StringIO(stats.lstrip("# ")))
                states = {row["svname"]: row["status"] for row in rows if row["pxname"] == "replicas"}
                if states.get(server, "").startswith(wanted):
                    return
                await anyio.sleep(0.05)  # HAProxy is another process: there is nothing to await


async def test_a_rolling_restart_of_three_replicas_under_20_clients_fails_no_call(
    tmp_path: Path,
    bus_url: str,
    haproxy: str,  # noqa: F811 - fixture
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    processes: list[BundleProcess] = []
    calls = [0] * CLIENTS
    failures: list[str] = []
    stop = anyio.Event()
    all_restarted = anyio.Event()
    #: Set by each client's first call that starts after the last restart.
    progressed = [anyio.Event() for _ in range(CLIENTS)]

    async with replicas(tmp_path, bus_url, prefix, haproxy, processes) as (front, bases, _):
        for i in range(len(bases)):
            await haproxy_sees(front, f"r{i}", "UP")

        async def client(number: int, ready: anyio.Event) -> None:
            async with connect_http(f"{front}/filesystem/mcp", "modern") as session:
                ready.set()
                while not stop.is_set():
                    after_restart = all_restarted.is_set()
                    calls[number] += 1
                    try:
                        result = await session.call_tool("list_allowed_directories", {})
                    except Exception as exc:  # a failed call, whatever it is: reported below
                        failures.append(f"client {number}: {exc!r}")
                        continue
                    if result.is_error:
                        failures.append(f"client {number}: {result}")
                    elif after_restart:
                        progressed[number].set()

        with ExitStack() as restarted:
            async with anyio.create_task_group() as tg:
                for number in range(CLIENTS):
                    ready = anyio.Event()
                    tg.start_soon(client, number, ready)
                    with anyio.fail_after(TIMEOUT_S):
                        await ready.wait()

                began = time.monotonic()
                took: list[float] = []
                for i, old in enumerate(processes):
                    started = time.monotonic()
                    port = int(old.base.rsplit(":", 1)[1])
                    with anyio.fail_after(RESTART_BOUND_S):
                        old.process.send_signal(signal.SIGTERM)
                        code = await anyio.to_thread.run_sync(old.process.wait)
                        assert code == 0, "\n".join(old.log)
                        new = await anyio.to_thread.run_sync(
                            restarted.enter_context,
                            bundle_process("--config", str(tmp_path / "bundle.toml"), *SERVERS, port=port),
                        )
                        assert new.base == old.base
                        await haproxy_sees(front, f"r{i}", "UP")
                    took.append(time.monotonic() - started)
                restart_s = time.monotonic() - began

                # Every client makes progress after the last restart, then they stop.
                during_restart = sum(calls)
                all_restarted.set()
                with anyio.fail_after(TIMEOUT_S):
                    for event in progressed:
                        await event.wait()
                stop.set()

    total = sum(calls)
    print(
        f"\nrolling restart ({bus_url.split(':')[0]}): {total} calls by {CLIENTS} clients, "
        f"{len(failures)} failed; restart of 3 replicas took {restart_s:.1f} s "
        f"({', '.join(f'{t:.1f}' for t in took)} s each); "
        f"{during_restart} calls until the last replica was up again"
    )
    assert failures == [], failures[:10]
    assert min(calls) > 0
