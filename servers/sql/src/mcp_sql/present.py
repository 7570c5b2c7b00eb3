"""Text renderings of tool results that render.py does not cover (lists, execute summaries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_batteries.safety import quote_name

from mcp_sql.models import ColumnMeta, ExecuteResult, QueryResult, SchemaInfo, TableInfo
from mcp_sql.render import safe_text, text_table


def schemas_text(database: str, schemas: list[SchemaInfo]) -> str:
    if not schemas:
        return f"Database {database!r} has no user schemas."
    lines = [f"Schemas in {database!r}:"]
    for s in schemas:
        extra = [
            f"{s.table_count} tables" if s.table_count is not None else "",
            f"owner {s.owner}" if s.owner else "",
        ]
        detail = ", ".join(e for e in extra if e)
        lines.append(
            f"- {quote_name(s.name)}"
            + (f" ({detail})" if detail else "")
            + (f" -- {safe_text(s.comment, one_line=True)}" if s.comment else "")
        )
    return "\n".join(lines)


def tables_text(
    database: str,
    tables: list[TableInfo],
    *,
    offset: int = 0,
    total: int | None = None,
    next_offset: int | None = None,
    note: str | None = None,
) -> str:
    """A page of tables: `schema.name (kind, N rows)`; `~N` is an estimate from statistics, `N`
    counted exactly, `>=N` counting stopped at a cap."""
    total = len(tables) if total is None else total
    if not tables:
        return f"No tables or views in {database!r}" + (f" after offset {offset}." if offset else ".")
    shown = f"{offset + 1}-{offset + len(tables)} of {total}" if total > len(tables) else f"{total}"
    lines = [f"Tables and views in {database!r} ({shown}; schema.name, kind, rows; ~ = estimate):"]
    for t in tables:
        rows = ""
        if t.row_estimate is not None:
            prefix = {"statistics": "~", "at_least": ">="}.get(t.row_estimate_kind or "", "")
            rows = f", {prefix}{t.row_estimate} rows"
        lines.append(
            f"- {quote_name(t.schema_name)}.{quote_name(t.name)} ({t.kind}{rows})"
            + (f" -- {safe_text(t.comment, one_line=True)}" if t.comment else "")
        )
    if note:
        lines.append(f"({note})")
    if next_offset is not None:
        lines.append(f"({total - next_offset} more: call list_tables again with offset={next_offset})")
    return "\n".join(lines)


def execute_text(result: ExecuteResult) -> str:
    lines = []
    for s in result.statements:
        count = f": {s.rows_affected} row(s)" if s.rows_affected is not None else ""
        lines.append(f"[{s.index}] {s.command}{count}")
        if s.columns is not None and s.rows is not None:
            page = QueryResult(
                columns=s.columns, rows=s.rows, row_count=len(s.rows), offset=0,
                truncated=s.rows_truncated, next_offset=None,
            )  # fmt: skip
            lines.append(text_table(page))
        if s.note:
            lines.append(f"({s.note})")
    if result.transaction:
        lines.append("Transaction committed." if result.committed else "Transaction rolled back.")
    return "\n".join(lines)


def plan_text(names: list[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plan given as rows (MySQL's EXPLAIN) as an aligned table."""
    result = QueryResult(
        columns=[ColumnMeta(name=n, type=None) for n in names],
        rows=[["NULL" if v is None else str(v) for v in row] for row in rows],
        row_count=len(rows), offset=0, truncated=False, next_offset=None,
    )  # fmt: skip
    return text_table(result, max_width=200)
