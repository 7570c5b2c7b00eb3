"""Text renderings of tool results that render.py does not cover (lists, execute summaries)."""

from __future__ import annotations

from mcp_sql.models import ExecuteResult, QueryResult, SchemaInfo, TableInfo
from mcp_sql.render import text_table


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
            f"- {s.name}" + (f" ({detail})" if detail else "") + (f" -- {s.comment}" if s.comment else "")
        )
    return "\n".join(lines)


def tables_text(database: str, tables: list[TableInfo]) -> str:
    if not tables:
        return f"No tables or views in {database!r}."
    lines = [f"Tables and views in {database!r} (schema.name, kind, rows):"]
    for t in tables:
        rows = ""
        if t.row_estimate is not None:
            prefix = {"statistics": "~", "at_least": ">="}.get(t.row_estimate_kind or "", "")
            rows = f", {prefix}{t.row_estimate} rows"
        lines.append(
            f"- {t.schema_name}.{t.name} ({t.kind}{rows})" + (f" -- {t.comment}" if t.comment else "")
        )
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
    if result.transaction:
        lines.append("Transaction committed." if result.committed else "Transaction rolled back.")
    return "\n".join(lines)
