"""Three replicas of the bundle behind a real HAProxy (round-robin, no stickiness), with
PostgreSQL and with Redis as the change bus (issue 23).

A 2026-07-28 client listens through the balancer (its stream lands on one replica); changes are
then made through each replica directly, so at least two of them are made on a replica that does
not hold the stream. What carries each change to the listener's replica:

- a file write: the change bus. The replicas run with `[filesystem] watch = false` (as on a
  network volume, where a watcher does not see the other hosts' writes), so only the writing
  replica knows of it: it publishes its own write, the listener's replica delivers it;
- a table creation (SQLite) and a task change (a SQLite file the replicas share): the database
  file itself, which the listener's replica watches while its client listens; mcp-tasks does
  not publish on the bus, it fans out through its database;
- a commit: the repository's refs, watched by the listener's replica (git publishes what it
  rechecks after its own changes, for the URIs subscribed on the writing replica).

HAProxy is Debian's: installed with apt-get on first use when absent (CI fails if it cannot be).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx2
import pytest
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_batteries.testing import Notifications, connect_http, legacy_subscribe, write_private
from redis.asyncio import Redis

from ..buses import POSTGRES, REDIS, unreachable
from ..node import _install_lock
from .conftest import BundleProcess, bundle_process, running_bundle

pytestmark = pytest.mark.anyio

TIMEOUT_S = 30
SERVERS = ("filesystem", "git", "sql", "tasks")


# -- HAProxy ------------------------------------------------------------------------------------------


def _find_haproxy() -> str | None:
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
    )


def _apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["apt-get", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


@pytest.fixture(scope="session")
def haproxy() -> str:
    """Debian's HAProxy; apt-get installs it (once, under the tools lock) when it is absent."""
    found = _find_haproxy()
    if found:
        return found
    if sys.platform != "linux" or shutil.which("apt-get") is None:
        pytest.skip("HAProxy is not installed and there is no apt-get to install it")
    with _install_lock():
        found = _find_haproxy()
        if found is None:
            result = _apt_get("install", "-y", "--no-install-recommends", "haproxy")
            if result.returncode != 0:  # a new machine's package lists may be missing or stale
                _apt_get("update")
                result = _apt_get("install", "-y", "--no-install-recommends", "haproxy")
            found = _find_haproxy()
            if found is None:
                message = (
                    f"cannot install HAProxy with apt-get ({result.returncode}): {result.stderr[-2000:]}"
                )
                if os.environ.get("CI"):
                    pytest.fail(message)
                pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def balancer(haproxy: str, backends: list[str], folder: Path) -> Iterator[tuple[str, str]]:
    """HAProxy on two free loopback ports, round-robin over `backends` (http://host:port): the
    first without stickiness (each request may land on any replica), the second keeping each
    handshake-era session on the replica that opened it (docs/deploy.md's stick table)."""
    port, sticky_port = free_port(), free_port()
    servers = "\n".join(
        f"    server r{i} {base.removeprefix('http://')} check inter 1s fastinter 200ms"
        for i, base in enumerate(backends)
    )
    config = folder / "haproxy.cfg"
    config.write_text(
        f"""global
    maxconn 512

defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    option http-server-close
    # A replica that was just killed refuses connections until the health check sees it: the
    # request is retried on another one.
    retries 3
    option redispatch 1
    # What a restarting replica did not run is retried on another one (the default retries only
    # refused connections): the 503 (Retry-After) a draining replica or a starting mount answers,
    # and the connections that were still in the kernel's accept queue when a draining replica
    # closed its listener (reset after HAProxy sent the request: an empty response). The price
    # (docs/deploy.md): a replica that crashes mid-call also gives an empty response, and that
    # call is run again elsewhere.
    retry-on conn-failure empty-response 503
    # HAProxy retries only a request it holds whole: wait for the body before picking a replica.
    option http-buffer-request
    # A replica is healthy when its HTTP server answers, not merely when its port accepts: a
    # draining replica has closed its listener, a starting one answers once it serves.
    option httpchk GET /healthz

frontend mcp
    bind 127.0.0.1:{port}
    # What HAProxy thinks of each replica (CSV at /haproxy-stats;csv), for tests that wait on it.
    stats enable
    stats uri /haproxy-stats
    default_backend replicas

backend replicas
    balance roundrobin
{servers}

frontend mcp_sticky
    bind 127.0.0.1:{sticky_port}
    default_backend sessions

backend sessions
    balance roundrobin
    stick-table type string len 128 size 10k expire 30m
    stick store-response res.hdr(mcp-session-id)
    stick match req.hdr(mcp-session-id)
{servers}
"""
    )
    process = subprocess.Popen(
        [haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{sticky_port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_listening(base: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with httpx2.AsyncClient() as http:
            while True:
                try:
                    if (await http.get(base + "/healthz")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.05)  # HAProxy is another process: there is nothing to await


# -- the buses ----------------------------------------------------------------------------------------


async def kill_bus_connections(url: str, prefix: str) -> int:
    """End every bus connection of the replicas (found by the channel prefix they are named by)."""
    if url.startswith("postgresql"):
        conn = await asyncpg.connect(POSTGRES, timeout=5)
        try:
            killed: int = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name LIKE $1",
                f"mcp-batteries-bus {prefix}.%",
            )
        finally:
            await conn.close()
        return killed
    client = Redis.from_url(REDIS)
    try:
        killed = 0
        for entry in await client.client_list():
            if str(entry.get("name", "")).startswith(f"mcp-batteries-bus:{prefix}."):
                killed += await client.client_kill_filter(_id=entry["id"])
        return killed
    finally:
        await client.aclose()


# -- three replicas -----------------------------------------------------------------------------------


def make_shared_volume(root: Path) -> dict[str, Path]:
    files, repo = root / "files", root / "repo"
    files.mkdir()
    (files / "watched.txt").write_text("0\n")
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@localhost"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    return {"files": files, "repo": repo, "db": root / "shared.sqlite", "tasks": root / "tasks.sqlite"}


@asynccontextmanager
async def replicas(
    tmp_path: Path, bus: str, prefix: str, haproxy: str, processes: list[BundleProcess] | None = None
) -> AsyncIterator[tuple[str, list[str], str]]:
    """Three `mcp-batteries serve` processes sharing one volume and one bus, behind HAProxy:
    (the balancer's base URL, each replica's base URL, the sticky balancer's base URL). The
    processes are appended to `processes` when given (to kill one)."""
    volume = make_shared_volume(tmp_path)
    import sqlite3

    with sqlite3.connect(volume["db"]) as db:
        db.execute("CREATE TABLE first (id INTEGER PRIMARY KEY)")
    # The replicas' shared request-state key, which also seals the session registry's records.
    key = write_private(tmp_path / "state.key", "k" * 64 + "\n")
    config = tmp_path / "bundle.toml"
    config.write_text(
        f"""bus = "{bus}"
bus_channel = "{prefix}"
request_state_key_file = "{key}"

[filesystem]
directories = ["{volume["files"]}"]
watch = false

[git]
repository = ["{volume["repo"]}"]
author = "Replica <replica@localhost>"

[sql]
databases = ["{volume["db"]}"]
allow_write = true
schema_poll_interval = 0.5

[tasks]
db = "{volume["tasks"]}"
"""
    )
    with ExitStack() as stack:
        started: list[BundleProcess] = [
            stack.enter_context(bundle_process("--config", str(config), *SERVERS)) for _ in range(3)
        ]
        if processes is not None:
            processes.extend(started)
        bases = [p.base for p in started]
        front, sticky = stack.enter_context(balancer(haproxy, bases, tmp_path))
        await wait_listening(front)
        await wait_listening(sticky)
        yield front, bases, sticky


async def next_event(events: Any, wanted: Any) -> None:
    """Wait for an event matching `wanted(event)` on a listen stream."""
    with anyio.fail_after(TIMEOUT_S):
        async for event in events:
            if wanted(event):
                return


def updated(uri: str) -> Any:
    return lambda event: isinstance(event, ResourceUpdated) and event.uri == uri


def list_changed(event: Any) -> bool:
    return isinstance(event, ResourcesListChanged)


async def status(base: str) -> dict[str, Any]:
    async with httpx2.AsyncClient() as http:
        reply: dict[str, Any] = (await http.get(base + "/status")).json()
        return reply


# -- the stage ----------------------------------------------------------------------------------------


async def test_a_listener_behind_the_balancer_hears_changes_made_through_every_replica(
    tmp_path: Path, bus_url: str, haproxy: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    async with replicas(tmp_path, bus_url, prefix, haproxy) as (front, bases, _):
        watched = (tmp_path / "files" / "watched.txt").as_uri()
        async with (
            connect_http(f"{front}/filesystem/mcp", "modern") as files,
            files.listen(resource_subscriptions=[watched], resources_list_changed=True) as file_events,
            connect_http(f"{front}/sql/mcp", "modern") as sql,
            sql.listen(resources_list_changed=True) as sql_events,
            connect_http(f"{front}/tasks/mcp", "modern") as tasks,
            tasks.listen(resource_subscriptions=["tasks://list"], resources_list_changed=True) as task_events,
            connect_http(f"{front}/git/mcp", "modern") as git,
            git.listen(resource_subscriptions=["git://repo/log"]) as git_events,
        ):
            for turn, base in enumerate(bases):
                async with connect_http(f"{base}/filesystem/mcp", "modern") as writer:
                    await writer.call_tool("write_file", {"path": str(tmp_path / "files" / "watched.txt"),
                                                          "content": f"{turn}\n"})  # fmt: skip
                await next_event(file_events, updated(watched))

                async with connect_http(f"{base}/sql/mcp", "modern") as writer:
                    result = await writer.call_tool(
                        "execute", {"statements": [f"CREATE TABLE made_{turn} (id INTEGER)"]}
                    )
                    assert not result.is_error, result
                await next_event(sql_events, list_changed)

                async with connect_http(f"{base}/tasks/mcp", "modern") as writer:
                    result = await writer.call_tool("add_task", {"title": f"task through replica {turn}"})
                    assert not result.is_error, result
                await next_event(task_events, updated("tasks://list"))

                async with connect_http(f"{base}/git/mcp", "modern") as writer:
                    (tmp_path / "repo" / f"file{turn}.txt").write_text(f"{turn}\n")
                    result = await writer.call_tool("git_add", {"files": [f"file{turn}.txt"]})
                    assert not result.is_error, result
                    result = await writer.call_tool("git_commit", {"message": f"through replica {turn}"})
                    assert not result.is_error, result
                await next_event(git_events, updated("git://repo/log"))

            # Every replica reports its bus (the servers that publish on it).
            for base in bases:
                report = await status(base)
                mounts = {server["name"]: server for server in report["servers"]}
                assert mounts["filesystem"]["bus"]["state"] == "connected"
                assert report["status"] == "ok"


async def test_replicas_that_lose_the_bus_say_so_and_recover_without_a_restart(
    tmp_path: Path, bus_url: str, haproxy: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    async with replicas(tmp_path, bus_url, prefix, haproxy) as (front, bases, _):
        watched = (tmp_path / "files" / "watched.txt").as_uri()
        async with (
            connect_http(f"{front}/filesystem/mcp", "modern") as files,
            files.listen(resource_subscriptions=[watched]) as events,
        ):
            assert await kill_bus_connections(bus_url, prefix) >= 3
            with anyio.fail_after(TIMEOUT_S):
                for base in bases:
                    while True:
                        bus = {s["name"]: s for s in (await status(base))["servers"]}["filesystem"]["bus"]
                        if bus["reconnects"] >= 1 and bus["state"] == "connected":
                            break
                        await anyio.sleep(0.1)  # another process's /status: nothing to await
            # The listener was told anything may have changed in the gap, then hears new writes.
            await next_event(events, updated(watched))
            for turn, base in enumerate(bases):
                async with connect_http(f"{base}/filesystem/mcp", "modern") as writer:
                    await writer.call_tool("write_file", {"path": str(tmp_path / "files" / "watched.txt"),
                                                          "content": f"after {turn}\n"})  # fmt: skip
                await next_event(events, updated(watched))


async def test_a_replica_that_cannot_reach_its_bus_serves_and_says_degraded(tmp_path: Path) -> None:
    config = tmp_path / "bundle.toml"
    config.write_text(f'bus = "redis://127.0.0.1:9/0"\n\n[filesystem]\ndirectories = ["{tmp_path}"]\n')
    async with running_bundle("--config", str(config), "filesystem") as bundle:
        report = await status(bundle.base)
        assert report["status"] == "degraded"
        (mount,) = report["servers"]
        assert mount["state"] == "ready"
        assert mount["bus"]["state"] == "disconnected" and mount["bus"]["engine"] == "redis"
        assert "last_error" in mount["bus"]
        async with connect_http(f"{bundle.base}/filesystem/mcp", "modern") as client:
            assert not (await client.call_tool("list_allowed_directories", {})).is_error


async def test_a_handshake_era_session_behind_a_sticky_balancer_hears_writes_made_through_every_replica(
    tmp_path: Path, haproxy: str
) -> None:
    try:
        client = Redis.from_url(REDIS, socket_connect_timeout=5)
        await client.ping()
        await client.aclose()
    except Exception as exc:
        unreachable("Redis", REDIS, exc)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    async with replicas(tmp_path, REDIS, prefix, haproxy) as (_, bases, sticky):
        watched = tmp_path / "files" / "watched.txt"
        heard = Notifications()

        def updates() -> int:
            return heard.methods().count("notifications/resources/updated")

        async with connect_http(f"{sticky}/filesystem/mcp", "legacy", message_handler=heard) as session:
            await legacy_subscribe(session, watched.as_uri())
            for turn, base in enumerate(bases):
                # The session's requests keep working: each reaches the replica that opened it.
                assert not (await session.call_tool("list_allowed_directories", {})).is_error
                async with connect_http(f"{base}/filesystem/mcp", "modern") as writer:
                    await writer.call_tool("write_file", {"path": str(watched), "content": f"{turn}\n"})
                await heard.wait_for(lambda _note, turn=turn: updates() > turn, timeout=TIMEOUT_S)
