"""Query pages bounded in rows, bytes per value and bytes per reply; what was cut is said, and the
rest can be read; the structured output is columnar and cheap for a client to validate."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import ERAS, Era, connect
from mcp_sql.config import SqlSettings
from mcp_sql.database import Database, open_database
from mcp_sql.results import MAX_CHUNK_ROWS, PageBuilder, ResultLimits, cut_text
from mcp_sql.server import build_server

from .conftest import PgAdmin, as_lists

pytestmark = pytest.mark.anyio

LIMITS = ResultLimits(max_rows=1000, max_value_bytes=100, max_reply_bytes=2000)


def build(limits: ResultLimits = LIMITS, limit: int = 1000) -> PageBuilder:
    return PageBuilder(["id", "v"], ["integer", "text"], limit=limit, offset=0, limits=limits)


def feed(page: PageBuilder, rows: list[tuple[Any, ...]]) -> list[int]:
    """Run the fetch loop an engine runs over `rows`; returns the chunk sizes asked for."""
    asked = []
    position = 0
    while not page.done:
        wanted = page.wanted()
        asked.append(wanted)
        chunk = rows[position : position + wanted]
        position += len(chunk)
        page.add(chunk, exhausted=len(chunk) < wanted)
    return asked


# -- the page builder -----------------------------------------------------------------------------
def test_chunks_start_at_one_row_and_grow_at_most_fourfold() -> None:
    page = build(ResultLimits(max_rows=100_000, max_reply_bytes=10**9), limit=100_000)
    asked = feed(page, [(i, "x") for i in range(20_000)])
    assert asked[:4] == [1, 4, 16, 64]
    assert max(asked) == MAX_CHUNK_ROWS
    assert page.finish().result.row_count == 20_000


def test_chunks_stay_small_when_rows_are_big() -> None:
    page = build(ResultLimits(max_rows=100_000, max_value_bytes=100, max_reply_bytes=10**9), limit=100_000)
    asked = feed(page, [(i, "x" * 2_000_000) for i in range(20)])
    assert max(asked) <= 3  # about 4 MB of fetched values per chunk


def test_page_ends_at_the_byte_limit_and_names_the_next_offset() -> None:
    page = build()
    feed(page, [(i, "y" * 90) for i in range(100)])
    done = page.finish()
    result = done.result
    assert 10 < result.row_count < 30
    assert result.truncated and result.next_offset == result.row_count
    assert result.note is not None and "2,000-byte limit" in result.note
    assert f"offset={result.next_offset}" in result.note
    assert len(json.dumps(as_lists(result.rows))) <= 2000


def test_first_row_is_returned_even_when_it_alone_exceeds_the_byte_limit() -> None:
    page = PageBuilder([f"c{i}" for i in range(50)], [None] * 50, limit=10, offset=0, limits=LIMITS)
    feed(page, [tuple("z" * 100 for _ in range(50))] * 3)
    result = page.finish().result
    assert result.row_count == 1 and result.truncated and result.next_offset == 1


def test_long_values_are_cut_and_the_cut_is_described() -> None:
    page = build()
    feed(page, [(1, "short"), (2, "é" * 500), (3, b"\x00" * 300)])
    done = page.finish()
    result = done.result
    rows = as_lists(result.rows)
    assert rows is not None
    assert rows[0] == [1, "short"]
    assert rows[1][1] == "é" * 50  # 100 bytes of UTF-8, cut at a character boundary
    assert rows[2][1] == {"$base64": base64.b64encode(b"\x00" * 100).decode()}
    cuts = [(c.row, c.column, c.shown, c.total, c.unit) for c in result.cut_values]
    assert cuts == [(1, "v", 50, 500, "characters"), (2, "v", 100, 300, "bytes")]
    assert result.note is not None and "substr(v, 51," in result.note
    assert not result.truncated


def test_text_is_the_structured_result_as_compact_json() -> None:
    page = build()
    feed(page, [(1, "a\nb"), (2, None), (3, float("nan"))])
    done = page.finish()
    assert json.loads(done.text) == json.loads(json.dumps(done.structured()))
    assert "\n" not in done.text


def test_cut_text_respects_utf8_boundaries() -> None:
    assert cut_text("abc", 10) is None
    assert cut_text("€" * 10, 7) == "€€"  # 3 bytes each
    assert cut_text("a" * 50, 10) == "a" * 10


# -- through the engines --------------------------------------------------------------------------
@pytest.fixture
async def sqlite_small_limits(tmp_path: Path) -> Any:
    path = tmp_path / "big.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT, data BLOB)")
    conn.executemany(
        "INSERT INTO docs VALUES (?, ?, ?)",
        [(i, f"{i:04d}" + "d" * 996, bytes(range(256)) * 8) for i in range(1, 201)],
    )
    conn.commit()
    conn.close()
    db = await open_database(
        "main", str(path), allow_write=False, statement_timeout_s=10, max_rows=500,
        max_value_bytes=1000, max_reply_bytes=20_000,
    )  # fmt: skip
    try:
        yield db
    finally:
        await db.close()


async def test_sqlite_huge_value_is_cut_and_the_rest_is_readable_with_substr(
    sqlite_small_limits: Database,
) -> None:
    db = sqlite_small_limits
    sql = "SELECT printf('%.*c', 20000000, 'x') || 'END' AS big"
    page = await db.query_page(sql, None, limit=5)
    assert len(page.text) < 5000  # 20 MB in, a bounded reply out
    cut = page.result.cut_values[0]
    assert (cut.row, cut.column, cut.shown, cut.total) == (0, "big", 1000, 20_000_003)
    assert page.result.note is not None and "substr(big, 1001," in page.result.note
    tail = await db.query(f"SELECT substr(big, {20_000_003 - 2}, 10) FROM ({sql})", None, limit=1)
    assert tail.rows[0][0] == "END"


async def test_sqlite_pages_stop_at_the_byte_limit_and_continue_exactly(
    sqlite_small_limits: Database,
) -> None:
    db = sqlite_small_limits
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        result = await db.query("SELECT id, body FROM docs ORDER BY id", None, limit=500, offset=offset)
        assert result.row_count < 25
        seen += [row[0] for row in result.rows]
        offset = result.next_offset
    assert seen == list(range(1, 201))


async def test_sqlite_blob_is_cut_in_bytes(sqlite_small_limits: Database) -> None:
    result = await sqlite_small_limits.query("SELECT data FROM docs WHERE id = 1", None, limit=1)
    assert result.cut_values[0].unit == "bytes" and result.cut_values[0].total == 2048
    assert result.note is not None and "binary" in result.note


async def test_postgres_huge_value_is_cut_and_reply_stays_small(pg_seeded: Any) -> None:
    db = await open_database(
        "main", pg_seeded.dsn, allow_write=False, statement_timeout_s=30, max_rows=10,
        max_value_bytes=4096, pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        page = await db.query_page("SELECT repeat('x', 100000000) AS v, 1 AS n", None, limit=10)
        assert len(page.text) < 10_000
        assert page.result.cut_values[0].total == 100_000_000
        doc = await db.query_page("SELECT jsonb_build_object('k', repeat('y', 10000)) AS doc", None, limit=1)
        assert doc.result.cut_values[0].unit == "characters of its JSON text"
        assert json.loads(doc.text) == json.loads(json.dumps(doc.structured()))
    finally:
        await db.close()


async def test_postgres_page_stops_at_the_byte_limit(pg_seeded: Any, pg_admin: PgAdmin) -> None:
    db = await open_database(
        "main", pg_seeded.dsn, allow_write=False, statement_timeout_s=30, max_rows=500,
        max_reply_bytes=4096, pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        first = await db.query("SELECT g, repeat('p', 200) FROM generate_series(1, 100) g", None, limit=500)
        assert first.truncated and 5 < first.row_count < 25
        second = await db.query(
            "SELECT g, repeat('p', 200) FROM generate_series(1, 100) g",
            None,
            limit=500,
            offset=first.row_count,
        )
        assert second.rows[0][0] == first.row_count + 1
    finally:
        await db.close()


# -- through a client -----------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
async def test_rows_travel_once_and_structured_content_only_on_request(sqlite_file: Path, era: Era) -> None:
    server = build_server(SqlSettings(databases=[str(sqlite_file)], max_value_bytes=64))
    async with connect(server.mcp, era) as c:
        sql = "SELECT printf('%.*c', 1000, 'q') AS long"
        result = await c.call_tool("query", {"sql": sql})
        assert not result.is_error and result.structured_content is None and len(result.content) == 1
        page = json.loads(result.content[0].text)
        assert page["cut_values"][0]["total"] == 1000 and "substr(long, 65," in page["note"]
        both = await c.call_tool("query", {"sql": sql, "structured": True})
        assert both.structured_content == page


@pytest.mark.parametrize(
    ("sql", "params", "expected"),
    [
        ("SELECT g, 'v' || g AS v FROM generate_series(1, 5) g ORDER BY g DESC", None,
         [[5, "v5"], [4, "v4"], [3, "v3"], [2, "v2"], [1, "v1"]]),
        ("SELECT 'a' AS x -- a trailing comment", None, [["a"]]),
        ("SELECT 'a', 'b', NULL::text", None, [["a", "b", None]]),
        ("SELECT $1::text || '!' AS shout, $2::int AS n", ["hey", 7], [["hey!", 7]]),
        ("VALUES ('x'::varchar(3), '\\x0102'::bytea)", None, [["x", {"$base64": "AQI="}]]),
        ("TABLE t", None, [[1, "alice"], [2, "bob"], [3, "carol"]]),
    ],
)  # fmt: skip
async def test_postgres_server_side_cut_keeps_results_the_same(
    pg_ro: Database, sql: str, params: Any, expected: list[list[Any]]
) -> None:
    result = await pg_ro.query(sql, params, limit=10)
    assert as_lists(result.rows) == expected
    assert result.cut_values == []


async def test_postgres_long_bytea_is_cut_on_the_server(pg_seeded: Any) -> None:
    db = await open_database(
        "main", pg_seeded.dsn, allow_write=False, statement_timeout_s=30, max_rows=10,
        max_value_bytes=64, pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        result = await db.query(
            "SELECT decode(repeat('ff', 100000), 'hex') AS b, 'é' || repeat('z', 99) AS t", None, limit=1
        )
        cuts = {c.column: (c.shown, c.total, c.unit) for c in result.cut_values}
        assert cuts == {"b": (64, 100_000, "bytes"), "t": (63, 100, "characters")}
        assert result.rows[0][0] == {"$base64": base64.b64encode(b"\xff" * 64).decode()}
        assert result.rows[0][1] == "é" + "z" * 62  # 64 bytes of UTF-8
    finally:
        await db.close()
