"""mcp-sql through real clients: every tool, both eras, stdio/HTTP, read-only, live schema."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from mcp import Client
from mcp.types import PromptReference, ResourceTemplateReference
from mcp_batteries.testing import (
    ERAS,
    Era,
    Notifications,
    connect,
    connect_http,
    http_server,
    legacy_subscribe,
    stdio_params,
)
from mcp_sql.config import SqlSettings
from mcp_sql.server import build_server

from .conftest import PgEnv

pytestmark = pytest.mark.anyio

ALL_TOOLS = {"query", "execute", "list_schemas", "list_tables", "describe_table", "explain"}


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def page_of(result: Any) -> Any:
    """A query page: its text is one JSON object (docs/sql.md: "Replies of query")."""
    return json.loads(text(result))


def sqlite_server(path: Path, **settings: Any) -> Any:
    return build_server(SqlSettings(databases=[str(path)], **settings))


def sqlite_exec(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(sql)
        conn.commit()
    finally:
        conn.close()


# -- every tool on SQLite ---------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_sqlite_every_tool(sqlite_file: Path, era: Era) -> None:
    server = sqlite_server(sqlite_file, allow_write=True)
    async with connect(server.mcp, era) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == ALL_TOOLS
        assert tools["query"].output_schema is None  # rows travel once: as JSON text by default
        assert tools["query"].annotations.read_only_hint is True
        assert tools["execute"].annotations.destructive_hint is True

        page = await c.call_tool("query", {"sql": "SELECT id, name FROM t ORDER BY id", "limit": 2})
        assert not page.is_error and page.structured_content is None
        assert page_of(page)["rows"] == [[1, "alice"], [2, "bob"]]
        assert page_of(page)["truncated"] is True and page_of(page)["next_offset"] == 2
        assert "offset=2" in page_of(page)["note"]
        both = await c.call_tool(
            "query", {"sql": "SELECT id, name FROM t ORDER BY id", "limit": 2, "structured": True}
        )
        assert both.structured_content == page_of(page)  # on request, the same object for programs
        rest = await c.call_tool(
            "query", {"sql": "SELECT name FROM t WHERE id > ?", "params": [0], "offset": 2}
        )
        assert page_of(rest)["rows"] == [["carol"]] and page_of(rest)["next_offset"] is None

        done = await c.call_tool(
            "execute",
            {"statements": ["INSERT INTO t VALUES (?, ?)", "UPDATE t SET name = 'BOB' WHERE id = 2"],
             "params": [[4, "dave"], None]},
        )  # fmt: skip
        assert not done.is_error, text(done)
        assert done.structured_content["committed"] is True
        assert "INSERT" in text(done)

        assert "main" in text(await c.call_tool("list_schemas", {}))
        assert "main.t" in text(await c.call_tool("list_tables", {}))
        ddl = text(await c.call_tool("describe_table", {"table": "t"}))
        assert "CREATE TABLE" in ddl and "name" in ddl
        plan = await c.call_tool("explain", {"sql": "SELECT * FROM t WHERE id = 1"})
        assert not plan.is_error and plan.content
        missing = await c.call_tool("describe_table", {"table": "nope"})
        assert missing.is_error

        resources = (await c.list_resources()).resources
        uris = {str(r.uri) for r in resources}
        assert {"sql://main/schema", "sql://main/table/main/t"} <= uris
        table = await c.read_resource("sql://main/table/main/t")
        assert "CREATE TABLE" in table.contents[0].text
        whole = await c.read_resource("sql://main/schema")
        assert "CREATE TABLE" in whole.contents[0].text
        done = await c.complete(
            ResourceTemplateReference(type="ref/resource", uri="sql://{database}/table/{schema}/{table}"),
            {"name": "table", "value": ""},
            context_arguments={"database": "main", "schema": "main"},
        )
        assert "t" in done.completion.values
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert prompts == {"explore_database", "write_query", "explain_slow_query"}
        prompt = await c.get_prompt("write_query", {"question": "how many rows?"})
        assert "describe_table" in str(prompt.messages[0].content)


@pytest.mark.parametrize("era", ERAS)
async def test_every_prompt_completes_its_database_argument(tmp_path: Path, era: Era) -> None:
    for name in ("sales", "stock"):
        sqlite_exec(tmp_path / f"{name}.db", "CREATE TABLE t (x INTEGER);")
    server = build_server(
        SqlSettings(databases=[f"sales={tmp_path / 'sales.db'}", f"stock={tmp_path / 'stock.db'}"])
    )
    async with connect(server.mcp, era) as c:
        prompts = (await c.list_prompts()).prompts
        for prompt in prompts:
            assert "database" in {a.name for a in prompt.arguments or []}, prompt.name
            ref = PromptReference(type="ref/prompt", name=prompt.name)
            every = await c.complete(ref, {"name": "database", "value": ""})
            assert every.completion.values == ["sales", "stock"], prompt.name
            some = await c.complete(ref, {"name": "database", "value": "st"})
            assert some.completion.values == ["stock"], prompt.name
        free_text = await c.complete(
            PromptReference(type="ref/prompt", name="write_query"), {"name": "question", "value": "how"}
        )
        assert free_text.completion.values == []


# -- read-only ------------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("flags", [{}, {"allow_write": True, "read_only": True}])
async def test_read_only_has_no_execute_and_refuses_writes(
    sqlite_file: Path, sqlite_rows: Any, era: Era, flags: dict[str, bool]
) -> None:
    server = sqlite_server(sqlite_file, **flags)
    async with connect(server.mcp, era) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == ALL_TOOLS - {"execute"}
        for sql in (
            "DROP TABLE t",
            "SELECT 1; DELETE FROM t",
            "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
        ):
            refused = await c.call_tool("query", {"sql": sql})
            assert refused.is_error, sql
        analyze = await c.call_tool("explain", {"sql": "SELECT * FROM t", "analyze": True})
        assert analyze.is_error
    assert sqlite_rows(sqlite_file) == [(1, "alice"), (2, "bob"), (3, "carol")]


# -- PostgreSQL -----------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_postgres_query_and_describe(pg_seeded: Any, era: Era) -> None:
    server = build_server(SqlSettings(databases=[pg_seeded.dsn]))
    async with connect(server.mcp, era) as c:
        page = await c.call_tool(
            "query", {"sql": "SELECT id, name FROM t WHERE id >= $1 ORDER BY id", "params": [2]}
        )
        assert not page.is_error, text(page)
        assert page_of(page)["rows"] == [[2, "bob"], [3, "carol"]]
        ddl = text(await c.call_tool("describe_table", {"table": "t", "schema": "public"}))
        assert "CREATE TABLE public.t" in ddl and "PRIMARY KEY" in ddl
        refused = await c.call_tool("query", {"sql": "DELETE FROM t"})
        assert refused.is_error


# -- subprocesses ---------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_stdio(sqlite_file: Path, era: Era) -> None:
    async with connect(stdio_params("mcp-batteries-sql", f"sqlite:///{sqlite_file}"), era) as c:
        result = await c.call_tool("query", {"sql": "SELECT count(*) AS n FROM t"})
        assert page_of(result)["rows"] == [[3]]
        assert "execute" not in {t.name for t in (await c.list_tools()).tools}


@pytest.mark.parametrize("era", ERAS)
async def test_http(sqlite_file: Path, era: Era) -> None:
    async with (
        http_server("mcp-batteries-sql", str(sqlite_file)) as running,
        connect_http(running.url, era) as c,
    ):
        result = await c.call_tool("query", {"sql": "SELECT name FROM t WHERE id = ?", "params": [1]})
        assert page_of(result)["rows"] == [["alice"]]


# -- live schema ----------------------------------------------------------------------------
async def live_roundtrip(
    client: Client, era: Era, heard: Notifications, uri: str, alter: Any, create: Any
) -> None:
    if era == "legacy":
        await legacy_subscribe(client, uri)
        await alter()
        await heard.wait_method("notifications/resources/updated", uri)
        await create()
        await heard.wait_method("notifications/resources/list_changed")
        return
    async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as events:
        await alter()
        kinds: set[str] = set()
        with anyio.fail_after(10):
            async for event in events:
                name = type(event).__name__
                if name == "ResourceUpdated" and str(event.uri) != uri:
                    continue
                kinds.add(name)
                if kinds == {"ResourceUpdated"}:
                    await create()
                if kinds >= {"ResourceUpdated", "ResourcesListChanged"}:
                    break


@pytest.mark.parametrize("era", ERAS)
async def test_live_sqlite(sqlite_file: Path, era: Era) -> None:
    server = sqlite_server(sqlite_file)
    heard = Notifications()

    async def alter() -> None:
        sqlite_exec(sqlite_file, "ALTER TABLE t ADD COLUMN email TEXT")

    async def create() -> None:
        sqlite_exec(sqlite_file, "CREATE TABLE appeared (x INTEGER)")

    async with connect(server.mcp, era, message_handler=heard) as c:
        await live_roundtrip(c, era, heard, "sql://main/table/main/t", alter, create)


@pytest.mark.parametrize("era", ERAS)
async def test_live_postgres(pg_seeded: Any, era: Era) -> None:
    server = build_server(SqlSettings(databases=[pg_seeded.dsn], schema_poll_interval=0.2))
    heard = Notifications()

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(pg_seeded.dsn, timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def alter() -> None:
        await admin("ALTER TABLE t ADD COLUMN email text")

    async def create() -> None:
        await admin("CREATE TABLE appeared (x int)")

    async with connect(server.mcp, era, message_handler=heard) as c:
        await live_roundtrip(c, era, heard, "sql://main/table/public/t", alter, create)


@pytest.mark.parametrize("era", ERAS)
async def test_subscribe_refuses_foreign_uris(sqlite_file: Path, era: Era) -> None:
    server = sqlite_server(sqlite_file)
    async with connect(server.mcp, era) as c:
        for uri in ("file:///etc/passwd", "sql://other/schema", "sql://main/table/main/nope"):
            with pytest.raises(Exception):  # noqa: B017 - the error type differs by era
                if era == "legacy":
                    await legacy_subscribe(c, uri)
                else:
                    async with c.listen(resource_subscriptions=[uri]):
                        pass


# -- issue 15 #3 / issue 9 #6 / issue 15 #9 through real clients ----------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_stdio_batch_with_commit_is_refused_and_nothing_is_kept(
    sqlite_file: Path, sqlite_rows: Any, era: Era
) -> None:
    params = stdio_params("mcp-batteries-sql", str(sqlite_file), "--allow-write")
    async with connect(params, era) as c:
        refused = await c.call_tool(
            "execute",
            {"statements": ["INSERT INTO t VALUES (10, 'A')", "commit", "INSERT INTO nope VALUES (1)"]},
        )
        assert refused.is_error and "transaction control" in text(refused)
        lone = await c.call_tool("execute", {"statements": ["commit"]})
        assert lone.is_error and "transaction control" in text(lone)
        big = await c.call_tool("query", {"sql": "SELECT ?", "params": [10**30]})
        assert big.is_error and "64-bit integer range" in text(big)
        assert page_of(await c.call_tool("query", {"sql": "SELECT 1"}))["rows"] == [[1]]
    assert sqlite_rows(sqlite_file) == [(1, "alice"), (2, "bob"), (3, "carol")]


@pytest.mark.parametrize("era", ERAS)
async def test_http_long_value_is_cut_with_a_note(sqlite_file: Path, era: Era) -> None:
    async with (
        http_server("mcp-batteries-sql", str(sqlite_file), "--max-value-bytes", "100") as running,
        connect_http(running.url, era) as c,
    ):
        result = await c.call_tool("query", {"sql": "SELECT printf('%.*c', 5000000, 'x') AS v"})
        assert not result.is_error
        sc = page_of(result)
        assert len(sc["rows"][0][0]) == 100 and sc["cut_values"][0]["total"] == 5_000_000
        assert "substr(v, 101," in sc["note"]


async def test_a_database_password_never_reaches_the_instructions(pg_seeded: PgEnv) -> None:
    url = pg_seeded.dsn.replace("postgres@", "postgres:hunter2%40userinfo%3A@", 1) + (
        "?password=hunter2-query&sslmode=disable"
    )
    async with connect(build_server(SqlSettings(databases=[url])).mcp, "modern") as c:
        listed = await c.call_tool("list_tables", {})
        instructions = c.instructions or ""
    assert not listed.is_error, text(listed)
    assert "postgresql://***@127.0.0.1" in instructions and "?password=***&sslmode=disable" in instructions
    assert "hunter2" not in instructions and "userinfo" not in instructions
