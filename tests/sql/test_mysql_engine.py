"""MySQL/MariaDB engine against a real server: values, paging, timeouts, cancel, errors, catalog, writes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_batteries.errors import ConfigError, InvalidInput, LimitExceeded, NotFound, UpstreamError
from mcp_sql.database import Database, open_database

from .conftest import MyAdmin, as_lists

pytestmark = pytest.mark.anyio

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]


@pytest.mark.parametrize(
    ("expression", "type_name", "expected"),
    [
        ("CAST(42 AS SIGNED)", "int", 42),
        ("18446744073709551615", "bigint unsigned", 18446744073709551615),
        ("CAST(1.5 AS DECIMAL(65,30))", "decimal", "1.500000000000000000000000000000"),
        ("CAST('12345678901234567890123456789012345.123456789012345678901234567890' AS DECIMAL(65,30))",
         "decimal", "12345678901234567890123456789012345.123456789012345678901234567890"),
        ("2.5e0", "double", 2.5),
        ("TIME'838:59:59'", "time", "838:59:59"),
        ("TIME'-01:30:00.5'", "time", "-01:30:00.5"),
        ("TIME'12:30:01'", "time", "12:30:01"),
        ("DATE'2024-03-01'", "date", "2024-03-01"),
        ("TIMESTAMP'2024-03-01 12:30:00'", "datetime", "2024-03-01T12:30:00"),
        ("x'00ff'", "varbinary", {"$base64": "AP8="}),
        ("'héllo'", "varchar", "héllo"),
        ("NULL", "null", None),
        ("JSON_OBJECT('a', 1)", "varchar", '{"a": 1}'),
    ],
)  # fmt: skip
async def test_value_is_returned_json_safe(
    my_ro: Database, expression: str, type_name: str, expected: Any
) -> None:
    result = await my_ro.query(f"SELECT {expression} AS v", None, limit=1)
    assert result.columns[0].type == type_name
    assert as_lists(result.rows) == [[expected]]


async def test_column_types_that_are_not_text_have_reversible_forms(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    await my_admin.exec(
        "SET SESSION sql_mode = '';"
        "CREATE TABLE odd (b BIT(3), y YEAR, d DATE, dt DATETIME, ts TIMESTAMP NULL, bin VARBINARY(4), "
        " blb BLOB, l1 VARCHAR(10) CHARACTER SET latin1, g GEOMETRY, e ENUM('x','y'), st SET('a','b'), "
        " u BIGINT UNSIGNED, j JSON, dec65 DECIMAL(65,30));"
        "INSERT INTO odd VALUES (b'101', 2024, '0000-00-00', '0000-00-00 00:00:00', '2024-03-01 10:30:00', "
        " x'00ff10', x'deadbeef', x'e9ff', POINT(1, 2), 'y', 'a,b', 18446744073709551615, '{\"k\": [1]}', "
        " '-99999999999999999999999999999999999.999999999999999999999999999999')"
    )
    result = await my_ro.query("SELECT * FROM odd", None, limit=1)
    types = [c.type for c in result.columns]
    assert types == [
        "bit", "year", "date", "datetime", "timestamp", "varbinary", "blob", "varchar", "geometry", "enum",
        "set", "bigint unsigned", "text", "decimal",  # MariaDB's JSON is LONGTEXT
    ]  # fmt: skip
    row = as_lists(result.rows)[0]  # type: ignore[index]
    assert row[:8] == [
        "101", 2024, "0000-00-00", "0000-00-00 00:00:00", "2024-03-01T10:30:00+00:00",
        {"$base64": "AP8Q"}, {"$base64": "3q2+7w=="}, "éÿ",
    ]  # fmt: skip
    assert set(row[8]) == {"$base64"}  # SRID + WKB; ST_AsText(g) gives WKT
    assert row[9:] == [
        "y", "a,b", 18446744073709551615, '{"k": [1]}',
        "-99999999999999999999999999999999999.999999999999999999999999999999",
    ]  # fmt: skip
    wkt = await my_ro.query("SELECT ST_AsText(g) FROM odd", None, limit=1)
    assert as_lists(wkt.rows) == [["POINT(1 2)"]]


async def test_params_are_positional_question_marks(my_ro: Database) -> None:
    result = await my_ro.query(
        "SELECT name, ? + 1, ?, ? FROM t WHERE id = ? AND name <> '?'",
        [41, {"$base64": "AQI="}, {"k": "v"}, 2],
        limit=1,
    )
    assert as_lists(result.rows) == [["bob", 42, {"$base64": "AQI="}, '{"k": "v"}']]
    with pytest.raises(InvalidInput, match="2 \\? placeholders but 1"):
        await my_ro.query("SELECT ?, ?", [1], limit=1)
    with pytest.raises(InvalidInput, match="positional"):
        await my_ro.query("SELECT 1", {"a": 1}, limit=1)


async def test_query_reads_only_one_page_of_a_huge_result_and_stops_it(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    started = time.monotonic()
    result = await my_ro.query("SELECT seq FROM seq_1_to_100000000", None, limit=5, offset=1000)
    assert as_lists(result.rows) == [[1001], [1002], [1003], [1004], [1005]]
    assert result.truncated and result.next_offset == 1005
    assert time.monotonic() - started < 3
    running = await my_admin.value(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%seq_1_to_100000000%' "
        "AND INFO NOT LIKE '%PROCESSLIST%'"
    )
    assert running == 0
    assert as_lists((await my_ro.query("SELECT COUNT(*) FROM t", None, limit=1)).rows) == [[3]]


async def test_pages_limit_and_last_page(my_ro: Database) -> None:
    clamped = await my_ro.query("SELECT seq FROM seq_1_to_500", None, limit=1000)
    assert clamped.row_count == 100 and clamped.next_offset == 100
    last = await my_ro.query("SELECT id FROM t ORDER BY id", None, limit=2, offset=2)
    assert (as_lists(last.rows), last.truncated, last.next_offset) == ([[3]], False, None)
    beyond = await my_ro.query("SELECT id FROM t ORDER BY id", None, limit=2, offset=10)
    assert (beyond.row_count, beyond.next_offset) == (0, None)


async def test_long_values_are_cut_with_a_note(my_admin: MyAdmin) -> None:
    db = await open_database(
        "main", my_admin.env.url, allow_write=False, statement_timeout_s=5, max_rows=10, max_value_bytes=100
    )
    try:
        result = await db.query("SELECT REPEAT('x', 5000) AS v, REPEAT(x'ff', 300) AS b", None, limit=1)
        assert len(result.rows[0][0]) == 100 and result.cut_values[0].total == 5000
        assert "substr(v, 101," in (result.note or "")
    finally:
        await db.close()


async def test_show_describe_and_explain_are_accepted_by_query(my_ro: Database) -> None:
    tables = await my_ro.query("SHOW TABLES", None, limit=5)
    assert ["t"] in as_lists(tables.rows)  # type: ignore[operator]
    described = await my_ro.query("DESCRIBE t", None, limit=5)
    assert described.rows[0][0] == "id"
    plan = await my_ro.query("EXPLAIN SELECT * FROM t WHERE id = 1", None, limit=5)
    assert "PRIMARY" in str(plan.rows)


async def test_statement_past_the_timeout_is_stopped_on_the_server(my_admin: MyAdmin) -> None:
    db = await open_database("main", my_admin.env.url, allow_write=False, statement_timeout_s=1, max_rows=10)
    try:
        started = time.monotonic()
        with pytest.raises(LimitExceeded, match="1 s statement timeout"):
            await db.query(
                "SELECT SUM(a.seq * b.seq) FROM seq_1_to_100000 a, seq_1_to_100000 b", None, limit=1
            )
        assert time.monotonic() - started < 4
        running = await my_admin.value(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%seq_1_to_100000 a%' "
            "AND INFO NOT LIKE '%PROCESSLIST%'"
        )
        assert running == 0
        assert as_lists((await db.query("SELECT 1", None, limit=1)).rows) == [[1]]
    finally:
        await db.close()


async def test_a_cancelled_query_is_killed_on_the_server(my_ro: Database, my_admin: MyAdmin) -> None:
    sql = "SELECT SUM(a.seq * b.seq) FROM seq_1_to_100001 a, seq_1_to_100001 b"
    with anyio.move_on_after(0.5):
        await my_ro.query(sql, None, limit=1)
    # The server's process list has no event to wait on: it is polled, within a deadline.
    with anyio.fail_after(5):
        while await my_admin.value(  # noqa: ASYNC110
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%seq_1_to_100001 a%' "
            "AND INFO NOT LIKE '%PROCESSLIST%'"
        ):
            await anyio.sleep(0.05)
    assert as_lists((await my_ro.query("SELECT COUNT(*) FROM t", None, limit=1)).rows) == [[3]]


async def test_database_error_names_code_and_message(my_ro: Database) -> None:
    with pytest.raises(UpstreamError, match="MySQL error 1054: Unknown column 'nme'"):
        await my_ro.query("SELECT nme FROM t", None, limit=1)


async def test_pool_stays_healthy_after_many_errors(my_ro: Database) -> None:
    for _ in range(12):  # more than the pool size
        with pytest.raises(UpstreamError):
            await my_ro.query("SELECT * FROM nope", None, limit=1)
        with pytest.raises(InvalidInput):
            await my_ro.query("SELECT ?", [], limit=1)
    assert as_lists((await my_ro.query("SELECT COUNT(*) FROM t", None, limit=1)).rows) == [[3]]


async def test_list_schemas_and_tables(my_ro: Database, my_admin: MyAdmin) -> None:
    await my_admin.exec(
        "CREATE TABLE big (g INT) COMMENT 'numbers'; INSERT INTO big SELECT seq FROM seq_1_to_1000;"
        "ANALYZE TABLE big; CREATE VIEW v AS SELECT name FROM t"
    )
    schemas = {s.name: s for s in await my_ro.list_schemas()}
    assert schemas[my_admin.env.database].table_count == 4  # t, s, big, v
    assert "mysql" not in schemas and "information_schema" not in schemas
    tables = {t.name: t for t in await my_ro.list_tables()}
    assert tables["big"].comment == "numbers" and tables["big"].row_estimate == 1000
    assert tables["big"].row_estimate_kind == "statistics"
    assert tables["v"].kind == "view" and tables["s"].kind == "sequence"
    with pytest.raises(NotFound, match="schemas:"):
        await my_ro.list_tables("nosuch")


async def test_describe_table_reports_keys_indexes_checks_and_exact_ddl(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    await my_admin.exec(
        """
        CREATE TABLE orders (
            id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
            customer INT NOT NULL,
            total DECIMAL(10,2) DEFAULT 0,
            doubled DECIMAL(12,2) AS (total * 2) STORED,
            note VARCHAR(200) COMMENT 'free text',
            KEY orders_customer (customer),
            UNIQUE KEY orders_note (note(20)),
            CONSTRAINT total_positive CHECK (total >= 0),
            CONSTRAINT orders_fk FOREIGN KEY (customer) REFERENCES t (id) ON DELETE CASCADE
        ) COMMENT 'customer orders'
        """
    )
    desc = await my_ro.describe_table("Orders")  # case-insensitive fallback
    assert (desc.name, desc.kind, desc.comment) == ("orders", "table", "customer orders")
    cols = {c.name: c for c in desc.columns}
    assert cols["id"].type == "bigint(20) unsigned" and cols["id"].default == "AUTO_INCREMENT"
    assert cols["customer"].nullable is False and cols["note"].comment == "free text"
    assert cols["doubled"].generated and "total" in cols["doubled"].generated
    assert desc.primary_key == ["id"]
    assert [(f.name, f.columns, f.ref_table, f.ref_columns, f.on_delete) for f in desc.foreign_keys] == [
        ("orders_fk", ["customer"], "t", ["id"], "CASCADE")
    ]
    assert [c.name for c in desc.checks] == ["total_positive"]
    indexes = {i.name: i for i in desc.indexes}
    assert indexes["orders_note"].unique and indexes["orders_note"].columns == ["note(20)"]
    assert "CREATE TABLE `orders`" in desc.ddl and "FOREIGN KEY (`customer`)" in desc.ddl
    view = await my_ro.describe_table("t")
    assert "PRIMARY KEY (`id`)" in view.ddl


async def test_describe_unknown_table_lists_tables(my_ro: Database, my_admin: MyAdmin) -> None:
    with pytest.raises(NotFound, match=rf"tables: .*{my_admin.env.database}\.t"):
        await my_ro.describe_table("missing")


async def test_explain_returns_the_plan(my_ro: Database) -> None:
    plan = await my_ro.explain("SELECT * FROM t WHERE id = 2")
    assert "PRIMARY" in plan and "select_type" in plan


async def test_fingerprints_change_only_for_the_altered_table(my_ro: Database, my_admin: MyAdmin) -> None:
    await my_admin.exec("CREATE TABLE u (a INT)")
    db = my_admin.env.database
    before = await my_ro.table_fingerprints()
    schema_before = await my_ro.schema_fingerprint()
    assert {f"{db}.t", f"{db}.u"} <= set(before)
    await my_admin.exec("ALTER TABLE u ADD COLUMN b TEXT")
    after = await my_ro.table_fingerprints()
    assert after[f"{db}.t"] == before[f"{db}.t"] and after[f"{db}.u"] != before[f"{db}.u"]
    assert await my_ro.schema_fingerprint() != schema_before


async def test_execute_reports_rows_affected_and_returning_rows(my_rw: Database, my_admin: MyAdmin) -> None:
    result = await my_rw.execute(
        [
            "INSERT INTO t VALUES (?, ?), (?, ?)",
            "UPDATE t SET name = UPPER(name) WHERE id <= ?",
            "DELETE FROM t WHERE id = 5 RETURNING name",
        ],
        [[4, "dave", 5, "eve"], [2], None],
        transaction=True,
    )
    assert [(s.command, s.rows_affected) for s in result.statements] == [
        ("INSERT", 2), ("UPDATE", 2), ("DELETE", 1),
    ]  # fmt: skip
    assert as_lists(result.statements[2].rows) == [["eve"]]
    assert await my_admin.rows() == [(1, "ALICE"), (2, "BOB"), (3, "carol"), (4, "dave")]


async def test_failed_batch_is_all_or_nothing(my_rw: Database, my_admin: MyAdmin) -> None:
    with pytest.raises(UpstreamError, match="statement 2 of 2 failed, so the transaction was rolled back"):
        await my_rw.execute(
            ["DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (2, 'dup')"], None, transaction=True
        )
    assert await my_admin.rows() == SEED_ROWS


async def test_ddl_runs_alone_and_is_refused_inside_a_batch(my_rw: Database, my_admin: MyAdmin) -> None:
    with pytest.raises(InvalidInput, match="committed by MySQL on its own"):
        await my_rw.execute(
            ["DELETE FROM t WHERE id = 1", "CREATE TABLE gone (a INT)"], None, transaction=True
        )
    assert await my_admin.rows() == SEED_ROWS
    made = await my_rw.execute(["CREATE TABLE made (a INT)"], None, transaction=True)
    assert made.statements[0].command == "CREATE TABLE"
    with pytest.raises(InvalidInput, match="its own list item"):
        await my_rw.execute(["DELETE FROM t; DROP TABLE t"], None, transaction=False)
    with pytest.raises(InvalidInput, match="transaction control"):
        await my_rw.execute(["XA START 'x'"], None, transaction=False)


async def test_write_mode_still_refuses_server_files(my_rw: Database, my_admin: MyAdmin) -> None:
    from mcp_batteries.errors import AccessDenied

    for sql in ("SELECT LOAD_FILE('/etc/passwd')", "SELECT * FROM t INTO OUTFILE '/tmp/x'",
                "LOAD DATA INFILE '/etc/hostname' INTO TABLE t", "/*! DROP TABLE t */"):  # fmt: skip
        with pytest.raises(AccessDenied):
            await my_rw.execute([sql], None, transaction=False)
    with pytest.raises(AccessDenied):
        await my_rw.query("DELETE FROM t", None, limit=1)  # query stays read-only
    assert await my_admin.rows() == SEED_ROWS


async def test_explain_analyze_in_write_mode_runs_and_rolls_back(my_rw: Database, my_admin: MyAdmin) -> None:
    plan = await my_rw.explain("DELETE FROM t WHERE id > 1", analyze=True)
    assert "r_rows" in plan and "rolled back" in plan
    assert await my_admin.rows() == SEED_ROWS


# -- connecting ---------------------------------------------------------------------------------
async def test_password_from_an_option_file_and_never_shown(
    my_admin: MyAdmin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = my_admin.env
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    cnf = tmp_path / "app.cnf"
    cnf.write_text(f'[client]\nuser = {env.reader}\npassword = "{env.reader_password}"\n')
    url = env.url.replace("root@", "").split("?")[0] + f"?option-file={cnf}"
    db = await open_database("main", url, allow_write=False, statement_timeout_s=5, max_rows=10)
    try:
        who = await db.query("SELECT CURRENT_USER()", None, limit=1)
        assert str(who.rows[0][0]).startswith(env.reader)
        assert env.reader_password not in " ".join(db.safety_notes) + db.url_redacted
    finally:
        await db.close()


async def test_password_from_mysql_pwd(
    my_admin: MyAdmin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = my_admin.env
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MYSQL_PWD", env.reader_password)
    url = env.reader_url.replace(f":{env.reader_password}@", "@")
    db = await open_database("main", url, allow_write=False, statement_timeout_s=5, max_rows=10)
    await db.close()


async def test_wrong_password_is_a_config_error_without_the_password(my_admin: MyAdmin) -> None:
    env = my_admin.env
    url = env.reader_url.replace(env.reader_password, "wrong-secret-123")
    with pytest.raises(ConfigError) as info:
        await open_database("main", url, allow_write=False, statement_timeout_s=5, max_rows=10)
    assert "wrong-secret-123" not in str(info.value) and "***" in str(info.value)
