"""Long tool calls as tasks, on every real server, driven as subprocesses by the SDK's client.

For each server's long tools (docs/long-work.md): a 2026-07-28 client that declares the tasks
extension gets a task it polls to the result; one that does not, and every handshake-era client
(even one declaring it), gets the result in the request as before. On the SQL server: cancelling a
long query stops it, a finished task expires after `--task-ttl`, and over HTTP with two tokens
one caller's tasks do not exist for the other. `--task-after 0` makes every long call a task as
soon as its work starts, so none of this depends on how fast the machine is.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp.types import CallToolResult, TextContent
from mcp_batteries.testing import (
    CreatedTask,
    cancel_task,
    connect,
    connect_http,
    get_task,
    http_server,
    start_call,
    stdio_params,
    tasks_extension,
    update_task,
    wait_task,
    write_private,
)

pytestmark = pytest.mark.anyio

#: Counts to a billion in SQLite: a query that runs until it is stopped.
ENDLESS_QUERY = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) "
    "SELECT count(*) FROM n"
)
ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


def text(result: CallToolResult | dict[str, Any] | None) -> str:
    parsed = CallToolResult.model_validate(result) if isinstance(result, dict) else result
    assert parsed is not None
    return "".join(block.text for block in parsed.content if isinstance(block, TextContent))


@dataclass
class LongCall:
    script: str
    args: list[str]
    tool: str
    arguments: dict[str, Any]
    expect: str


@pytest.fixture
def site() -> Iterator[str]:
    """A loopback web server with one page (and no robots.txt)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/report.html":
                self.send_error(404)
                return
            body = b"<html><body><h1>Quarterly report</h1><p>Revenue grew.</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/report.html"
    server.shutdown()
    server.server_close()


def database(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
        db.executemany("INSERT INTO orders (total) VALUES (?)", [(n,) for n in range(100)])
    return path


def long_calls(tmp_path: Path, site: str) -> dict[str, LongCall]:
    files = tmp_path / "files"
    (files / "src" / "deep").mkdir(parents=True)
    (files / "src" / "deep" / "needle.txt").write_text("a needle in the tree\n")
    repo = tmp_path / "repos" / "project"
    repo.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    for n in range(3):
        (repo / "notes.txt").write_text(f"note {n}\n")
        subprocess.run([*git, "add", "notes.txt"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"note number {n}"], check=True)
    return {
        "filesystem": LongCall(
            "mcp-filesystem",
            [str(files)],
            "search_files",
            {"path": str(files), "pattern": "needle"},
            "needle.txt",
        ),
        "git": LongCall(
            "mcp-git", ["--repository", str(repo)], "git_log", {"max_count": 10}, "note number 2"
        ),
        "sql": LongCall(
            "mcp-sql",
            [f"sqlite:///{database(tmp_path / 'shop.db')}"],
            "query",
            {"sql": "SELECT sum(total) AS revenue FROM orders"},
            "4950",
        ),
        "fetch": LongCall(
            "mcp-fetch", ["--allow-private-host", "127.0.0.1"], "fetch", {"url": site}, "Revenue grew."
        ),
    }


@pytest.mark.parametrize("name", ["filesystem", "git", "sql", "fetch"])
async def test_a_long_call_is_a_task_only_for_a_client_that_supports_tasks(
    name: str, tmp_path: Path, site: str
) -> None:
    call = long_calls(tmp_path, site)[name]
    env = {"HOME": str(tmp_path / "home")}
    async with http_server(call.script, *call.args, "--task-after", "0", env=env) as running:
        async with connect_http(running.url, "modern", extensions=[tasks_extension()]) as client:
            created = await start_call(client, call.tool, call.arguments)
            assert isinstance(created, CreatedTask), created
            done = await wait_task(client, created.task_id)
            assert done.status == "completed" and call.expect in text(done.result), done
        async with connect_http(running.url, "modern") as client:
            result = await start_call(client, call.tool, call.arguments)
            assert isinstance(result, CallToolResult) and call.expect in text(result)
        async with connect_http(running.url, "legacy", extensions=[tasks_extension()]) as client:
            result = await client.call_tool(call.tool, call.arguments)
            assert call.expect in text(result)


async def test_over_stdio_a_cancelled_query_stops_and_a_finished_task_expires(tmp_path: Path) -> None:
    shop = database(tmp_path / "shop.db")
    params = stdio_params(
        "mcp-sql", f"sqlite:///{shop}", "--task-after", "0", "--task-ttl", "1", env={"HOME": str(tmp_path)}
    )
    async with connect(params, "modern", extensions=[tasks_extension()]) as client:
        endless = await start_call(client, "query", {"sql": ENDLESS_QUERY})
        assert isinstance(endless, CreatedTask)
        assert (await get_task(client, endless.task_id)).status == "working"
        await cancel_task(client, endless.task_id)
        assert (await wait_task(client, endless.task_id, timeout=15)).status == "cancelled"

        quick = await start_call(client, "query", {"sql": "SELECT count(*) AS n FROM orders"})
        assert isinstance(quick, CreatedTask)
        done = await wait_task(client, quick.task_id)
        assert done.status == "completed" and "100" in text(done.result)
        assert done.ttl_ms is not None and done.ttl_ms < 10_000  # kept --task-ttl after it ended
        with anyio.fail_after(15):
            while True:  # polling is how a client follows a task
                try:
                    await get_task(client, quick.task_id)
                except MCPError as gone:
                    assert gone.error.code == -32602
                    break
                await anyio.sleep(0.1)


async def test_over_http_one_callers_tasks_do_not_exist_for_another(tmp_path: Path) -> None:
    tokens = write_private(
        tmp_path / "tokens.toml",
        "".join(
            f'[[tokens]]\nuser = "{user}"\nsha256 = "{hashlib.sha256(token.encode()).hexdigest()}"\n\n'
            for user, token in (("alice", ALICE), ("bob", BOB))
        ),
    )
    shop = database(tmp_path / "shop.db")
    args = (f"sqlite:///{shop}", "--task-after", "0", "--tokens-file", str(tokens))
    async with (
        http_server("mcp-sql", *args, env={"HOME": str(tmp_path)}) as running,
        connect_http(running.url, "modern", token=ALICE, extensions=[tasks_extension()]) as alice,
        connect_http(running.url, "modern", token=BOB, extensions=[tasks_extension()]) as bob,
    ):
        mine = await start_call(alice, "query", {"sql": ENDLESS_QUERY})
        assert isinstance(mine, CreatedTask)
        for act in (
            get_task(bob, mine.task_id),
            cancel_task(bob, mine.task_id),
            update_task(bob, mine.task_id, {}),
        ):
            with pytest.raises(MCPError) as refused:
                await act
            assert refused.value.error.code == -32602
            assert "never existed, has expired, or is not yours" in refused.value.error.message
        assert (await get_task(alice, mine.task_id)).status == "working"  # bob's cancel did nothing
        theirs = await start_call(bob, "query", {"sql": "SELECT 1 AS one"})
        assert isinstance(theirs, CreatedTask)
        assert (await wait_task(bob, theirs.task_id)).status == "completed"
        await cancel_task(alice, mine.task_id)
        assert (await wait_task(alice, mine.task_id, timeout=15)).status == "cancelled"
