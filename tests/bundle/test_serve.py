"""`mcp-batteries serve`: every installed server behind one HTTP endpoint, through real clients.

The bundle runs in the test's event loop (uvicorn on a free port) unless a test needs the console
script itself (signals, exit statuses): then it is a subprocess.
"""

from __future__ import annotations

import http.server
import json
import signal
import sys
import threading
import time
import types
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx2
import pytest
from mcp.types import ListRootsResult, Root
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._entry.definition import ServerDefinition, discover
from mcp_batteries.testing import (
    AUDIENCE,
    ERAS,
    Era,
    Notifications,
    TestIssuer,
    connect_http,
    http_server,
    legacy_subscribe,
    write_private,
)

from .conftest import bundle_process, running_bundle

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "tree"
    (base / "src").mkdir(parents=True)
    (base / "a.txt").write_text("alpha\n")
    (base / "src" / "b.txt").write_text("beta\n")
    return base


def bundle_file(tmp_path: Path, tree: Path, **tables: str) -> Path:
    """The bundle's file: every server's state in `tmp_path` (never in the user's data directory)."""
    sections = {
        "filesystem": f'directories = ["{tree}"]',
        "sql": f'databases = ["sqlite:///{tmp_path / "app.db"}"]\nallow_write = true',
        **({"tasks": f'db = "{tmp_path / "tasks.db"}"'} if "tasks" in discover() else {}),
        **({"git": f'directories = ["{tree}"]'} if "git" in discover() else {}),
        **tables,
    }
    path = tmp_path / "bundle.toml"
    path.write_text("".join(f"[{name}]\n{body}\n\n" for name, body in sections.items()))
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_every_installed_server_answers_at_its_own_path(tmp_path: Path, tree: Path, era: Era) -> None:
    async with running_bundle("--config", str(bundle_file(tmp_path, tree))) as bundle:
        async with connect_http(bundle.url("filesystem"), era) as files:
            assert text(await files.call_tool("read_text_file", {"path": "a.txt"})) == "alpha\n"
        async with connect_http(bundle.url("sql"), era) as sql:
            statements = ["CREATE TABLE IF NOT EXISTS t (x INTEGER)", "INSERT INTO t VALUES (42)"]
            assert not (await sql.call_tool("execute", {"statements": statements})).is_error
            assert "42" in text(await sql.call_tool("query", {"sql": "SELECT x FROM t"}))
        async with connect_http(bundle.url("fetch"), era) as fetch:
            assert "fetch" in {tool.name for tool in (await fetch.list_tools()).tools}


async def test_healthz_and_status_describe_the_process_and_each_server(tmp_path: Path, tree: Path) -> None:
    installed = discover()
    async with (
        running_bundle("--config", str(bundle_file(tmp_path, tree))) as bundle,
        httpx2.AsyncClient() as http,
    ):
        health = await http.get(bundle.base + "/healthz")
        async with connect_http(bundle.url("filesystem"), "legacy") as client:
            await client.list_tools()
            during = (await http.get(bundle.base + "/status")).json()
        after = (await http.get(bundle.base + "/status")).json()
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert during["status"] == "ok"
    assert [server["name"] for server in during["servers"]] == sorted(installed)
    for server in during["servers"]:
        assert server["path"] == f"/{server['name']}/mcp"
        assert server["state"] == "ready" and "reason" not in server
        assert server["version"] == installed[server["name"]].version
    sessions = {server["name"]: server["sessions"] for server in during["servers"]}
    assert sessions["filesystem"] == 1 and sessions["sql"] == 0
    kept = {server["name"]: server["event_store_bytes"] for server in during["servers"]}
    assert kept["filesystem"] > 0 and kept["sql"] == 0
    assert {server["name"]: server["sessions"] for server in after["servers"]}["filesystem"] == 0


async def test_a_server_that_cannot_start_answers_503_with_the_reason_while_the_others_serve(
    tmp_path: Path, tree: Path
) -> None:
    unreachable = 'databases = ["postgresql://postgres@127.0.0.1:9/nothing_listens_here"]'
    config = bundle_file(tmp_path, tree, sql=unreachable)
    async with (
        running_bundle("filesystem", "sql", "--config", str(config)) as bundle,
        httpx2.AsyncClient() as http,
    ):
        status = (await http.get(bundle.base + "/status")).json()
        refused = await http.post(bundle.url("sql"), json=INIT, headers=JSON_AND_SSE)
        async with connect_http(bundle.url("filesystem"), "modern") as files:
            assert text(await files.call_tool("read_text_file", {"path": "a.txt"})) == "alpha\n"
    states = {server["name"]: server for server in status["servers"]}
    assert status["status"] == "degraded"
    assert states["filesystem"]["state"] == "ready"
    assert states["sql"]["state"] == "failed" and states["sql"]["reason"].startswith("failed to start: ")
    assert "127.0.0.1" in states["sql"]["reason"]
    assert refused.status_code == 503
    message = refused.json()["error"]["message"]
    assert message.startswith("sql is not available: it failed to start: ") and "127.0.0.1" in message


@pytest.mark.parametrize("era", ERAS)
async def test_subscriptions_and_list_changes_reach_clients_through_the_bundle(
    tmp_path: Path, tree: Path, era: Era
) -> None:
    heard = Notifications()
    target = tree / "a.txt"
    async with (
        running_bundle("filesystem", "--config", str(bundle_file(tmp_path, tree))) as bundle,
        connect_http(bundle.url("filesystem"), era, message_handler=heard) as client,
    ):
        await client.list_tools()
        uri = target.as_uri()
        if era == "legacy":
            await legacy_subscribe(client, uri)
            target.write_text("changed by someone else\n")
            await heard.wait_method("notifications/resources/updated", uri)
            (tree / "new.txt").write_text("new")
            await heard.wait_method("notifications/resources/list_changed")
        else:
            async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as events:
                target.write_text("changed by someone else\n")
                kinds: set[str] = set()
                with anyio.fail_after(10):
                    async for event in events:
                        kinds.add(type(event).__name__)
                        if kinds == {"ResourceUpdated"}:
                            (tree / "new.txt").write_text("new")
                        if kinds >= {"ResourceUpdated", "ResourcesListChanged"}:
                            break


async def test_client_roots_narrow_a_mounted_server_as_they_narrow_it_alone(
    tmp_path: Path, tree: Path
) -> None:
    async def only_src(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=(tree / "src").as_uri())])

    async with (
        running_bundle("filesystem", "--config", str(bundle_file(tmp_path, tree))) as bundle,
        connect_http(bundle.url("filesystem"), "legacy", list_roots_callback=only_src) as client,
    ):
        assert text(await client.call_tool("list_allowed_directories", {})).endswith(str(tree / "src"))
        refused = await client.call_tool("read_text_file", {"path": str(tree / "a.txt")})
        assert refused.is_error


async def test_stateless_bundle_serves_both_eras_without_sessions(tmp_path: Path, tree: Path) -> None:
    config = str(bundle_file(tmp_path, tree))
    async with (
        running_bundle("filesystem", "--config", config, "--stateless") as bundle,
        httpx2.AsyncClient() as http,
    ):
        for era in ERAS:
            async with connect_http(bundle.url("filesystem"), era) as client:
                assert text(await client.call_tool("read_text_file", {"path": "a.txt"})) == "alpha\n"
        status = (await http.get(bundle.base + "/status")).json()
    assert status["servers"][0]["sessions"] == 0


async def test_foreign_hosts_and_origins_are_refused_and_unknown_paths_name_the_servers(
    tmp_path: Path, tree: Path
) -> None:
    async with (
        running_bundle("--config", str(bundle_file(tmp_path, tree))) as bundle,
        httpx2.AsyncClient() as http,
    ):
        for name in ("filesystem", "sql", "fetch"):
            rebound = await http.post(
                bundle.url(name), json=INIT, headers={**JSON_AND_SSE, "host": "evil.example"}
            )
            assert rebound.status_code == 421, name
            cross = await http.post(
                bundle.url(name), json=INIT, headers={**JSON_AND_SSE, "origin": "http://evil.example"}
            )
            assert cross.status_code == 403, name
        missing = await http.post(bundle.base + "/filesystem", json=INIT, headers=JSON_AND_SSE)
    assert missing.status_code == 404
    assert "/filesystem/mcp" in missing.json()["error"]["message"]


async def test_one_static_token_signs_in_to_every_server_and_status_but_not_healthz(
    tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_AUTH_TOKEN", "s3cret-token-for-the-bundle")
    async with (
        running_bundle("--config", str(bundle_file(tmp_path, tree))) as bundle,
        httpx2.AsyncClient() as http,
    ):
        assert (await http.get(bundle.base + "/healthz")).status_code == 200
        assert (await http.get(bundle.base + "/status")).status_code == 401
        signed = {"authorization": "Bearer s3cret-token-for-the-bundle"}
        assert (await http.get(bundle.base + "/status", headers=signed)).status_code == 200
        for name in ("filesystem", "sql", "fetch"):
            anonymous = await http.post(bundle.url(name), json=INIT, headers=JSON_AND_SSE)
            assert anonymous.status_code == 401, name
            wrong = await http.post(
                bundle.url(name), json=INIT, headers={**JSON_AND_SSE, "authorization": "Bearer nope"}
            )
            assert wrong.status_code == 401, name
        for era in ERAS:
            async with connect_http(
                bundle.url("filesystem"), era, token="s3cret-token-for-the-bundle"
            ) as client:
                assert text(await client.call_tool("read_text_file", {"path": "a.txt"})) == "alpha\n"


async def test_oauth_metadata_is_served_for_every_mount_and_named_by_each_challenge(
    tmp_path: Path, tree: Path
) -> None:
    with TestIssuer() as issuer:
        oauth = ("--oauth-issuer", issuer.issuer, "--oauth-audience", AUDIENCE)
        config = str(bundle_file(tmp_path, tree))
        async with running_bundle("--config", config, *oauth) as bundle, httpx2.AsyncClient() as http:
            for name in ("filesystem", "sql", "fetch"):
                where = f"/.well-known/oauth-protected-resource/{name}/mcp"
                metadata = await http.get(bundle.base + where)
                assert metadata.status_code == 200, name
                assert metadata.json()["resource"] == bundle.url(name)
                assert metadata.json()["authorization_servers"] == [issuer.issuer]
                challenge = (await http.post(bundle.url(name), json=INIT, headers=JSON_AND_SSE)).headers
                assert f'resource_metadata="{bundle.base}{where}"' in challenge["www-authenticate"]
            reader = issuer.mint(scope="mcp:read")
            async with connect_http(bundle.url("filesystem"), "legacy", token=reader) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "read_text_file" in names and "write_file" not in names


# -- the console script: exit statuses and signals ---------------------------------------------------


class SlowPage:
    """A page on loopback that takes its time, and says when a request for it has arrived."""

    def __init__(self, delay: float) -> None:
        self.arrived = threading.Event()
        delay_s = delay
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/robots.txt":
                    self.send_response(404)
                    self.end_headers()
                    return
                owner.arrived.set()
                threading.Event().wait(delay_s)
                body = b"<html><body><h1>Slow</h1><p>worth the wait</p></body></html>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/slow"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def slow_page() -> Iterator[SlowPage]:
    page = SlowPage(delay=2.0)
    yield page
    page.close()


async def open_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A legacy session opened by hand: the headers every later request of it carries."""
    opened = await http.post(url, json=INIT, headers=JSON_AND_SSE)
    assert opened.status_code == 200, opened.text
    headers = {
        **JSON_AND_SSE,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers=headers)).status_code == 202
    return headers


async def sse_result(response: httpx2.Response, request_id: int) -> dict[str, Any] | None:
    """The JSON-RPC answer to `request_id` on an SSE response, or None if the stream ends first."""
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return message
    return None


async def test_sigterm_lets_calls_in_flight_finish_then_closes_sessions_and_exits_0(
    tmp_path: Path, tree: Path, slow_page: SlowPage
) -> None:
    config = bundle_file(tmp_path, tree, fetch='allow_private_host = ["127.0.0.1"]')
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "fetch", "arguments": {"url": slow_page.url}},
    }
    answers: list[dict[str, Any] | None] = []
    stream_ended = anyio.Event()
    with bundle_process("filesystem", "fetch", "--config", str(config), "--shutdown-grace", "15") as running:
        async with httpx2.AsyncClient(timeout=30) as http:
            fetching = await open_session(http, running.url("fetch"))
            idle = await open_session(http, running.url("filesystem"))

            async def idle_stream() -> None:  # a session doing nothing, its event stream open
                async with http.stream("GET", running.url("filesystem"), headers=idle) as response:
                    assert response.status_code == 200
                    async for _ in response.aiter_lines():
                        pass
                stream_ended.set()

            async def slow_call() -> None:
                async with http.stream("POST", running.url("fetch"), json=call, headers=fetching) as response:
                    answers.append(await sse_result(response, 7))

            async with anyio.create_task_group() as tg:
                tg.start_soon(idle_stream)
                tg.start_soon(slow_call)
                await anyio.to_thread.run_sync(slow_page.arrived.wait, 20)
                signalled = time.monotonic()
                running.process.send_signal(signal.SIGTERM)
                with anyio.fail_after(20):
                    await stream_ended.wait()
        status = await anyio.to_thread.run_sync(lambda: running.process.wait(timeout=20))
        stopped_after = time.monotonic() - signalled
    assert answers and answers[0] is not None, running.log
    result = answers[0]["result"]
    assert not result.get("isError") and "worth the wait" in json.dumps(result)
    assert status == 0, running.log
    assert stopped_after < 15


async def test_a_single_server_also_lets_calls_in_flight_finish_on_sigterm(slow_page: SlowPage) -> None:
    # The same drain as the bundle's (mcp_batteries._transport.http.draining_server), for one server alone.
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "fetch", "arguments": {"url": slow_page.url}},
    }
    answers: list[dict[str, Any] | None] = []
    async with http_server(
        "mcp-batteries-fetch", "--allow-private-host", "127.0.0.1", "--ignore-robots-txt"
    ) as running:
        async with httpx2.AsyncClient(timeout=30) as http:
            session = await open_session(http, running.url)

            async def slow_call() -> None:
                async with http.stream("POST", running.url, json=call, headers=session) as response:
                    answers.append(await sse_result(response, 9))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_call)
                await anyio.to_thread.run_sync(slow_page.arrived.wait, 20)
                running.process.send_signal(signal.SIGTERM)
        status = await anyio.to_thread.run_sync(lambda: running.process.wait(timeout=20))
    assert answers and answers[0] is not None, running.stderr_lines
    assert "worth the wait" in json.dumps(answers[0]["result"])
    assert status == 0


async def test_configuration_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    bad_key = tmp_path / "bad-key.toml"
    bad_key.write_text("[sql]\nallow_writes = true\n")
    bad_server = tmp_path / "bad-server.toml"
    bad_server.write_text("[nosuch]\nx = 1\n")
    misplaced = tmp_path / "misplaced.toml"
    misplaced.write_text("[filesystem]\nport = 9000\n")
    cases = {
        ("serve", "nosuch"): "unknown server(s) nosuch; installed servers: ",
        ("serve", "--config", str(bad_key)): "unknown setting 'allow_writes' in [sql] of ",
        ("serve", "--config", str(bad_server)): "unknown server [nosuch] in ",
        ("serve", "--config", str(misplaced)): "'port' in [filesystem] of ",
        ("serve", "--port", "x"): "--port",
    }
    from mcp_batteries.testing import script_path

    for argv, expected in cases.items():
        done = await anyio.run_process([script_path("mcp-batteries"), *argv], check=False)
        err = done.stderr.decode()
        assert done.returncode == 2, (argv, err)
        assert err.count("\n") == 1 and expected in err, (argv, err)


# -- servers that are slow to start, or cannot be built ---------------------------------------------


class SlowSettings(ServerSettings):
    server_name: ClassVar[str] = "slow"
    distribution: ClassVar[str | None] = "mcp-batteries"


class BrokenSettings(ServerSettings):
    server_name: ClassVar[str] = "broken"
    distribution: ClassVar[str | None] = "mcp-batteries"


def servers_module(release: anyio.Event) -> str:
    """A module the definitions below build from (definitions name their builder by import path)."""
    module = types.ModuleType("bundle_test_servers")

    def build_slow(settings: SlowSettings) -> BatteriesServer:
        server = BatteriesServer(settings, instructions="Starts when the test says so.")

        @asynccontextmanager
        async def waits_for_the_test() -> AsyncIterator[None]:
            await release.wait()
            yield

        server.service(waits_for_the_test)

        @server.tool(title="Ping", read_only=True)
        async def hello() -> str:
            """Says hello."""
            return "hello"

        return server

    def build_broken(settings: BrokenSettings) -> BatteriesServer:
        raise ImportError("a dependency of this server is missing")

    module.build_slow = build_slow  # type: ignore[attr-defined]
    module.build_broken = build_broken  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module.__name__


async def test_a_server_still_starting_answers_503_then_serves_and_one_that_cannot_be_built_is_failed(
    tmp_path: Path,
) -> None:
    release = anyio.Event()
    module = servers_module(release)
    installed = {
        "slow": ServerDefinition(settings=SlowSettings, build=f"{module}:build_slow", description="slow"),
        "broken": ServerDefinition(settings=BrokenSettings, build=f"{module}:build_broken", description="x"),
    }
    async with (
        running_bundle("--startup-timeout", "0.5", installed=installed) as bundle,
        httpx2.AsyncClient() as http,
    ):
        starting = await http.post(bundle.url("slow"), json=INIT, headers=JSON_AND_SSE)
        status = {s["name"]: s for s in (await http.get(bundle.base + "/status")).json()["servers"]}
        release.set()
        for mount in bundle.app.mounts:
            await mount.wait_settled()
        async with connect_http(bundle.url("slow"), "modern") as client:
            said = text(await client.call_tool("hello", {}))
        broken = await http.post(bundle.url("broken"), json=INIT, headers=JSON_AND_SSE)
    assert starting.status_code == 503 and starting.headers["retry-after"] == "1"
    assert "slow is starting" in starting.json()["error"]["message"]
    assert status["slow"]["state"] == "starting"
    assert status["broken"]["state"] == "failed"
    assert (
        status["broken"]["reason"]
        == "could not be built: ImportError: a dependency of this server is missing"
    )
    assert said == "hello"
    assert broken.status_code == 503


async def test_a_tokens_file_at_the_top_level_signs_people_in_to_every_server_with_their_scopes(
    tmp_path: Path, tree: Path
) -> None:
    tokens = write_private(tmp_path / "tokens.toml", "")
    tokens.write_text(
        '[[tokens]]\nuser = "alice"\ntoken = "alice-token-0123456789"\n\n'
        '[[tokens]]\nuser = "bob"\ntoken = "bob-token-0123456789ab"\nscopes = ["mcp:read"]\n'
    )
    config = bundle_file(tmp_path, tree)
    config.write_text(f'tokens_file = "{tokens}"\n' + config.read_text())
    async with running_bundle("filesystem", "sql", "--config", str(config)) as bundle:
        for name, writer in (("filesystem", "write_file"), ("sql", "execute")):
            async with connect_http(bundle.url(name), "legacy", token="alice-token-0123456789") as alice:
                assert writer in {tool.name for tool in (await alice.list_tools()).tools}
            async with connect_http(bundle.url(name), "modern", token="bob-token-0123456789ab") as bob:
                assert writer not in {tool.name for tool in (await bob.list_tools()).tools}
        async with httpx2.AsyncClient() as http:
            stranger = await http.post(
                bundle.url("sql"),
                json=INIT,
                headers={**JSON_AND_SSE, "authorization": "Bearer nobody-0123456789"},
            )
    assert stranger.status_code == 401


@pytest.mark.parametrize("name", ["filesystem", "git"])
async def test_a_client_whose_roots_list_is_empty_may_use_a_mounted_server_as_configured(
    tmp_path: Path, tree: Path, name: str
) -> None:
    # The MCP Inspector declares roots and answers roots/list with [].
    async def no_roots(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[])

    await anyio.run_process(["git", "init", "--quiet", str(tree / "repo")])
    async with (
        running_bundle(name, "--config", str(bundle_file(tmp_path, tree))) as bundle,
        connect_http(bundle.url(name), "legacy", list_roots_callback=no_roots) as client,
    ):
        if name == "filesystem":
            result = await client.call_tool("read_text_file", {"path": "a.txt"})
            assert text(result) == "alpha\n"
        else:
            result = await client.call_tool("git_status", {"repo_path": str(tree / "repo")})
            assert not result.is_error, text(result)


# -- what callers without a token learn, and secrets in what the bundle shows ------------------------


async def test_without_a_valid_token_no_path_says_what_is_mounted(
    tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_AUTH_TOKEN", "s3cret-token-for-the-bundle")
    async with (
        running_bundle("filesystem", "sql", "--config", str(bundle_file(tmp_path, tree))) as bundle,
        httpx2.AsyncClient() as http,
    ):
        knocks = {
            path: await http.get(bundle.base + path, headers=headers)
            for path in ("/no/such/path", "/filesystem/mcp", "/nosuch/mcp", "/status", "/")
            for headers in ({}, {"authorization": "Bearer wrong-token-0123456789"})
        }
        signed = {"authorization": "Bearer s3cret-token-for-the-bundle"}
        unknown_signed_in = await http.get(bundle.base + "/no/such/path", headers=signed)
        health = await http.get(bundle.base + "/healthz")
    bodies = {response.text for response in knocks.values()}
    assert {response.status_code for response in knocks.values()} == {401}
    for body in bodies:
        assert "filesystem" not in body and "sql" not in body and "/mcp" not in body, body
    # A signed-in caller who mistyped a path is told where the servers are.
    assert unknown_signed_in.status_code == 404
    assert "/filesystem/mcp" in unknown_signed_in.json()["error"]["message"]
    # /healthz stays a bare liveness answer.
    assert health.status_code == 200 and set(health.json()) == {"status", "version"}


async def test_a_database_password_never_reaches_status_the_503_body_or_the_log(
    tmp_path: Path, tree: Path
) -> None:
    # A token as user name, a password with "@" and ":", secrets in the query string.
    unreachable = (
        'database_url = "postgresql://ghp_tokenuser:hunter2@in:userinfo@127.0.0.1:9/tasks'
        '?password=query-secret-1&access_token=query-token-2&sslmode=disable"'
    )
    config = bundle_file(tmp_path, tree, tasks=unreachable)
    with bundle_process(
        "filesystem", "tasks", "--config", str(config), "--log-level", "debug", env={"HOME": str(tmp_path)}
    ) as bundle:
        async with httpx2.AsyncClient() as http:
            status = await http.get(bundle.base + "/status")
            refused = await http.post(bundle.url("tasks"), json=INIT, headers=JSON_AND_SSE)
    states = {server["name"]: server for server in status.json()["servers"]}
    assert states["tasks"]["state"] == "failed" and "127.0.0.1:9/tasks" in states["tasks"]["reason"]
    assert "sslmode=disable" in states["tasks"]["reason"]
    assert refused.status_code == 503 and "127.0.0.1:9/tasks" in refused.text
    log = "\n".join(bundle.log)
    assert "127.0.0.1:9/tasks" in log
    for shown in (status.text, refused.text, log):
        for secret in ("ghp_tokenuser", "hunter2", "userinfo", "query-secret-1", "query-token-2"):
            assert secret not in shown, (secret, shown)
