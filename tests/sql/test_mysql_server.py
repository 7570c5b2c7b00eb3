"""mcp-sql on MySQL/MariaDB through real clients: subprocesses over stdio and HTTP, both eras.

Each transport is checked for live schema (a CREATE/ALTER by another connection reaches the
subscriber), paging, completion and value rendering; a server with SQLite, PostgreSQL and MySQL
databases at once answers each in its own dialect.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ResourceTemplateReference
from mcp_batteries.testing import ERAS, Era, Notifications, connect, connect_http, http_server, stdio_params

from .conftest import MyAdmin
from .test_server import live_roundtrip

pytestmark = pytest.mark.anyio


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _page(result: Any) -> Any:
    assert not result.is_error, _text(result)
    return json.loads(_text(result))


async def _check_tools(c: Client, admin: MyAdmin) -> None:
    """Paging, value rendering, completion and the schema resources on one connected client."""
    db = admin.env.database
    first = _page(await c.call_tool("query", {"sql": "SELECT id, name FROM t ORDER BY id", "limit": 2}))
    assert first["rows"] == [[1, "alice"], [2, "bob"]] and first["next_offset"] == 2
    rest = _page(await c.call_tool("query", {"sql": "SELECT name FROM t WHERE id > ? ORDER BY id",
                                             "params": [0], "offset": 2}))  # fmt: skip
    assert rest["rows"] == [["carol"]] and rest["next_offset"] is None
    values = _page(
        await c.call_tool(
            "query",
            {"sql": "SELECT b'101' + 0 AS n, CAST(b'101' AS BINARY) AS raw, TIME'838:59:59' AS t, "
                    "CAST(1.5 AS DECIMAL(65,30)) AS d, 18446744073709551615 AS u, x'00ff' AS bin"},
        )
    )  # fmt: skip
    assert values["rows"] == [[5, {"$base64": "BQ=="}, "838:59:59", "1.500000000000000000000000000000",
                               18446744073709551615, {"$base64": "AP8="}]]  # fmt: skip
    refused = await c.call_tool("query", {"sql": "DELETE FROM t"})
    assert refused.is_error and "read-only" in _text(refused)
    assert f"{db}.t" in _text(await c.call_tool("list_tables", {}))
    assert "CREATE TABLE `t`" in _text(await c.call_tool("describe_table", {"table": "t"}))
    assert db in _text(await c.call_tool("list_schemas", {}))
    uris = {str(r.uri) for r in (await c.list_resources()).resources}
    assert {"sql://main/schema", f"sql://main/table/{db}/t"} <= uris
    table = await c.read_resource(f"sql://main/table/{db}/t")
    assert "PRIMARY KEY" in table.contents[0].text  # type: ignore[union-attr]
    ref = ResourceTemplateReference(type="ref/resource", uri="sql://{database}/table/{schema}/{table}")
    schemas = await c.complete(
        ref, {"name": "schema", "value": db[:8]}, context_arguments={"database": "main"}
    )
    assert db in schemas.completion.values
    tables = await c.complete(
        ref, {"name": "table", "value": ""}, context_arguments={"database": "main", "schema": db}
    )
    assert "t" in tables.completion.values


def _alter_and_create(admin: MyAdmin) -> tuple[Any, Any]:
    async def alter() -> None:
        await admin.exec("ALTER TABLE t ADD COLUMN email TEXT")

    async def create() -> None:
        await admin.exec("CREATE TABLE appeared (x INT)")

    return alter, create


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_live_schema_paging_completion_values(my_admin: MyAdmin, era: Era) -> None:
    heard = Notifications()
    params = stdio_params("mcp-batteries-sql", my_admin.env.reader_url, "--schema-poll-interval", "0.2")
    async with connect(params, era, message_handler=heard) as c:
        assert "execute" not in {t.name for t in (await c.list_tools()).tools}
        await _check_tools(c, my_admin)
        alter, create = _alter_and_create(my_admin)
        await live_roundtrip(c, era, heard, f"sql://main/table/{my_admin.env.database}/t", alter, create)


@pytest.mark.parametrize("era", ERAS)
async def test_http_live_schema_paging_completion_values(my_admin: MyAdmin, era: Era) -> None:
    heard = Notifications()
    server: AbstractAsyncContextManager[Any] = http_server(
        "mcp-batteries-sql", my_admin.env.url, "--schema-poll-interval", "0.2"
    )
    async with server as running, connect_http(running.url, era, message_handler=heard) as c:
        await _check_tools(c, my_admin)
        alter, create = _alter_and_create(my_admin)
        await live_roundtrip(c, era, heard, f"sql://main/table/{my_admin.env.database}/t", alter, create)
        assert my_admin.env.reader_password not in "\n".join(running.stderr_lines)


@pytest.mark.parametrize("era", ERAS)
async def test_one_server_with_sqlite_postgres_and_mysql(
    my_admin: MyAdmin, pg_seeded: Any, sqlite_file: Path, era: Era
) -> None:
    params = stdio_params(
        "mcp-batteries-sql", f"lite={sqlite_file}", f"pg={pg_seeded.dsn}", f"my={my_admin.env.reader_url}",
        "--allow-write",
    )  # fmt: skip
    async with connect(params, era) as c:
        assert _page(await c.call_tool("query", {"sql": "SELECT name FROM t WHERE id = ?", "params": [1],
                                                 "database": "lite"}))["rows"] == [["alice"]]  # fmt: skip
        assert _page(await c.call_tool("query", {"sql": "SELECT name FROM t WHERE id = $1", "params": [2],
                                                 "database": "pg"}))["rows"] == [["bob"]]  # fmt: skip
        assert _page(await c.call_tool("query", {"sql": "SELECT name FROM t WHERE id = ?", "params": [3],
                                                 "database": "my"}))["rows"] == [["carol"]]  # fmt: skip
        # The least-privilege user cannot write even with --allow-write: its privileges are the wall.
        denied = await c.call_tool("execute", {"statements": ["DELETE FROM t"], "database": "my"})
        assert denied.is_error and "1142" in _text(denied)
        instructions = _text(await c.call_tool("list_schemas", {"database": "my"}))
        assert my_admin.env.database in instructions
    assert await my_admin.rows() == [(1, "alice"), (2, "bob"), (3, "carol")]
