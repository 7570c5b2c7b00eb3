"""Result models returned by the database engines.

Pydantic models so the server layer can hand them out as structured tool output (and derive a
JSON schema) without a conversion step. Every value inside is already JSON-safe; see `values.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, SkipValidation, WithJsonSchema

TableKind = Literal[
    "table", "partitioned table", "view", "materialized view", "foreign table", "virtual table", "sequence"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ColumnMeta(_Frozen):
    """A result column: its name and the database's type name (None when SQLite cannot tell)."""

    name: str
    type: str | None


# Rows are arrays of cells in column order. Their schema names no item schema on purpose: a client
# validates structured content against the output schema, and per-row or per-cell schemas cost it
# time for every cell of every row (issue 10); the columns describe the cells once. Not validated
# on our side either: the engines build the rows from values.py, and checking them only copies them.
Rows = Annotated[
    SkipValidation[list[Any]],
    WithJsonSchema(
        {
            "type": "array",
            "title": "Rows",
            "description": "One array per row, its cells in the order of `columns`.",
        }
    ),
]


class CutValue(_Frozen):
    """A value cut to the server's max value size: where it is and how much of it is shown."""

    row: int
    """Index of the row in `rows` (0 = first row of this page)."""
    column: str
    shown: int
    total: int
    unit: Literal["characters", "bytes", "characters of its JSON text"]


class QueryResult(_Frozen):
    columns: list[ColumnMeta]
    rows: Rows
    row_count: int
    """Rows in this page (len(rows))."""
    offset: int
    truncated: bool
    """True when more rows exist after this page."""
    next_offset: int | None
    """Pass as `offset` to fetch the next page; None when this page is the last one."""
    cut_values: list[CutValue] = []
    """Values cut to the server's max value size (the first few; `note` counts them all)."""
    note: str | None = None
    """What was cut or left out, and how to get it; None when the page is complete."""

    def to_json(self) -> dict[str, Any]:
        """The same as model_dump(mode="json") without walking the rows: they are JSON-safe already."""
        data = self.model_dump(mode="json", exclude={"rows"})
        return {name: self.rows if name == "rows" else data[name] for name in type(self).model_fields}


class StatementResult(_Frozen):
    index: int
    command: str
    """The statement's command tag, e.g. "INSERT", "UPDATE", "CREATE TABLE"."""
    rows_affected: int | None
    """Rows inserted/updated/deleted; None for statements that do not report a count (DDL)."""
    columns: list[ColumnMeta] | None = None
    rows: Rows | None = None
    """Rows produced by RETURNING (capped at max_rows, values cut to the max value size), else None."""
    rows_truncated: bool = False
    note: str | None = None
    """What was cut from the RETURNING rows, if anything."""


class ExecuteResult(_Frozen):
    statements: list[StatementResult]
    transaction: bool
    committed: bool


class SchemaInfo(_Frozen):
    name: str
    owner: str | None = None
    comment: str | None = None
    table_count: int | None = None


class TableInfo(_Frozen):
    schema_name: str
    name: str
    kind: TableKind
    row_estimate: int | None
    row_estimate_kind: Literal["statistics", "exact", "at_least"] | None
    """statistics: planner/ANALYZE estimate; exact: counted; at_least: counting stopped at a cap."""
    comment: str | None = None

    def counted(self, rows: int, kind: Literal["exact", "at_least"]) -> TableInfo:
        """This table with a row count."""
        return TableInfo(
            schema_name=self.schema_name, name=self.name, kind=self.kind, row_estimate=rows,
            row_estimate_kind=kind, comment=self.comment,
        )  # fmt: skip


class TablePage(_Frozen):
    """One page of list_tables: its tables (with row counts where they could be had) and the total."""

    tables: list[TableInfo]
    total: int
    note: str | None = None
    """Why some row counts are missing, if any are."""


class ColumnInfo(_Frozen):
    name: str
    type: str
    nullable: bool
    default: str | None = None
    comment: str | None = None
    generated: str | None = None
    """The generation expression of a generated column, else None."""


class ForeignKey(_Frozen):
    name: str | None
    columns: list[str]
    ref_schema: str | None
    ref_table: str
    ref_columns: list[str]
    on_update: str | None = None
    on_delete: str | None = None


class IndexInfo(_Frozen):
    name: str
    columns: list[str]
    """Column names, or expressions for expression indexes."""
    unique: bool
    primary: bool = False
    definition: str | None = None
    """The full CREATE INDEX statement when the database keeps one."""


class CheckConstraint(_Frozen):
    name: str | None
    expression: str


class TableDescription(_Frozen):
    schema_name: str
    name: str
    kind: TableKind
    comment: str | None
    columns: list[ColumnInfo]
    primary_key: list[str]
    foreign_keys: list[ForeignKey]
    indexes: list[IndexInfo]
    checks: list[CheckConstraint]
    row_estimate: int | None = None
    view_definition: str | None = None
    ddl: str = ""
    """A DDL-like rendering of everything above (see render.table_ddl)."""
