"""SQLite engine behaviour: paging, values, catalog, explain, fingerprints, write mode."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp_batteries.errors import AccessDenied, ConfigError, InvalidInput, NotFound, UpstreamError
from mcp_sql.database import Database, open_database
from mcp_sql.sqlite_engine import MAX_READERS

from .conftest import as_lists

pytestmark = pytest.mark.anyio

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]


def _fill(path: Path, n: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (n INTEGER)")
    conn.executemany("INSERT INTO big VALUES (?)", ((i,) for i in range(n)))
    conn.commit()
    conn.close()


async def test_query_pages_through_rows_with_next_offset(sqlite_file: Path) -> None:
    _fill(sqlite_file, 25)
    db = await open_database("main", str(sqlite_file), allow_write=False, statement_timeout_s=2, max_rows=10)
    try:
        seen: list[int] = []
        offset: int | None = 0
        while offset is not None:
            page = await db.query("SELECT n FROM big ORDER BY n", None, limit=100, offset=offset)
            assert page.row_count <= 10  # limit is clamped to max_rows
            seen += [row[0] for row in page.rows]
            offset = page.next_offset
        assert seen == list(range(25))
        last = await db.query("SELECT n FROM big ORDER BY n", None, limit=10, offset=20)
        assert (last.row_count, last.truncated, last.next_offset) == (5, False, None)
    finally:
        await db.close()


async def test_offsets_past_2_to_the_53_are_refused(sqlite_ro: Database) -> None:
    # 2^63 used to reach SQLite ("Python int too large to convert to SQLite INTEGER").
    assert (await sqlite_ro.query("SELECT 1", None, limit=1, offset=2**53 - 1)).rows == []
    for offset in (2**53, 2**63, -1):
        with pytest.raises(InvalidInput, match="offset must be from 0 to 9,007,199,254,740,991"):
            await sqlite_ro.query("SELECT 1", None, limit=1, offset=offset)


async def test_query_returns_json_safe_values_and_storage_types(sqlite_ro: Database) -> None:
    result = await sqlite_ro.query(
        "SELECT 1 AS i, 2.5 AS f, 'x' AS s, NULL AS z, x'0102' AS b", None, limit=5
    )
    assert [c.name for c in result.columns] == ["i", "f", "s", "z", "b"]
    assert [c.type for c in result.columns] == ["integer", "real", "text", None, "blob"]
    assert as_lists(result.rows) == [[1, 2.5, "x", None, {"$base64": "AQI="}]]


async def test_query_binds_positional_and_named_parameters(sqlite_ro: Database) -> None:
    positional = await sqlite_ro.query("SELECT name FROM t WHERE id = ?", [2], limit=5)
    named = await sqlite_ro.query("SELECT name FROM t WHERE id = :id", {"id": 3}, limit=5)
    assert as_lists(positional.rows) == [["bob"]]
    assert as_lists(named.rows) == [["carol"]]


async def test_wrong_parameter_count_is_invalid_input(sqlite_ro: Database) -> None:
    with pytest.raises(InvalidInput, match="placeholders"):
        await sqlite_ro.query("SELECT ?", [], limit=5)


async def test_sql_error_is_upstream_error_with_sqlite_message(sqlite_ro: Database) -> None:
    with pytest.raises(UpstreamError, match="no such table: nope"):
        await sqlite_ro.query("SELECT * FROM nope", None, limit=5)


async def test_list_tables_reports_kind_and_counted_rows(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(["CREATE VIEW v AS SELECT name FROM t"], None, transaction=False)
    tables = await sqlite_rw.list_tables()
    assert {t.name: t.row_estimate for t in tables} == {"t": None, "v": None}  # counting is on request
    counted, note = await sqlite_rw.with_row_counts(tables)
    by_name = {t.name: t for t in counted}
    assert note is None
    assert by_name["t"].kind == "table"
    assert (by_name["t"].row_estimate, by_name["t"].row_estimate_kind) == (3, "exact")
    assert by_name["v"].kind == "view" and by_name["v"].row_estimate is None


async def test_list_tables_uses_sqlite_stat1_when_analyzed(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(["CREATE INDEX ix_name ON t(name)"], None, transaction=False)
    await sqlite_rw.execute(["ANALYZE"], None, transaction=False)
    tables = {t.name: t for t in await sqlite_rw.list_tables()}
    assert (tables["t"].row_estimate, tables["t"].row_estimate_kind) == (3, "statistics")


async def test_unknown_schema_is_not_found(sqlite_ro: Database) -> None:
    with pytest.raises(NotFound, match="main"):
        await sqlite_ro.list_tables("other")


async def test_describe_table_reports_columns_keys_indexes_and_checks(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(
        [
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER NOT NULL REFERENCES t(id) "
            "ON DELETE CASCADE, total REAL DEFAULT 0 CHECK (total >= 0), note TEXT, "
            "CONSTRAINT small CHECK (length(note) < 100))",
            "CREATE UNIQUE INDEX orders_note ON orders(note)",
        ],
        None,
        transaction=True,
    )
    desc = await sqlite_rw.describe_table("ORDERS")  # names are case-insensitive in SQLite
    assert desc.name == "orders"
    assert [(c.name, c.type, c.nullable, c.default) for c in desc.columns] == [
        ("id", "INTEGER", False, None),
        ("customer", "INTEGER", False, None),
        ("total", "REAL", True, "0"),
        ("note", "TEXT", True, None),
    ]
    assert desc.primary_key == ["id"]
    assert [(f.columns, f.ref_table, f.ref_columns, f.on_delete) for f in desc.foreign_keys] == [
        (["customer"], "t", ["id"], "CASCADE")
    ]
    assert [(i.name, i.columns, i.unique) for i in desc.indexes] == [("orders_note", ["note"], True)]
    assert {c.name for c in desc.checks} == {None, "small"}
    assert "CREATE TABLE orders" in desc.ddl and "CREATE UNIQUE INDEX orders_note" in desc.ddl


async def test_describe_table_index_columns_in_order_and_statistics_of_that_table(
    sqlite_rw: Database,
) -> None:
    await sqlite_rw.execute(
        [
            "CREATE TABLE m (a INTEGER, b TEXT, c TEXT UNIQUE)",
            "CREATE INDEX m_ba ON m(b, a)",
            "CREATE INDEX m_expr ON m(a + 1, b)",
            "INSERT INTO m VALUES (1, 'x', 'p'), (2, 'y', 'q')",
            "ANALYZE m",
        ],
        None,
        transaction=True,
    )
    desc = await sqlite_rw.describe_table("m")
    assert [(i.name, i.columns, i.unique, i.definition is not None) for i in desc.indexes] == [
        ("m_ba", ["b", "a"], False, True),
        ("m_expr", ["<expression>", "b"], False, True),
        ("sqlite_autoindex_m_1", ["c"], True, False),
    ]
    assert desc.row_estimate == 2  # from sqlite_stat1, this table's rows only
    assert desc.checks == []  # no CHECK in the statement: not parsed
    assert desc.ddl.splitlines()[1:] == [
        "CREATE INDEX m_ba ON m(b, a);",
        "CREATE INDEX m_expr ON m(a + 1, b);",
        "-- about 2 rows",
    ]
    # t has no statistics of its own: it is counted.
    t = await sqlite_rw.describe_table("t")
    assert t.row_estimate == 3


async def test_describe_unknown_table_lists_existing_tables(sqlite_ro: Database) -> None:
    with pytest.raises(NotFound, match="tables: t"):
        await sqlite_ro.describe_table("missing")


async def test_explain_returns_the_query_plan(sqlite_ro: Database) -> None:
    plan = await sqlite_ro.explain("SELECT * FROM t WHERE id = 1")
    assert "SEARCH t" in plan


async def test_fingerprints_change_only_for_the_altered_table(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(["CREATE TABLE u (a)"], None, transaction=False)
    schema_before = await sqlite_rw.schema_fingerprint()
    tables_before = await sqlite_rw.table_fingerprints()
    assert set(tables_before) == {"main.t", "main.u"}
    assert await sqlite_rw.schema_fingerprint() == schema_before  # stable when nothing changes
    await sqlite_rw.execute(["ALTER TABLE u ADD COLUMN b"], None, transaction=False)
    tables_after = await sqlite_rw.table_fingerprints()
    assert await sqlite_rw.schema_fingerprint() != schema_before
    assert tables_after["main.t"] == tables_before["main.t"]
    assert tables_after["main.u"] != tables_before["main.u"]


async def test_execute_reports_rows_affected_per_statement(
    sqlite_rw: Database, sqlite_file: Path, sqlite_rows: Callable[[Path], list[tuple[object, ...]]]
) -> None:
    result = await sqlite_rw.execute(
        ["INSERT INTO t VALUES (?, ?)", "UPDATE t SET name = upper(name) WHERE id <= :max"],
        [[4, "dave"], {"max": 2}],
        transaction=True,
    )
    assert [(s.command, s.rows_affected) for s in result.statements] == [("INSERT", 1), ("UPDATE", 2)]
    assert result.committed
    assert sqlite_rows(sqlite_file) == [(1, "ALICE"), (2, "BOB"), (3, "carol"), (4, "dave")]


async def test_failed_statement_rolls_back_the_whole_transaction(
    sqlite_rw: Database, sqlite_file: Path, sqlite_rows: Callable[[Path], list[tuple[object, ...]]]
) -> None:
    with pytest.raises(UpstreamError, match="statement 2 of 2 failed, so the transaction was rolled back"):
        await sqlite_rw.execute(
            ["DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (2, 'dup')"], None, transaction=True
        )
    assert sqlite_rows(sqlite_file) == SEED_ROWS
    # The connection is not left inside a transaction.
    ok = await sqlite_rw.execute(["DELETE FROM t WHERE id = 3"], None, transaction=False)
    assert ok.statements[0].rows_affected == 1


async def test_several_statements_without_transaction_are_refused(sqlite_rw: Database) -> None:
    with pytest.raises(InvalidInput, match="transaction=true"):
        await sqlite_rw.execute(["DELETE FROM t", "DELETE FROM t"], None, transaction=False)


async def test_execute_returns_rows_from_returning(sqlite_rw: Database) -> None:
    result = await sqlite_rw.execute(["DELETE FROM t WHERE id > 1 RETURNING name"], None, transaction=False)
    statement = result.statements[0]
    assert as_lists(statement.rows) == [["bob"], ["carol"]] or as_lists(statement.rows) == [
        ["carol"],
        ["bob"],
    ]


async def test_write_mode_still_refuses_attach_and_vacuum_into(sqlite_rw: Database, tmp_path: Path) -> None:
    target = tmp_path / "escape.db"
    with pytest.raises(AccessDenied, match="ATTACH"):
        await sqlite_rw.execute([f"ATTACH '{target}' AS x"], None, transaction=False)
    with pytest.raises(AccessDenied, match="ATTACH"):
        await sqlite_rw.execute([f"VACUUM INTO '{target}'"], None, transaction=False)
    with pytest.raises(AccessDenied, match="load_extension"):
        await sqlite_rw.execute(["SELECT load_extension('/tmp/evil')"], None, transaction=False)
    with pytest.raises(AccessDenied, match="writable_schema"):
        await sqlite_rw.execute(["PRAGMA writable_schema = 1"], None, transaction=False)
    assert not target.exists()


async def test_query_stays_read_only_when_writes_are_allowed(
    sqlite_rw: Database, sqlite_file: Path, sqlite_rows: Callable[[Path], list[tuple[object, ...]]]
) -> None:
    with pytest.raises(AccessDenied):
        await sqlite_rw.query("DELETE FROM t", None, limit=5)
    assert sqlite_rows(sqlite_file) == SEED_ROWS


async def test_reader_sees_rows_committed_by_execute(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(["INSERT INTO t VALUES (9, 'zed')"], None, transaction=False)
    result = await sqlite_rw.query("SELECT count(*) FROM t", None, limit=5)
    assert as_lists(result.rows) == [[4]]


async def test_missing_file_in_read_only_mode_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await open_database(
            "main", str(tmp_path / "nope.db"), allow_write=False, statement_timeout_s=1, max_rows=5
        )
    assert not (tmp_path / "nope.db").exists()


async def test_default_database_is_created_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sql.urls import parse_database_specs

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    specs = parse_database_specs([])
    db = await open_database("main", specs["main"], allow_write=False, statement_timeout_s=1, max_rows=5)
    try:
        assert db.sqlite_path == tmp_path / "xdg" / "mcp-batteries" / "sql" / "default.db"
        assert db.sqlite_path.exists()
        assert as_lists((await db.query("SELECT 1", None, limit=1)).rows) == [[1]]
    finally:
        await db.close()


async def test_bytes_parameter_in_base64_form_round_trips(sqlite_rw: Database) -> None:
    await sqlite_rw.execute(["CREATE TABLE blobs (b BLOB)"], None, transaction=False)
    await sqlite_rw.execute(["INSERT INTO blobs VALUES (?)"], [{"$base64": "AAEC"}], transaction=False)
    result = await sqlite_rw.query("SELECT b, typeof(b) FROM blobs", None, limit=5)
    assert as_lists(result.rows) == [[{"$base64": "AAEC"}, "blob"]]


ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"


async def endless(db: Database) -> None:
    await db.query(ENDLESS, None, limit=1)


async def test_a_slow_query_does_not_hold_up_other_reads(sqlite_file: Path) -> None:
    # Over HTTP many users share one database: one user's query running to the statement timeout
    # must hold one read connection, not everyone's reads.
    _fill(sqlite_file, 3)
    db = await open_database("main", str(sqlite_file), allow_write=False, statement_timeout_s=60, max_rows=10)
    try:
        async with anyio.create_task_group() as group:
            for _ in range(MAX_READERS - 1):
                group.start_soon(endless, db)
            await anyio.wait_all_tasks_blocked()  # the slow ones hold their connections
            with anyio.fail_after(20):
                cheap = await db.query("SELECT count(*) FROM big", None, limit=1)
                tables = await db.list_tables()
            group.cancel_scope.cancel()
        assert as_lists(cheap.rows) == [[3]]
        assert "big" in [t.name for t in tables]
    finally:
        await db.close()


async def test_a_cancelled_query_stops_at_once_and_frees_its_connection(sqlite_file: Path) -> None:
    _fill(sqlite_file, 3)
    db = await open_database("main", str(sqlite_file), allow_write=False, statement_timeout_s=60, max_rows=10)
    try:
        with anyio.fail_after(20):  # the statement timeout is 60 s: only an interrupt ends them sooner
            async with anyio.create_task_group() as group:
                for _ in range(MAX_READERS + 2):  # every connection busy, two more waiting
                    group.start_soon(endless, db)
                await anyio.wait_all_tasks_blocked()
                group.cancel_scope.cancel()
            after = await db.query("SELECT count(*) FROM big", None, limit=1)
        assert as_lists(after.rows) == [[3]]
    finally:
        await db.close()


async def test_a_cancelled_write_batch_stops_at_once_and_keeps_nothing(sqlite_file: Path) -> None:
    _fill(sqlite_file, 3)
    db = await open_database("main", str(sqlite_file), allow_write=True, statement_timeout_s=60, max_rows=10)
    try:
        batch = ["INSERT INTO big VALUES (100)", f"INSERT INTO big SELECT * FROM ({ENDLESS})"]
        with anyio.fail_after(20):  # the statement timeout is 60 s: only an interrupt ends it sooner
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: db.execute(batch, None, transaction=True))
                await anyio.wait_all_tasks_blocked()
                group.cancel_scope.cancel()
            done = await db.execute(["INSERT INTO big VALUES (200)"], None, transaction=True)
        assert done.committed
        rows = await db.query("SELECT n FROM big WHERE n >= 100 ORDER BY n", None, limit=10)
        assert as_lists(rows.rows) == [[200]]
    finally:
        await db.close()
