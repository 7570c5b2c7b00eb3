"""MySQL/MariaDB catalog introspection: schemas (databases), tables, descriptions, fingerprints.

Fixed information_schema queries with names bound as `?` parameters (mysql_params.py), and
SHOW CREATE TABLE/VIEW with the names quoted, for the exact DDL (as SQLite keeps its own). The
queries of one tool call run through the engine's `fetch` in one call: one connection, one READ ONLY
transaction, the same walls and timeout as a user's query.

Schemas are databases. When the URL names a database, it is the default of list_tables,
describe_table and the schema resource; otherwise every database the user can see (but the
system ones) is listed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp_batteries.errors import NotFound

from mcp_sql.models import (
    CheckConstraint,
    ColumnInfo,
    ForeignKey,
    IndexInfo,
    SchemaInfo,
    TableDescription,
    TableInfo,
    TableKind,
    TablePage,
)

#: One call that runs several (sql, params) queries and returns the rows of each.
Fetch = Callable[[Sequence[tuple[str, Sequence[Any]]]], Awaitable[list[list[tuple[Any, ...]]]]]

SYSTEM_SCHEMAS = ("information_schema", "mysql", "performance_schema", "sys")
_NOT_SYSTEM = "NOT IN ('information_schema', 'mysql', 'performance_schema', 'sys')"
_KINDS: dict[str, TableKind] = {
    "BASE TABLE": "table", "SYSTEM VERSIONED": "table", "VIEW": "view", "SYSTEM VIEW": "view",
    "SEQUENCE": "sequence", "TEMPORARY": "table",
}  # fmt: skip
_EXACT_COUNT_ENGINES = {"MyISAM", "Aria", "MEMORY", "CSV", "ARCHIVE"}


def quote_name(name: str) -> str:
    """A MySQL identifier quoted with backticks (`a``b`)."""
    return "`" + name.replace("`", "``") + "`"


class MySQLCatalog:
    """The catalog half of MySQLDatabase."""

    def __init__(self, fetch: Fetch, *, default_schema: str | None, mariadb: bool) -> None:
        self._fetch = fetch
        self._default = default_schema
        self._mariadb = mariadb

    async def _one(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return (await self._fetch([(sql, params)]))[0]

    def _scope(self, schema: str | None) -> tuple[str, list[Any]]:
        """The WHERE condition on TABLE_SCHEMA for `schema` (or the default scope)."""
        target = schema if schema is not None else self._default
        if target is not None:
            return "TABLE_SCHEMA = ?", [target]
        return f"TABLE_SCHEMA {_NOT_SYSTEM}", []

    async def list_schemas(self) -> list[SchemaInfo]:
        rows = await self._one(
            "SELECT s.SCHEMA_NAME, (SELECT COUNT(*) FROM information_schema.TABLES t "
            " WHERE t.TABLE_SCHEMA = s.SCHEMA_NAME) FROM information_schema.SCHEMATA s "
            f"WHERE s.SCHEMA_NAME {_NOT_SYSTEM} ORDER BY 1"
        )
        return [
            SchemaInfo(
                name=str(r[0]),
                table_count=int(r[1]),
                comment="the database of the URL (default)" if r[0] == self._default else None,
            )
            for r in rows
        ]

    async def _require_schema(self, schema: str) -> None:
        names = [s.name for s in await self.list_schemas()]
        if schema not in names:
            raise NotFound(f"schema {schema!r} does not exist; schemas: {', '.join(names) or '(none)'}")

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        where, params = self._scope(schema)
        rows = await self._one(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_ROWS, TABLE_COMMENT, ENGINE "
            f"FROM information_schema.TABLES WHERE {where} ORDER BY 1, 2",
            *params,
        )
        if not rows and schema is not None:
            await self._require_schema(schema)
        return [_table_info(r) for r in rows]

    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage:
        tables = await self.list_tables(schema)
        return TablePage(tables=tables[offset : offset + limit], total=len(tables))

    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]:
        """Tables already carry the engine's row count (InnoDB: an estimate; MyISAM: exact)."""
        return tables, None

    async def _resolve(self, table: str, schema: str | None) -> tuple[Any, ...]:
        where, params = self._scope(schema)
        base = (
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_ROWS, TABLE_COMMENT, ENGINE "
            f"FROM information_schema.TABLES WHERE {where} AND {{name}} ORDER BY 1 LIMIT 1"
        )
        # Exact match first, then the case-insensitive one a model often means ("Users" for users).
        found = await self._fetch(
            [
                (base.format(name="TABLE_NAME = ?"), [*params, table]),
                (base.format(name="LOWER(TABLE_NAME) = LOWER(?)"), [*params, table]),
            ]
        )
        for rows in found:
            if rows:
                return rows[0]
        if schema is not None:
            await self._require_schema(schema)
        listing = await self.list_tables(schema)
        names = [f"{t.schema_name}.{t.name}" for t in listing[:50]]
        where_text = (
            f"schema {schema!r}"
            if schema
            else (f"schema {self._default!r}" if self._default else "any schema")
        )
        raise NotFound(f"table {table!r} not found in {where_text}; tables: {', '.join(names) or '(none)'}")

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        row = await self._resolve(table, schema)
        info = _table_info(row)
        s, t = info.schema_name, info.name
        is_view = info.kind == "view"
        checks_join = "AND c.TABLE_NAME = k.TABLE_NAME " if self._mariadb else ""
        show = (
            "SHOW CREATE VIEW"
            if is_view
            else "SHOW CREATE TABLE"
            if info.kind == "table"
            else "SHOW CREATE SEQUENCE"
        )
        cols, stats, fks, checks, create = await self._fetch(
            [
                (
                    "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_COMMENT, EXTRA, "
                    "GENERATION_EXPRESSION FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
                    [s, t],
                ),
                (
                    "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
                    "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, "
                    "INDEX_NAME, SEQ_IN_INDEX",
                    [s, t],
                ),
                (
                    "SELECT k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, "
                    "k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE, r.DELETE_RULE "
                    "FROM information_schema.KEY_COLUMN_USAGE k "
                    "JOIN information_schema.REFERENTIAL_CONSTRAINTS r ON r.CONSTRAINT_SCHEMA = "
                    "k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND r.TABLE_NAME = "
                    "k.TABLE_NAME WHERE k.TABLE_SCHEMA = ? AND k.TABLE_NAME = ? "
                    # The same constants on both sides: MariaDB then opens one table, not all of them.
                    "AND r.CONSTRAINT_SCHEMA = ? AND r.TABLE_NAME = ? "
                    "AND k.REFERENCED_TABLE_NAME IS NOT NULL ORDER BY k.CONSTRAINT_NAME, k.ORDINAL_POSITION",
                    [s, t, s, t],
                ),
                (
                    "SELECT c.CONSTRAINT_NAME, c.CHECK_CLAUSE FROM information_schema.TABLE_CONSTRAINTS k "
                    "JOIN information_schema.CHECK_CONSTRAINTS c "
                    "ON c.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA "
                    f"AND c.CONSTRAINT_NAME = k.CONSTRAINT_NAME {checks_join}"
                    "WHERE k.TABLE_SCHEMA = ? AND k.TABLE_NAME = ? AND k.CONSTRAINT_TYPE = 'CHECK' "
                    "AND c.CONSTRAINT_SCHEMA = ? "
                    "ORDER BY 1",
                    [s, t, s],
                ),
                (f"{show} {quote_name(s)}.{quote_name(t)}", []),
            ]
        )
        columns = [_column(self._mariadb, *c) for c in cols]
        primary_key: list[str] = []
        indexes: dict[str, IndexInfo] = {}
        for name, non_unique, column, sub_part in stats:
            part = column if column is not None else "<expression>"
            if sub_part:
                part = f"{part}({sub_part})"
            if name == "PRIMARY":
                primary_key.append(str(column))
            index = indexes.get(name) or IndexInfo(
                name=str(name), columns=[], unique=not int(non_unique), primary=name == "PRIMARY"
            )
            index.columns.append(str(part))
            indexes[name] = index
        keys: dict[str, ForeignKey] = {}
        for name, column, ref_schema, ref_table, ref_column, on_update, on_delete in fks:
            fk = keys.get(name) or ForeignKey(
                name=str(name), columns=[], ref_schema=ref_schema, ref_table=str(ref_table),
                ref_columns=[], on_update=on_update, on_delete=on_delete,
            )  # fmt: skip
            fk.columns.append(str(column))
            fk.ref_columns.append(str(ref_column))
            keys[name] = fk
        ddl = str(create[0][1]) if create and len(create[0]) > 1 else ""
        desc = TableDescription(
            schema_name=s,
            name=t,
            kind=info.kind,
            comment=info.comment,
            columns=columns,
            primary_key=primary_key,
            foreign_keys=list(keys.values()),
            indexes=list(indexes.values()),
            checks=[CheckConstraint(name=str(n), expression=str(c)) for n, c in checks],
            row_estimate=info.row_estimate,
            view_definition=ddl if is_view else None,
        )
        # SHOW CREATE gives the server's own DDL: exact, with indexes, keys, checks and comments.
        parts = [f"-- schema {s}", ddl.rstrip(";") + ";"]
        if info.row_estimate is not None:
            about = "about " if info.row_estimate_kind == "statistics" else ""
            parts.append(f"-- {about}{info.row_estimate} rows")
        return desc.model_copy(update={"ddl": "\n".join(parts)})

    async def table_fingerprints(self) -> dict[str, str]:
        """One hash per table or view of the listed scope, over everything describe_table shows."""
        where, params = self._scope(None)
        queries: list[tuple[str, Sequence[Any]]] = [
            (f"SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES "
             f"WHERE {where}", params),
            ("SELECT TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
             f"COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE {where} "
             "ORDER BY 1, 2, 3", params),
            ("SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, NON_UNIQUE, COLUMN_NAME, SUB_PART "
             f"FROM information_schema.STATISTICS WHERE {where} ORDER BY 1, 2, 3, 4", params),
            ("SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, CONSTRAINT_TYPE FROM "
             f"information_schema.TABLE_CONSTRAINTS WHERE {where} ORDER BY 1, 2, 3", params),
            ("SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS "
             f"WHERE {where}", params),
        ]  # fmt: skip
        hashes: dict[str, Any] = {}
        for rows in await self._fetch(queries):
            for row in rows:
                key = f"{row[0]}.{row[1]}"
                h = hashes.get(key) or hashes.setdefault(key, hashlib.sha256())
                h.update("\x00".join(str(v) for v in row[2:]).encode("utf-8", "surrogateescape") + b"\x01")
        return {k: v.hexdigest()[:16] for k, v in sorted(hashes.items())}

    async def schema_fingerprint(self) -> str:
        h = hashlib.sha256()
        for key, value in (await self.table_fingerprints()).items():
            h.update(f"{key}\x00{value}\x01".encode("utf-8", "surrogateescape"))
        return h.hexdigest()[:16]


def _table_info(row: Sequence[Any]) -> TableInfo:
    schema, name, kind_text, rows, comment, engine = row
    kind = _KINDS.get(str(kind_text), "table")
    counted = kind == "table" and rows is not None
    return TableInfo(
        schema_name=str(schema),
        name=str(name),
        kind=kind,
        row_estimate=int(rows) if counted else None,
        row_estimate_kind=("exact" if engine in _EXACT_COUNT_ENGINES else "statistics") if counted else None,
        comment=(comment or None) if kind != "view" else None,
    )


def _column(
    mariadb: bool, name: str, typ: str, nullable: str, default: Any, comment: str, extra: str, generated: Any
) -> ColumnInfo:
    extra = str(extra or "")
    if mariadb and default == "NULL":  # MariaDB writes a NULL default as the word, literals quoted
        default = None
    if "auto_increment" in extra.lower():
        default = "AUTO_INCREMENT"
    return ColumnInfo(
        name=str(name),
        type=str(typ),
        nullable=nullable == "YES",
        default=None if default is None else str(default),
        comment=comment or None,
        generated=str(generated) if generated and "GENERATED" in extra.upper() else None,
    )
