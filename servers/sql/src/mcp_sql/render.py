"""Text renderings for the model: a compact result table and a DDL-like table description."""

from __future__ import annotations

import json
from typing import Any

from mcp_sql.models import QueryResult, TableDescription

_ELLIPSIS = "…"


def cell_text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        text = str(value)
    # One row per line: embedded line breaks and tabs would break the table's alignment.
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + _ELLIPSIS


def text_table(result: QueryResult, *, max_width: int = 60) -> str:
    """Rows as an aligned plain-text table; cells longer than max_width are cut with "…".

    The footer tells the reader how many rows were shown and how to fetch the next page.
    """
    headers = [_clip(c.name, max_width) for c in result.columns]
    body = [[_clip(cell_text(v), max_width) for v in row] for row in result.rows]
    if not headers:
        return _footer(result)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("-+-".join("-" * w for w in widths))
    for row in body:
        lines.append(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    lines.append(_footer(result))
    return "\n".join(lines)


def _footer(result: QueryResult) -> str:
    noun = "row" if result.row_count == 1 else "rows"
    if result.truncated and result.next_offset is not None:
        return (
            f"({result.row_count} {noun} shown; more rows exist: call again with offset={result.next_offset})"
        )
    return f"({result.row_count} {noun})"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ident(name: str) -> str:
    # Quote only when needed so the rendering reads like hand-written DDL.
    plain = name.isidentifier() and name == name.lower() and name.isascii()
    return name if plain else quote_ident(name)


def table_ddl(desc: TableDescription, *, dialect: str) -> str:
    """A DDL-like description: CREATE TABLE with constraints, then indexes and comments.

    It is for reading, not for replaying: defaults and checks are shown as the database reports them.
    """
    qualified = f"{_ident(desc.schema_name)}.{_ident(desc.name)}"
    lines: list[str] = []
    if desc.comment:
        lines.append(f"-- {desc.comment}")
    if desc.kind in {"view", "materialized view"}:
        kw = "MATERIALIZED VIEW" if desc.kind == "materialized view" else "VIEW"
        lines.append(f"CREATE {kw} {qualified} (")
    else:
        kw = {"foreign table": "FOREIGN TABLE", "virtual table": "VIRTUAL TABLE"}.get(desc.kind, "TABLE")
        lines.append(f"CREATE {kw} {qualified} (")
    items: list[tuple[str, str | None]] = []
    single_pk = desc.primary_key if len(desc.primary_key) == 1 else []
    for col in desc.columns:
        parts = [_ident(col.name), col.type or ""]
        if col.name in single_pk:
            parts.append("PRIMARY KEY")
        elif not col.nullable:
            parts.append("NOT NULL")
        if col.generated:
            parts.append(f"GENERATED ALWAYS AS ({col.generated}) STORED")
        elif col.default is not None:
            identity = col.default.upper().startswith("GENERATED")
            parts.append(col.default if identity else f"DEFAULT {col.default}")
        items.append((" ".join(p for p in parts if p), col.comment))
    if len(desc.primary_key) > 1:
        items.append((f"PRIMARY KEY ({', '.join(_ident(c) for c in desc.primary_key)})", None))
    for fk in desc.foreign_keys:
        target = f"{_ident(fk.ref_schema)}.{_ident(fk.ref_table)}" if fk.ref_schema else _ident(fk.ref_table)
        text = (
            f"FOREIGN KEY ({', '.join(_ident(c) for c in fk.columns)}) REFERENCES {target}"
            f" ({', '.join(_ident(c) for c in fk.ref_columns)})"
        )
        if fk.on_delete and fk.on_delete.upper() not in {"NO ACTION", ""}:
            text += f" ON DELETE {fk.on_delete}"
        if fk.on_update and fk.on_update.upper() not in {"NO ACTION", ""}:
            text += f" ON UPDATE {fk.on_update}"
        prefix = f"CONSTRAINT {_ident(fk.name)} " if fk.name else ""
        items.append((prefix + text, None))
    for check in desc.checks:
        prefix = f"CONSTRAINT {_ident(check.name)} " if check.name else ""
        expr = (
            check.expression
            if check.expression.upper().startswith("CHECK")
            else f"CHECK ({check.expression})"
        )
        items.append((prefix + expr, None))
    for i, (text, comment) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"  {text}{comma}" + (f"  -- {comment}" if comment else ""))
    lines.append(");")
    if desc.view_definition:
        lines.append(f"-- definition: {' '.join(desc.view_definition.split())}")
    for idx in desc.indexes:
        if idx.primary:
            continue
        if idx.definition:
            lines.append(idx.definition.rstrip(";") + ";")
        else:
            unique = "UNIQUE " if idx.unique else ""
            lines.append(
                f"CREATE {unique}INDEX {_ident(idx.name)} ON {qualified} ({', '.join(idx.columns)});"
            )
    if desc.row_estimate is not None:
        lines.append(f"-- about {desc.row_estimate} rows")
    return "\n".join(lines)


def plan_tree(rows: list[tuple[int, int, str]]) -> str:
    """SQLite's EXPLAIN QUERY PLAN rows (id, parent, detail) as an indented tree."""
    depth: dict[int, int] = {0: -1}
    lines: list[str] = []
    for node_id, parent, detail in rows:
        level = depth.get(parent, -1) + 1
        depth[node_id] = level
        lines.append("  " * level + detail)
    return "\n".join(lines)
