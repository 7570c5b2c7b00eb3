"""SQLite catalog introspection: tables, table descriptions, row estimates and schema fingerprints.

Fixed queries on sqlite_master and the table-valued pragmas; table names are bound as parameters,
except in the row counts, which quote names read from sqlite_master. Every query runs
through the engine's `fetch` (SQLiteDatabase._meta): on the read-only connection, as the server's own
statement (the authorizer's internal mode), under the statement timeout.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import sqlglot
from mcp_batteries.errors import BatteriesError, LimitExceeded, NotFound
from sqlglot import exp

from mcp_sql import render
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

#: Seconds the row counts of one listing or description may take before they are left out.
COUNT_DEADLINE_S = 2.0
# SQLite allows 500 terms in one compound SELECT.
_COUNTS_PER_STATEMENT = 400
_STAT1_PRESENT = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='sqlite_stat1'"


class Fetch(Protocol):
    """Runs one catalog query with its parameters (and a shorter deadline) and returns all its rows."""

    async def __call__(
        self, sql: str, params: Sequence[Any] = (), timeout_s: float | None = None
    ) -> list[Any]: ...


@dataclass
class _PageMemo:
    """The counting statement of one listing page, and that page as last counted."""

    sql: str
    wanted: list[str]
    counts: tuple[int, ...] = ()
    counted: list[TableInfo] | None = None


class SQLiteCatalog:
    """The catalog half of SQLiteDatabase: list_schemas, list_tables, describe_table, fingerprints."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._listing: tuple[int, list[TableInfo]] | None = None
        self._page_memo: dict[tuple[int, str, int], _PageMemo] = {}

    async def list_schemas(self) -> list[SchemaInfo]:
        rows = await self._fetch(
            "SELECT count(*) FROM sqlite_master WHERE type IN ('table','view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
        return [SchemaInfo(name="main", owner=None, comment=None, table_count=int(rows[0][0]))]

    def _check_schema(self, schema: str | None) -> None:
        if schema not in (None, "", "main"):
            raise NotFound(f"schema {schema!r} does not exist: a SQLite database has one schema, 'main'")

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        """Every table and view; row counts only where ANALYZE recorded them (see `with_row_counts`)."""
        self._check_schema(schema)
        rows = await self._fetch(
            "SELECT name, type, sql, (SELECT schema_version FROM pragma_schema_version) "
            "FROM sqlite_master WHERE type IN ('table','view') ORDER BY name"
        )
        has_stat1 = any(row[0] == "sqlite_stat1" for row in rows)
        stats = await self._stat1() if has_stat1 else {}
        tables = []
        for name, kind, sql, _ in rows:
            if str(name).startswith("sqlite_"):
                continue
            estimate = stats.get(name)
            tables.append(
                TableInfo(
                    schema_name="main",
                    name=name,
                    kind=_kind(kind, sql),
                    row_estimate=estimate,
                    row_estimate_kind="statistics" if estimate is not None else None,
                    comment=None,
                )
            )
        # Remembered with the schema version it was read at (ANALYZE changes that version too).
        self._listing = (int(rows[0][3]), tables) if rows else None
        return tables

    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage:
        """A page of `list_tables` with row counts; in one statement while the schema is unchanged.

        The statement that counts the page's rows also reads the schema version: when it matches the
        version the remembered listing was read at, that listing is current and one round trip
        answers the call. Otherwise (or when a table is gone) the listing is read again.
        """
        self._check_schema(schema)
        if self._listing is not None:
            version, tables = self._listing
            page = tables[offset : offset + limit]
            counted = await self._count_at_version(page, version)
            if counted is not None:
                return TablePage(tables=counted[0], total=len(tables), note=counted[1])
        tables = await self.list_tables(schema)
        page, note = await self.with_row_counts(tables[offset : offset + limit])
        return TablePage(tables=page, total=len(tables), note=note)

    async def _count_at_version(
        self, page: list[TableInfo], version: int
    ) -> tuple[list[TableInfo], str | None] | None:
        # The statement of a page is the same while the schema is: built once, and the counted page
        # is kept while its counts do not change (a listing called again builds nothing new).
        key = (version, page[0].name if page else "", len(page))
        memo = self._page_memo.get(key)
        if memo is None:
            wanted = [t.name for t in page if t.kind == "table" and t.row_estimate is None]
            if len(wanted) >= _COUNTS_PER_STATEMENT:
                return None
            sql = "SELECT -1, schema_version FROM pragma_schema_version" + "".join(
                f" UNION ALL SELECT {i}, count(*) FROM {render.quote_ident(name)}"
                for i, name in enumerate(wanted)
            )
            memo = _PageMemo(sql, wanted)
            self._page_memo = {key: memo}  # one page remembered: the last one asked for
        try:
            rows = await self._fetch(memo.sql, (), COUNT_DEADLINE_S)
        except BatteriesError:
            return None  # a table is gone, or counting is slow: the full path says what happened
        found = {int(i): int(n) for i, n in rows}
        if found.pop(-1, None) != version:
            return None
        counts = tuple(found.get(i, 0) for i in range(len(memo.wanted)))
        if memo.counted is None or memo.counts != counts:
            by_name = dict(zip(memo.wanted, counts, strict=True))
            memo.counts = counts
            memo.counted = [t.counted(by_name[t.name], "exact") if t.name in by_name else t for t in page]
        return memo.counted, None

    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]:
        """`tables` with exact row counts where no statistics give one, and a note when counting stopped.

        One statement counts them all (count(*) of a whole table walks its b-tree without reading the
        rows), under a short deadline: a database with huge tables answers without counts, saying so.
        """
        wanted = [t.name for t in tables if t.kind == "table" and t.row_estimate is None]
        counts: dict[str, int] = {}
        note = None
        try:
            for start in range(0, len(wanted), _COUNTS_PER_STATEMENT):
                batch = wanted[start : start + _COUNTS_PER_STATEMENT]
                sql = " UNION ALL ".join(
                    f"SELECT {i}, count(*) FROM {render.quote_ident(name)}" for i, name in enumerate(batch)
                )
                for i, count in await self._fetch(sql, (), COUNT_DEADLINE_S):
                    counts[batch[int(i)]] = int(count)
        except LimitExceeded:
            note = (
                f"row counts of {len(wanted) - len(counts)} tables left out: counting them took longer "
                f"than {COUNT_DEADLINE_S:g} s (run ANALYZE to get estimates)"
            )
        except BatteriesError as exc:
            note = f"row counts of {len(wanted) - len(counts)} tables left out: {exc}"
        return [t.counted(counts[t.name], "exact") if t.name in counts else t for t in tables], note

    async def _stat1(self, table: str | None = None) -> dict[str, int]:
        """Row counts that ANALYZE recorded, of every table or only of `table`."""
        if table is not None and not await self._fetch(_STAT1_PRESENT):
            return {}
        if table is None:
            rows = await self._fetch("SELECT tbl, stat FROM sqlite_stat1")
        else:
            rows = await self._fetch("SELECT tbl, stat FROM sqlite_stat1 WHERE tbl = ?", [table])
        stats: dict[str, int] = {}
        for tbl, stat in rows:
            head = str(stat or "").split(" ", 1)[0]
            if head.isdigit():
                stats[str(tbl)] = max(stats.get(str(tbl), 0), int(head))
        return stats

    async def _estimate(
        self, name: str, kind: TableKind, stats: dict[str, int]
    ) -> tuple[int | None, Literal["statistics", "exact", "at_least"] | None]:
        if name in stats:
            return stats[name], "statistics"
        if kind != "table":
            return None, None  # counting a view runs its whole query
        try:
            rows = await self._fetch(f"SELECT count(*) FROM {render.quote_ident(name)}", (), COUNT_DEADLINE_S)
        except BatteriesError:
            return None, None
        return int(rows[0][0]), "exact"

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        self._check_schema(schema)
        found = await self._fetch(
            "SELECT name, type, sql FROM sqlite_master WHERE type "
            "IN ('table','view') AND name = ? COLLATE NOCASE",
            [table],
        )
        if not found:
            names = [r[0] for r in await self._fetch(
                "SELECT name FROM sqlite_master WHERE type IN ('table','view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT 50"
            )]  # fmt: skip
            raise NotFound(f"table {table!r} does not exist; tables: {', '.join(names) or '(none)'}")
        name, raw_kind, create_sql = found[0]
        kind = _kind(raw_kind, create_sql)
        # Every catalog lookup below binds the name as a parameter: no quoting, no injection.
        cols = await self._fetch(
            'SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid',
            [name],
        )
        columns = [
            ColumnInfo(
                name=c[0],
                type=c[1] or "",
                nullable=not c[2] and not c[4],
                default=c[3],
                generated="(see DDL)" if c[5] in (2, 3) else None,
            )
            for c in cols
            if c[5] != 1
        ]
        primary_key = [c[0] for c in sorted((c for c in cols if c[4]), key=lambda c: c[4])]
        fk_rows = await self._fetch(
            'SELECT id, "table", "from", "to", on_update, on_delete '
            "FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            [name],
        )
        fks: dict[int, ForeignKey] = {}
        for fid, ref_table, col, ref_col, on_update, on_delete in fk_rows:
            fk = fks.get(fid) or ForeignKey(
                name=None, columns=[], ref_schema=None, ref_table=ref_table, ref_columns=[],
                on_update=on_update, on_delete=on_delete,
            )  # fmt: skip
            fk.columns.append(col)
            fk.ref_columns.append(ref_col if ref_col is not None else "(primary key)")
            fks[fid] = fk
        # One query for every index: its flags, its CREATE statement and its key columns in order.
        idx_rows = await self._fetch(
            'SELECT il.name, il."unique", il.origin, m.sql, x.name FROM pragma_index_list(?) AS il '
            "JOIN pragma_index_xinfo(il.name) AS x ON x.key = 1 "
            "LEFT JOIN sqlite_master AS m ON m.type = 'index' AND m.name = il.name "
            "ORDER BY il.name, x.seqno",
            [name],
        )
        indexes: dict[str, IndexInfo] = {}
        for idx_name, unique, origin, definition, col in idx_rows:
            idx = indexes.get(idx_name) or IndexInfo(
                name=idx_name, columns=[], unique=bool(unique), primary=origin == "pk",
                definition=definition or None,
            )  # fmt: skip
            idx.columns.append(col if col is not None else "<expression>")
            indexes[idx_name] = idx
        estimate, _ = await self._estimate(name, kind, await self._stat1(name))
        desc = TableDescription(
            schema_name="main",
            name=name,
            kind=kind,
            comment=None,
            columns=columns,
            primary_key=primary_key,
            foreign_keys=list(fks.values()),
            indexes=list(indexes.values()),
            checks=list(_checks(create_sql)) if raw_kind == "table" else [],
            row_estimate=estimate,
            view_definition=create_sql if raw_kind == "view" else None,
        )
        # SQLite keeps the original CREATE statements: the exact DDL beats any reconstruction.
        parts = [create_sql.rstrip(";") + ";"] if create_sql else [render.table_ddl(desc, dialect="sqlite")]
        parts += [i.definition.rstrip(";") + ";" for i in indexes.values() if i.definition]
        if estimate is not None:
            parts.append(f"-- about {estimate} rows")
        return desc.model_copy(update={"ddl": "\n".join(parts)})

    async def _catalog_rows(self) -> list[tuple[str, str, str, str | None]]:
        rows = await self._fetch(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY tbl_name, type, name"
        )
        return [(str(r[0]), str(r[1]), str(r[2]), r[3]) for r in rows]

    async def table_fingerprints(self) -> dict[str, str]:
        groups: dict[str, hashlib._Hash] = {}
        for kind, name, tbl_name, sql in await self._catalog_rows():
            if tbl_name.startswith("sqlite_"):
                continue
            h = groups.setdefault(f"main.{tbl_name}", hashlib.sha256())
            h.update(f"{kind}\x00{name}\x00{sql}\x01".encode())
        return {k: v.hexdigest()[:16] for k, v in groups.items()}

    async def schema_fingerprint(self) -> str:
        version = await self._fetch("PRAGMA schema_version")
        h = hashlib.sha256(f"v{version[0][0]}".encode())
        for row in await self._catalog_rows():
            h.update("\x00".join(str(x) for x in row).encode() + b"\x01")
        return h.hexdigest()[:16]


def _kind(raw: str, sql: str | None) -> TableKind:
    if raw == "view":
        return "view"
    if sql and sql.lstrip().upper().startswith("CREATE VIRTUAL"):
        return "virtual table"
    return "table"


@functools.lru_cache(maxsize=256)
def _checks(create_sql: str | None) -> tuple[CheckConstraint, ...]:
    """CHECK constraints of a CREATE TABLE statement (SQLite has no catalog of them).

    Parsing is the slowest part of describe_table, so tables without the word are not parsed, and
    results are cached by statement text: the same text always has the same checks.
    """
    if not create_sql or "check" not in create_sql.lower():
        return ()
    try:
        tree = sqlglot.parse_one(create_sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return ()
    checks = []
    for node in tree.find_all(exp.CheckColumnConstraint):
        parent = node.parent
        name = parent.name if isinstance(parent, exp.Constraint) else None
        checks.append(CheckConstraint(name=name or None, expression=node.sql("sqlite")))
    return tuple(checks)
