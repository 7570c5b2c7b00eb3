"""Text renderings for the model: a compact result table and a DDL-like table description."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mcp_batteries.safety import quote_name

from mcp_sql.models import QueryResult, TableDescription

_ELLIPSIS = "…"
_NULL = "NULL"
_NoneType = type(None)
_TEXT_OR_NULL = frozenset({str, _NoneType})
_NUMBER_OR_NULL = frozenset({int, float, _NoneType})
# One encoder for every cell: json.dumps with options builds a new JSONEncoder per call.
_json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def cell_text(value: Any) -> str:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _json_text(value)  # JSON escapes line breaks and tabs itself
    return _escape(str(value))


def _escape(text: str) -> str:
    # One row per line: embedded line breaks and tabs would break the table's alignment.
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + _ELLIPSIS


def _column_text(column: Sequence[Any], max_width: int) -> tuple[Sequence[Any], int]:
    """A column's cells for the row format (see text_table), and the width of the widest one.

    Cells are cell_text, clipped to max_width, except that plain ints stay ints: "%s" turns them into
    the same text. Tables are built column by column because a column's values share a type: text
    and number columns (the common case) need no call per cell, and only cells too long are clipped.
    """
    kinds = set(map(type, column))
    if kinds == {int}:
        # The widest int is the largest or the smallest one: no str() per cell to find the width.
        width = max(len(str(min(column))), len(str(max(column))))
        if width <= max_width:
            return column, width
        texts: Sequence[str] = list(map(str, column))
    elif kinds <= _TEXT_OR_NULL:
        texts = [_NULL if v is None else v for v in column] if _NoneType in kinds else column
        # One scan of the joined column finds out whether any cell needs escaping at all.
        joined = "".join(texts)
        if "\n" in joined or "\r" in joined or "\t" in joined:
            texts = list(map(_escape, texts))
    elif kinds <= _NUMBER_OR_NULL:  # digits need no escaping
        texts = (
            list(map(str, column))
            if _NoneType not in kinds
            else [_NULL if v is None else str(v) for v in column]
        )
    else:
        texts = [_NULL if v is None else cell_text(v) for v in column]
    width = max(map(len, texts), default=0)
    if width > max_width:
        texts = [_clip(t, max_width) for t in texts]
        width = max(map(len, texts))
    return texts, width


def text_table(result: QueryResult, *, max_width: int = 60) -> str:
    """Rows as an aligned plain-text table; cells longer than max_width are cut with "…".

    The footer tells the reader how many rows were shown and how to fetch the next page.
    """
    headers = [_clip(c.name, max_width) for c in result.columns]
    if not headers:
        return _footer(result)
    columns = list(zip(*result.rows, strict=True)) or [()] * len(headers)
    cells, cell_widths = zip(*(_column_text(col, max_width) for col in columns), strict=True)
    widths = [max(len(h), w) for h, w in zip(headers, cell_widths, strict=True)]
    # One %-format pads a whole row in C (%-Ns is str.ljust for str, str(n).ljust for an int n);
    # rstrip drops the last column's padding.
    row_format = " | ".join(f"%-{w}s" for w in widths)
    lines = [(row_format % tuple(headers)).rstrip(), "-+-".join("-" * w for w in widths)]
    lines += [(row_format % row).rstrip() for row in zip(*cells, strict=True)]
    lines.append(_footer(result))
    return "\n".join(lines)


def _footer(result: QueryResult) -> str:
    noun = "row" if result.row_count == 1 else "rows"
    if result.truncated and result.next_offset is not None:
        return (
            f"({result.row_count} {noun} shown; more rows exist: call again with offset={result.next_offset})"
        )
    return f"({result.row_count} {noun})"


# Characters that would hide or fake text on a reader's screen: C0/C1 controls (except newline and
# tab in multi-line text), zero-width and bidirectional controls, and lone surrogates (bytes that
# were not UTF-8, which also cannot be serialized).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str, *, one_line: bool = False) -> str:
    """Free text from a database (DDL, comments, plans) made safe to show and to serialize.

    Control and invisible characters become visible escapes (\\x1b, \\u202e); newlines and tabs
    stay unless `one_line`; lone surrogates become U+FFFD. A display form, not a reversible one: the
    exact text is what `query` returns (JSON escapes it faithfully).
    """
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_visible, text)


def quote_ident(name: str) -> str:
    """An identifier quoted for SQL ("a""b")."""
    return '"' + name.replace('"', '""') + '"'


def _ident(name: str) -> str:
    # Quote only when needed so the rendering reads like hand-written DDL; a name with control or
    # invisible characters is shown in the quoted form of mcp_batteries.safety (docs/sql.md).
    if name.isidentifier() and name == name.lower() and name.isascii():
        return name
    return quote_ident(name) if name.isprintable() else quote_name(name)


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
            identity = col.default.upper().startswith(("GENERATED", "AUTO_INCREMENT"))
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
