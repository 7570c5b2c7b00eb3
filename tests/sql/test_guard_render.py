"""Pure units: the PostgreSQL statement guard, value conversion and text rendering."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput
from mcp_sql.guard import check_postgres_read, check_postgres_write
from mcp_sql.models import ColumnMeta, QueryResult
from mcp_sql.render import cell_text, text_table
from mcp_sql.values import convert_column, rows_to_json, to_json_value


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


def test_rows_to_json_converts_only_the_columns_that_need_it() -> None:
    rows = [(1, "a", 1.5, None, b"\x00"), (2, None, float("inf"), None, None), (3, "c", None, None, None)]
    assert rows_to_json(rows) == [
        [1, "a", 1.5, None, {"$base64": "AA=="}],
        [2, None, "Infinity", None, None],
        [3, "c", None, None, None],
    ]
    assert rows_to_json([(), ()]) == [[], []]  # PostgreSQL: SELECT FROM t
    assert rows_to_json([]) == []
    plain = (1, "x", None)
    assert convert_column(plain) is plain  # plain columns are kept, not copied


def test_to_json_value_dispatch_matches_the_slow_path_for_subclasses() -> None:
    class Text(str):
        pass

    class Number(float):
        pass

    assert to_json_value(Text("a")) == "a"
    assert to_json_value(Number("nan")) == "NaN"
    assert to_json_value(Decimal("1.10")) == "1.10"
    assert to_json_value(dt.date(2026, 1, 2)) == "2026-01-02"
    assert to_json_value(memoryview(b"hi")) == {"$base64": "aGk="}


def test_query_result_to_json_equals_model_dump() -> None:
    result = _result([[1, {"a": [1, 2]}], [22, None]], truncated=True)
    assert result.to_json() == result.model_dump(mode="json")
    assert list(result.to_json()) == list(result.model_dump(mode="json"))  # same key order


def test_text_table_column_paths_match_cell_text() -> None:
    rows: list[list[object]] = [
        [-12345, "tab\there", 1.25, None, True, [1, "a\nb"]],
        [7, None, None, "x", False, None],
        [None, "", float(10**20), "", None, {"k": "v"}],
    ]
    columns = [ColumnMeta(name=f"c{i}", type=None) for i in range(6)]
    result = QueryResult(columns=columns, rows=rows, row_count=3, offset=0, truncated=False, next_offset=None)
    lines = text_table(result, max_width=8).splitlines()
    cells = [[c.strip() for c in line.split(" | ")] for line in lines[2:-1]]
    expected = [[cell_text(v)[:7] + "…" if len(cell_text(v)) > 8 else cell_text(v) for v in r] for r in rows]
    assert cells == expected
    assert all(line == line.rstrip() for line in lines)


def test_text_table_with_no_rows_keeps_the_header() -> None:
    assert text_table(_result([])).splitlines() == ["id | doc", "---+----", "(0 rows)"]
