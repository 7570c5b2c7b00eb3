"""list_tables: row counts in one statement (or from statistics), honest about which, paged; names
and text that are not clean never break a reply."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from mcp_batteries.errors import UpstreamError
from mcp_batteries.safety import quote_name
from mcp_batteries.testing import ERAS, Era, connect
from mcp_sql.config import SqlSettings
from mcp_sql.database import Database, open_database
from mcp_sql.registry import Databases
from mcp_sql.server import build_server

from .conftest import PgAdmin

pytestmark = pytest.mark.anyio


def many_tables(path: Path, count: int, *, analyze: bool = False) -> Path:
    conn = sqlite3.connect(path)
    for i in range(count):
        conn.execute(f"CREATE TABLE t{i:03d} (id INTEGER PRIMARY KEY, v TEXT)")
        conn.executemany(f"INSERT INTO t{i:03d} (v) VALUES (?)", [("x",)] * (i % 7))
    conn.execute("CREATE VIEW v_all AS SELECT * FROM t000")
    if analyze:
        conn.execute("ANALYZE")
    conn.commit()
    conn.close()
    return path


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_counting_200_tables_takes_a_constant_number_of_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = await open_database(
        "main",
        str(many_tables(tmp_path / "m.db", 200)),
        allow_write=False,
        statement_timeout_s=5,
        max_rows=10,
    )
    try:
        statements: list[str] = []
        meta = db._meta  # type: ignore[attr-defined]

        async def counting(sql: str, *args: Any) -> Any:
            statements.append(sql)
            return await meta(sql, *args)

        monkeypatch.setattr(db, "_meta", counting)
        monkeypatch.setattr(db._catalog, "_fetch", counting)  # type: ignore[attr-defined]
        tables, note = await db.with_row_counts(await db.list_tables())
        assert note is None
        assert len(statements) <= 3
        counts = {t.name: (t.row_estimate, t.row_estimate_kind) for t in tables}
        assert counts["t013"] == (6, "exact")
        assert counts["v_all"] == (None, None)  # a view is not counted: that would run its query
    finally:
        await db.close()


async def test_listing_says_which_counts_are_estimates(tmp_path: Path) -> None:
    settings = SqlSettings(databases=[str(many_tables(tmp_path / "s.db", 5, analyze=True))])
    databases = Databases(settings)
    async with databases.open_all():
        listing = await databases.tables_text(None, None, 0, 200)
    assert "- main.t003 (table, ~3 rows)" in listing  # from ANALYZE statistics
    assert "- main.t000 (table, 0 rows)" in listing  # ANALYZE keeps no row for it: counted exactly
    assert "~ = estimate" in listing


async def test_listing_is_paged_and_names_the_next_offset(tmp_path: Path) -> None:
    settings = SqlSettings(databases=[str(many_tables(tmp_path / "p.db", 250))])
    databases = Databases(settings)
    async with databases.open_all():
        first = await databases.tables_text(None, None, 0, 200)
        second = await databases.tables_text(None, None, 200, 200)
    assert "1-200 of 251" in first and "51 more: call list_tables again with offset=200" in first
    assert "- main.t013 (table, 6 rows)" in first
    assert "201-251 of 251" in second and "more:" not in second


async def test_postgres_counts_tables_without_statistics_in_one_statement(
    pg_ro: Database, pg_admin: PgAdmin
) -> None:
    await pg_admin.exec(
        "CREATE TABLE fresh (a int); INSERT INTO fresh SELECT generate_series(1, 42);"
        "CREATE TABLE analyzed (a int); INSERT INTO analyzed SELECT generate_series(1, 1000);"
        "ANALYZE analyzed"
    )
    tables, note = await pg_ro.with_row_counts(await pg_ro.list_tables("public"))
    by_name = {t.name: (t.row_estimate, t.row_estimate_kind) for t in tables}
    assert note is None
    assert by_name["fresh"] == (42, "exact")
    assert by_name["analyzed"] == (1000, "statistics")


# -- names and text that are not clean ---------------------------------------------------------------
EVIL = "evil\x1b[31mred\nline"


@pytest.fixture
def evil_db(tmp_path: Path) -> Path:
    path = tmp_path / "evil.db"
    conn = sqlite3.connect(path)
    quoted = '"' + EVIL.replace('"', '""') + '"'
    conn.execute(f'CREATE TABLE {quoted} ("col\u202eumn" TEXT, raw TEXT)')
    # TEXT holding bytes that are not UTF-8 (SQLite does not check what it stores).
    conn.execute(f"INSERT INTO {quoted} VALUES ('ok', CAST(X'626164ff6e616d65' AS TEXT))")
    conn.commit()
    conn.close()
    return path


async def test_text_that_is_not_utf8_is_shown_with_replacement_characters(evil_db: Path) -> None:
    db = await open_database("main", str(evil_db), allow_write=False, statement_timeout_s=5, max_rows=10)
    try:
        quoted = '"' + EVIL.replace('"', '""') + '"'
        result = await db.query(f"SELECT raw, CAST(raw AS BLOB) AS exact FROM {quoted}", None, limit=5)
        assert result.rows[0][0] == "bad\ufffdname"
        assert result.rows[0][1] == {"$base64": "YmFk/25hbWU="}  # the exact bytes, on request
    finally:
        await db.close()


@pytest.mark.parametrize("era", ERAS)
async def test_unclean_names_are_quoted_and_accepted_back(evil_db: Path, era: Era) -> None:
    server = build_server(SqlSettings(databases=[str(evil_db)]))
    async with connect(server.mcp, era) as c:
        listing = text(await c.call_tool("list_tables", {}))
        shown = quote_name(EVIL)
        assert f"main.{shown}" in listing and "\x1b" not in listing
        described = await c.call_tool("describe_table", {"table": shown})
        assert not described.is_error, text(described)
        ddl = text(described)
        assert "\x1b" not in ddl and "\u202e" not in ddl and "\\x1b" in ddl
        page = await c.call_tool("query", {"sql": "SELECT * FROM sqlite_master", "structured": True})
        assert not page.is_error
        assert json.loads(text(page)) == page.structured_content  # the exact names, JSON-escaped
        resources = (await c.list_resources()).resources
        assert any(EVIL in str(r.uri) or "%1B" in str(r.uri) for r in resources)


async def test_steady_listing_is_one_statement_and_follows_schema_and_row_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = many_tables(tmp_path / "c.db", 20)
    db = await open_database("main", str(path), allow_write=False, statement_timeout_s=5, max_rows=10)
    try:
        first = await db.table_page(None, 0, 200)
        assert first.total == 21
        statements: list[str] = []
        fetch = db._catalog._fetch  # type: ignore[attr-defined]

        async def counting(sql: str, *args: Any) -> Any:
            statements.append(sql)
            return await fetch(sql, *args)

        monkeypatch.setattr(db._catalog, "_fetch", counting)  # type: ignore[attr-defined]
        again = await db.table_page(None, 0, 200)
        assert len(statements) == 1 and again == first

        other = sqlite3.connect(path)
        other.executescript("INSERT INTO t001 (v) VALUES ('new'); CREATE TABLE zzz (a); DROP TABLE t002;")
        other.commit()
        other.close()
        changed = await db.table_page(None, 0, 200)
        names = {t.name: t.row_estimate for t in changed.tables}
        assert "zzz" in names and "t002" not in names and names["t001"] == 2
        assert changed.total == 21
    finally:
        await db.close()


async def test_postgres_text_that_is_not_utf8_gets_an_error_that_says_how_to_read_it(pg_env: Any) -> None:
    name = f"{pg_env.database}_ascii"
    admin = await asyncpg.connect(pg_env.admin_dsn, timeout=5)
    try:
        await admin.execute(
            f"CREATE DATABASE \"{name}\" ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"
        )
        dsn = pg_env.dsn.rsplit("/", 1)[0] + f"/{name}"
        setup = await asyncpg.connect(dsn, timeout=5)
        await setup.execute(
            "CREATE TABLE t (v text); INSERT INTO t SELECT convert_from('\\x626164ff'::bytea, 'SQL_ASCII')"
        )
        await setup.close()
        db = await open_database(
            "main",
            dsn,
            allow_write=False,
            statement_timeout_s=5,
            max_rows=10,
            pg_reader_role=pg_env.reader_role,
        )
        try:
            with pytest.raises(UpstreamError, match="not valid UTF-8") as info:
                await db.query("SELECT v FROM t", None, limit=5)
            assert "::bytea" in str(info.value)
            exact = await db.query("SELECT v::bytea FROM t", None, limit=5)
            assert exact.rows[0][0] == {"$base64": "YmFk/w=="}
        finally:
            await db.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
