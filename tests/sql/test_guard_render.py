"""Pure units: the PostgreSQL statement guard, value conversion and text rendering."""

from __future__ import annotations

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput
from mcp_sql.guard import check_postgres_read, check_postgres_write
from mcp_sql.models import ColumnMeta, QueryResult
from mcp_sql.render import text_table


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select * from t where a = $1;",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "SELECT 1 UNION SELECT 2",
        "VALUES (1), (2)",
        "TABLE t",
        "(SELECT 1)",
        "SHOW search_path",
        "EXPLAIN SELECT 1",
        "EXPLAIN (FORMAT JSON, COSTS off) SELECT * FROM t",
        "EXPLAIN VERBOSE SELECT 1",
        "SELECT 'pg_read_file(x)' AS harmless_string",
        "SELECT pg_sleep(0.1)",
        "SELECT now(), current_setting('search_path')",
        "/* leading comment */ SELECT 1 -- trailing",
    ],
)
def test_read_statements_are_accepted(sql: str) -> None:
    check_postgres_read(sql)


@pytest.mark.parametrize(
    ("sql", "expected", "fragment"),
    [
        ("", InvalidInput, "empty"),
        ("-- only a comment", InvalidInput, ""),
        ("SELECT $1$x$1$", InvalidInput, ""),
        ("SELECT xmlparse(document '<a/>')", InvalidInput, "could not parse"),
        ("SELECT 1; SELECT 2", InvalidInput, "one statement"),
        ("EXPLAIN ANALYSE SELECT 1", AccessDenied, "ANALYZE"),
        ("EXPLAIN EXPLAIN SELECT 1", AccessDenied, ""),
        ("SHOW search_path; DROP TABLE t", InvalidInput, "SHOW"),
        ("SELECT DBLINK_EXEC('x', 'y')", AccessDenied, "dblink_exec"),
        ("SELECT pg_logical_slot_get_changes('s', NULL, NULL)", AccessDenied, ""),
        ("INSERT INTO t VALUES (1)", AccessDenied, "INSERT"),
        ("MERGE INTO t USING u ON true WHEN MATCHED THEN DELETE", AccessDenied, ""),
    ],
)
def test_non_read_statements_are_refused_with_a_reason(
    sql: str, expected: type[Exception], fragment: str
) -> None:
    with pytest.raises(expected) as info:
        check_postgres_read(sql)
    assert fragment in str(info.value)


def test_write_mode_guard_allows_ddl_but_not_server_files() -> None:
    check_postgres_write("CREATE TABLE x (a int)")
    check_postgres_write("COPY t FROM STDIN")
    with pytest.raises(AccessDenied):
        check_postgres_write("COPY t TO '/tmp/x'")
    with pytest.raises(AccessDenied):
        check_postgres_write("SELECT lo_export(1, '/tmp/x')")


def _result(rows: list[list[object]], truncated: bool = False) -> QueryResult:
    return QueryResult(
        columns=[ColumnMeta(name="id", type="int4"), ColumnMeta(name="doc", type="jsonb")],
        rows=rows,
        row_count=len(rows),
        offset=0,
        truncated=truncated,
        next_offset=len(rows) if truncated else None,
    )


def test_text_table_aligns_columns_and_shows_nulls_and_json() -> None:
    text = text_table(_result([[1, {"a": [1, 2]}], [22, None]]))
    assert text.splitlines() == [
        "id | doc",
        "---+------------",
        '1  | {"a":[1,2]}',
        "22 | NULL",
        "(2 rows)",
    ]


def test_text_table_truncates_long_cells_and_escapes_newlines() -> None:
    text = text_table(_result([[1, "x" * 100], [2, "line1\nline2"]]), max_width=10)
    lines = text.splitlines()
    assert lines[2] == "1  | xxxxxxxxx…"
    assert lines[3] == "2  | line1\\nli…"


def test_text_table_footer_says_how_to_get_the_next_page() -> None:
    assert text_table(_result([[1, None]], truncated=True)).endswith(
        "(1 row shown; more rows exist: call again with offset=1)"
    )
