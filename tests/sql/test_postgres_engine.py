"""PostgreSQL engine behaviour against a real server: values, paging, timeouts, errors, catalog, writes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from mcp_batteries.errors import InvalidInput, LimitExceeded, NotFound, UpstreamError
from mcp_sql.database import Database

from .conftest import as_lists

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]


@pytest.mark.parametrize(
    ("expression", "type_name", "expected"),
    [
        ("42::int4", "int4", 42),
        ("9007199254740993::int8", "int8", 9007199254740993),
        ("1.50::numeric(10,2)", "numeric", "1.50"),
        ("123456789012345678901234567890.123::numeric", "numeric", "123456789012345678901234567890.123"),
        ("'NaN'::numeric", "numeric", "NaN"),
        ("2.5::float8", "float8", 2.5),
        ("'Infinity'::float8", "float8", "Infinity"),
        ("true", "bool", True),
        ("'2024-03-01 12:30:00+02'::timestamptz", "timestamptz", "2024-03-01T10:30:00+00:00"),
        ("'2024-03-01 12:30:00'::timestamp", "timestamp", "2024-03-01T12:30:00"),
        ("'2024-03-01'::date", "date", "2024-03-01"),
        ("'12:30:01'::time", "time", "12:30:01"),
        ("'1 year 2 months 3 days 04:05:06'::interval", "interval", "P1Y2M3DT4H5M6S"),
        ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", "uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ('\'{"a": [1, null, "x"]}\'::jsonb', "jsonb", {"a": [1, None, "x"]}),
        ("'[1, 2]'::json", "json", [1, 2]),
        ("ARRAY[1, 2, 3]", "int4[]", [1, 2, 3]),
        ("ARRAY[['a', 'b'], ['c', NULL]]", "text[]", [["a", "b"], ["c", None]]),
        ("'\\x00ff'::bytea", "bytea", {"$base64": "AP8="}),
        ("NULL::text", "text", None),
        ("'192.168.1.5/24'::inet", "inet", "192.168.1.5/24"),
        ("'10.0.0.0/8'::cidr", "cidr", "10.0.0.0/8"),
        ("'08:00:2b:01:02:03'::macaddr", "macaddr", "08:00:2b:01:02:03"),
        (
            "'[1,5)'::int4range",
            "int4range",
            {"lower": 1, "upper": 5, "lower_inc": True, "upper_inc": False, "empty": False},
        ),
        ("'12.34'::money", "money", "$12.34"),
        ("'<a>x</a>'::xml", "xml", "<a>x</a>"),
    ],
)
async def test_value_is_returned_json_safe(
    pg_ro: Database, expression: str, type_name: str, expected: Any
) -> None:
    result = await pg_ro.query(f"SELECT {expression} AS v", None, limit=1)
    assert result.columns[0].type == type_name
    assert as_lists(result.rows) == [[expected]]


async def test_json_params_are_fitted_to_parameter_types(pg_ro: Database) -> None:
    result = await pg_ro.query(
        "SELECT $1::date + 1, $2::timestamptz, $3::jsonb -> 'k', "
        "$4::bytea, $5::int + 1, $6::numeric * 2, $7::text",
        ["2024-02-28", "2024-01-01T00:00:00Z", {"k": "v"}, {"$base64": "AQI="}, "41", "1.25", 7],
        limit=1,
    )
    assert as_lists(result.rows) == [
        ["2024-02-29", "2024-01-01T00:00:00+00:00", "v", {"$base64": "AQI="}, 42, "2.50", "7"]
    ]


async def test_named_params_are_refused_with_a_hint(pg_ro: Database) -> None:
    with pytest.raises(InvalidInput, match=r"\$1"):
        await pg_ro.query("SELECT 1", {"a": 1}, limit=1)


async def test_unconvertible_param_is_invalid_input(pg_ro: Database) -> None:
    with pytest.raises(InvalidInput, match=r"\$1 expects date"):
        await pg_ro.query("SELECT $1::date", ["not a date"], limit=1)


async def test_query_fetches_only_one_page_of_a_large_result(pg_ro: Database) -> None:
    # Ten million rows would take far longer than the timeout to fetch: only limit+1 cross the wire.
    result = await pg_ro.query("SELECT g FROM generate_series(1, 10000000) g", None, limit=5, offset=1000)
    assert as_lists(result.rows) == [[1001], [1002], [1003], [1004], [1005]]
    assert result.truncated and result.next_offset == 1005


async def test_offsets_past_32_bits_page_and_past_2_to_the_53_are_refused(pg_ro: Database) -> None:
    # MOVE takes a 32-bit count: 2^31 used to end as "syntax error at or near 2147483648".
    for offset in (2**31, 2**53 - 1):
        result = await pg_ro.query("SELECT id FROM t ORDER BY id", None, limit=2, offset=offset)
        assert (result.rows, result.next_offset) == ([], None)
    with pytest.raises(InvalidInput, match="offset must be from 0 to 9,007,199,254,740,991"):
        await pg_ro.query("SELECT 1", None, limit=1, offset=2**63)


async def test_limit_is_clamped_to_max_rows(pg_ro: Database) -> None:
    result = await pg_ro.query("SELECT generate_series(1, 500)", None, limit=1000)
    assert result.row_count == 100 and result.next_offset == 100


async def test_last_page_has_no_next_offset(pg_ro: Database) -> None:
    result = await pg_ro.query("SELECT id FROM t ORDER BY id", None, limit=2, offset=2)
    assert (as_lists(result.rows), result.truncated, result.next_offset) == ([[3]], False, None)


async def test_show_and_explain_are_accepted_by_query(pg_ro: Database) -> None:
    show = await pg_ro.query("SHOW search_path", None, limit=5)
    assert as_lists(show.rows) == [["public"]]
    explain = await pg_ro.query("EXPLAIN SELECT * FROM t WHERE id = 1", None, limit=20)
    assert "t_pkey" in str(explain.rows)


async def test_pg_sleep_past_timeout_is_cancelled_on_the_server(pg_seeded: Any, pg_admin: Any) -> None:
    from mcp_sql.database import open_database

    db = await open_database(
        "main", pg_seeded.dsn, allow_write=False, statement_timeout_s=1, max_rows=10,
        pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        started = time.monotonic()
        with pytest.raises(LimitExceeded, match="1 s statement timeout"):
            await db.query("SELECT pg_sleep(10)", None, limit=1)
        elapsed = time.monotonic() - started
        assert elapsed < 3
        running = await pg_admin.value(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(10)%' "
            "AND pid <> pg_backend_pid()"
        )
        assert running == 0
        assert as_lists((await db.query("SELECT 1", None, limit=1)).rows) == [[1]]
    finally:
        await db.close()


async def test_database_error_has_message_position_and_hint(pg_ro: Database) -> None:
    with pytest.raises(UpstreamError) as info:
        await pg_ro.query("SELECT nme\nFROM t", None, limit=1)
    message = str(info.value)
    assert 'column "nme" does not exist' in message
    assert "LINE 1: SELECT nme" in message
    assert "\n               ^" in message  # caret under "nme"
    assert "HINT:" in message and "name" in message


async def test_error_position_on_a_later_line_points_into_that_line(pg_ro: Database) -> None:
    with pytest.raises(UpstreamError) as info:
        await pg_ro.query("SELECT id\nFROM t\nWHERE nosuch = 1", None, limit=1)
    assert "LINE 3: WHERE nosuch = 1" in str(info.value)


async def test_pool_stays_healthy_after_many_errors(pg_ro: Database) -> None:
    for _ in range(12):  # more than the pool size
        with pytest.raises(UpstreamError):
            await pg_ro.query("SELECT 1/0", None, limit=1)
        with pytest.raises(InvalidInput):
            await pg_ro.query("SELECT $1::int", [], limit=1)
    assert as_lists((await pg_ro.query("SELECT count(*) FROM t", None, limit=1)).rows) == [[3]]


async def test_list_schemas_and_tables(pg_ro: Database, pg_admin: Any) -> None:
    await pg_admin.exec(
        "CREATE SCHEMA other; COMMENT ON SCHEMA other IS 'side data';"
        "CREATE TABLE other.big AS SELECT g FROM generate_series(1, 1000) g; ANALYZE other.big;"
        "CREATE VIEW v AS SELECT name FROM t; CREATE MATERIALIZED VIEW mv AS SELECT 1 AS one;"
        "COMMENT ON TABLE t IS 'people'"
    )
    schemas = {s.name: s for s in await pg_ro.list_schemas()}
    assert schemas["other"].comment == "side data" and schemas["other"].table_count == 1
    tables = {(t.schema_name, t.name): t for t in await pg_ro.list_tables()}
    assert tables[("public", "t")].comment == "people"
    assert tables[("public", "v")].kind == "view"
    assert tables[("public", "mv")].kind == "materialized view"
    assert tables[("other", "big")].row_estimate == 1000
    assert tables[("other", "big")].row_estimate_kind == "statistics"
    assert [t.name for t in await pg_ro.list_tables("other")] == ["big"]
    with pytest.raises(NotFound, match="schemas: other, public"):
        await pg_ro.list_tables("nosuch")


async def test_describe_table_reports_everything_and_renders_ddl(pg_ro: Database, pg_admin: Any) -> None:
    await pg_admin.exec(
        """
        CREATE TABLE orders (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            customer int NOT NULL REFERENCES t(id) ON DELETE CASCADE,
            total numeric(10,2) DEFAULT 0 CONSTRAINT total_positive CHECK (total >= 0),
            doubled numeric GENERATED ALWAYS AS (total * 2) STORED,
            note text
        );
        CREATE INDEX orders_customer ON orders (customer);
        CREATE UNIQUE INDEX orders_note_lower ON orders (lower(note));
        COMMENT ON TABLE orders IS 'customer orders';
        COMMENT ON COLUMN orders.note IS 'free text';
        """
    )
    desc = await pg_ro.describe_table("Orders")  # case-insensitive fallback
    assert (desc.schema_name, desc.name, desc.kind, desc.comment) == (
        "public",
        "orders",
        "table",
        "customer orders",
    )
    cols = {c.name: c for c in desc.columns}
    assert cols["id"].type == "bigint" and cols["id"].default == "GENERATED ALWAYS AS IDENTITY"
    assert cols["customer"].nullable is False
    assert cols["total"].type == "numeric(10,2)" and cols["total"].default == "0"
    assert cols["doubled"].generated == "(total * (2)::numeric)"
    assert cols["note"].comment == "free text"
    assert desc.primary_key == ["id"]
    assert [
        (f.columns, f.ref_schema, f.ref_table, f.ref_columns, f.on_delete) for f in desc.foreign_keys
    ] == [(["customer"], "public", "t", ["id"], "CASCADE")]
    assert [c.name for c in desc.checks] == ["total_positive"]
    indexes = {i.name: i for i in desc.indexes}
    assert indexes["orders_customer"].columns == ["customer"]
    assert indexes["orders_note_lower"].unique and indexes["orders_note_lower"].columns == ["lower(note)"]
    assert indexes["orders_pkey"].primary
    ddl = desc.ddl
    assert "CREATE TABLE public.orders (" in ddl
    assert "id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY" in ddl
    assert "note text,  -- free text" in ddl or "note text  -- free text" in ddl
    assert "REFERENCES public.t (id) ON DELETE CASCADE" in ddl
    assert "CREATE UNIQUE INDEX orders_note_lower ON public.orders USING btree (lower(note));" in ddl
    assert "orders_pkey" not in ddl.split(");", 1)[1]


async def test_describe_table_in_explicit_schema_and_view(pg_ro: Database, pg_admin: Any) -> None:
    await pg_admin.exec(
        "CREATE SCHEMA other; CREATE TABLE other.t (x int); CREATE VIEW v AS SELECT id FROM t"
    )
    desc = await pg_ro.describe_table("t", schema="other")
    assert [c.name for c in desc.columns] == ["x"]
    view = await pg_ro.describe_table("v")
    assert view.kind == "view" and view.view_definition and "FROM t" in view.view_definition


async def test_describe_unknown_table_lists_tables(pg_ro: Database) -> None:
    with pytest.raises(NotFound, match=r"tables: public\.t"):
        await pg_ro.describe_table("missing")


async def test_explain_returns_the_plan(pg_ro: Database) -> None:
    plan = await pg_ro.explain("SELECT * FROM t WHERE id = 2")
    assert "t_pkey" in plan or "Seq Scan" in plan


async def test_fingerprints_change_only_for_the_altered_table(pg_ro: Database, pg_admin: Any) -> None:
    await pg_admin.exec("CREATE TABLE u (a int)")
    schema_before = await pg_ro.schema_fingerprint()
    tables_before = await pg_ro.table_fingerprints()
    assert {"public.t", "public.u"} <= set(tables_before)
    assert await pg_ro.schema_fingerprint() == schema_before
    await pg_admin.exec("ALTER TABLE u ADD COLUMN b text")
    tables_after = await pg_ro.table_fingerprints()
    assert tables_after["public.t"] == tables_before["public.t"]
    assert tables_after["public.u"] != tables_before["public.u"]
    assert await pg_ro.schema_fingerprint() != schema_before
    await pg_admin.exec("CREATE SCHEMA empty_one")
    assert await pg_ro.schema_fingerprint() != schema_before


async def test_execute_reports_rows_affected_and_returning_rows(pg_rw: Database, pg_admin: Any) -> None:
    result = await pg_rw.execute(
        [
            "INSERT INTO t VALUES ($1, $2), ($3, $4)",
            "UPDATE t SET name = upper(name) WHERE id <= $1",
            "DELETE FROM t WHERE id = 5 RETURNING name",
            "CREATE TABLE made (a int)",
        ],
        [[4, "dave", 5, "eve"], [2], None, None],
        transaction=True,
    )
    summary = [(s.command, s.rows_affected) for s in result.statements]
    assert summary == [("INSERT", 2), ("UPDATE", 2), ("DELETE", 1), ("CREATE TABLE", None)]
    assert as_lists(result.statements[2].rows) == [["eve"]]
    assert await pg_admin.rows() == [(1, "ALICE"), (2, "BOB"), (3, "carol"), (4, "dave")]


async def test_failed_transaction_is_all_or_nothing(pg_rw: Database, pg_admin: Any) -> None:
    with pytest.raises(UpstreamError, match="statement 3 of 3 failed, so the transaction was rolled back"):
        await pg_rw.execute(
            ["DELETE FROM t WHERE id = 1", "CREATE TABLE gone (a int)", "INSERT INTO t VALUES (2, 'dup')"],
            None,
            transaction=True,
        )
    assert await pg_admin.rows() == SEED_ROWS
    assert await pg_admin.value("SELECT count(*) FROM pg_class WHERE relname = 'gone'") == 0


async def test_execute_one_statement_per_entry(pg_rw: Database, pg_admin: Any) -> None:
    with pytest.raises(InvalidInput, match="its own list item"):
        await pg_rw.execute(["DELETE FROM t; DROP TABLE t"], None, transaction=False)
    assert await pg_admin.rows() == SEED_ROWS


async def test_execute_without_transaction_runs_vacuum(pg_rw: Database) -> None:
    result = await pg_rw.execute(["VACUUM t"], None, transaction=False)
    assert result.statements[0].command == "VACUUM"


async def test_write_mode_still_refuses_server_file_access(pg_rw: Database, pg_admin: Any) -> None:
    from mcp_batteries.errors import AccessDenied

    with pytest.raises(AccessDenied, match="filesystem"):
        await pg_rw.execute(["SELECT pg_read_file('/etc/passwd')"], None, transaction=False)
    with pytest.raises(AccessDenied, match="PROGRAM"):
        await pg_rw.execute(["COPY t TO PROGRAM 'cat'"], None, transaction=False)
    assert await pg_admin.rows() == SEED_ROWS


async def test_query_stays_read_only_when_writes_are_allowed(pg_rw: Database, pg_admin: Any) -> None:
    from mcp_batteries.errors import AccessDenied

    with pytest.raises(AccessDenied):
        await pg_rw.query("DELETE FROM t", None, limit=1)
    assert await pg_admin.rows() == SEED_ROWS


async def test_explain_analyze_in_write_mode_runs_and_rolls_back(pg_rw: Database, pg_admin: Any) -> None:
    plan = await pg_rw.explain("DELETE FROM t", analyze=True)
    assert "actual time" in plan and "rolled back" in plan
    assert await pg_admin.rows() == SEED_ROWS
