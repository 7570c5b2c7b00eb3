"""PostgreSQL catalog introspection: schemas, tables, table descriptions and schema fingerprints.

Fixed catalog queries only; table and schema names are bound as parameters, never spliced into SQL.
Every query runs through the engine's `fetch` (PostgresDatabase._fetch_meta), so it gets the same
READ ONLY transaction, statement timeout and read-only role as a user's query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence

import asyncpg
from mcp_batteries.errors import BatteriesError, NotFound

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

#: Unanalyzed tables are counted up to this many rows in a listing.
COUNT_CAP = 100_000

# Runs one catalog query with its positional arguments in a read transaction.
Fetch = Callable[..., Awaitable[list[asyncpg.Record]]]

_KINDS: dict[str, TableKind] = {
    "r": "table", "p": "partitioned table", "v": "view", "m": "materialized view", "f": "foreign table",
}  # fmt: skip
_FK_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_USER_SCHEMAS = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'"
)
_FINGERPRINT_SQL = (
    "SELECT n.nspname, c.relname, md5(concat_ws('|', c.relkind, obj_description(c.oid, 'pg_class'), "
    " (SELECT string_agg(concat_ws(':', a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), "
    "     a.attnotnull, pg_get_expr(d.adbin, d.adrelid), col_description(c.oid, a.attnum)), ',' "
    "     ORDER BY a.attnum) "
    "   FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), "
    " (SELECT string_agg(concat_ws(':', co.conname, pg_get_constraintdef(co.oid)), "
    "',' ORDER BY co.conname) "
    "   FROM pg_constraint co WHERE co.conrelid = c.oid), "
    " (SELECT string_agg(pg_get_indexdef(i.indexrelid), ',' ORDER BY i.indexrelid::regclass::text) "
    "   FROM pg_index i WHERE i.indrelid = c.oid), "
    " CASE WHEN c.relkind IN ('v','m') THEN pg_get_viewdef(c.oid) END)) "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    f"WHERE c.relkind IN ('r','p','v','m','f') AND {_USER_SCHEMAS} "
    "UNION ALL SELECT n.nspname, NULL, md5(coalesce(obj_description(n.oid, 'pg_namespace'), '')) "
    f"FROM pg_namespace n WHERE {_USER_SCHEMAS} "
    "ORDER BY 1, 2"
)


class PostgresCatalog:
    """The catalog half of PostgresDatabase: list_schemas, list_tables, describe_table, fingerprints."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch

    async def list_schemas(self) -> list[SchemaInfo]:
        rows = await self._fetch(
            "SELECT n.nspname, pg_get_userbyid(n.nspowner) AS owner, "
            "obj_description(n.oid, 'pg_namespace') AS c, "
            "(SELECT count(*) FROM pg_class c WHERE c.relnamespace = n.oid "
            " AND c.relkind IN ('r','p','v','m','f')) AS tables "
            f"FROM pg_namespace n WHERE {_USER_SCHEMAS} ORDER BY 1"
        )
        return [SchemaInfo(name=r[0], owner=r[1], comment=r[2], table_count=int(r[3])) for r in rows]

    async def _require_schema(self, schema: str) -> None:
        rows = await self._fetch(f"SELECT n.nspname FROM pg_namespace n WHERE {_USER_SCHEMAS} ORDER BY 1")
        names = [r[0] for r in rows]
        if schema not in names:
            raise NotFound(f"schema {schema!r} does not exist; schemas: {', '.join(names) or '(none)'}")

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        if schema is not None:
            await self._require_schema(schema)
        rows = await self._fetch(
            "SELECT n.nspname, c.relname, c.relkind::text, c.reltuples::bigint, "
            "obj_description(c.oid, 'pg_class') "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            f"WHERE c.relkind IN ('r','p','v','m','f') AND {_USER_SCHEMAS} "
            "AND ($1::text IS NULL OR n.nspname = $1) ORDER BY 1, 2",
            schema,
        )
        tables = []
        for nsp, name, relkind, reltuples, comment in rows:
            # reltuples is -1 until the first VACUUM/ANALYZE (PG14+); views have no estimate.
            known = relkind in ("r", "m", "f") and reltuples is not None and reltuples >= 0
            tables.append(
                TableInfo(
                    schema_name=nsp,
                    name=name,
                    kind=_KINDS[relkind],
                    row_estimate=int(reltuples) if known else None,
                    row_estimate_kind="statistics" if known else None,
                    comment=comment,
                )
            )
        return tables

    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage:
        """A page of `list_tables`, with counts for the tables that have no statistics yet."""
        tables = await self.list_tables(schema)
        page, note = await self.with_row_counts(tables[offset : offset + limit])
        return TablePage(tables=page, total=len(tables), note=note)

    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]:
        """`tables` with counted rows (up to a cap) where the planner has no estimate yet.

        reltuples is -1 until a table is first analyzed or vacuumed; those tables are counted in
        one statement, each up to COUNT_CAP rows, so a large unanalyzed table cannot stall the list.
        """
        wanted = [t for t in tables if t.kind == "table" and t.row_estimate is None]
        if not wanted:
            return tables, None
        sql = " UNION ALL ".join(
            f"SELECT {i}, (SELECT count(*) FROM (SELECT 1 FROM {render.quote_ident(t.schema_name)}."
            f"{render.quote_ident(t.name)} LIMIT {COUNT_CAP + 1}) s)"
            for i, t in enumerate(wanted)
        )
        try:
            rows = await self._fetch(sql)
        except BatteriesError as exc:
            return tables, f"row counts of {len(wanted)} tables without statistics left out: {exc}"
        counts = {(wanted[int(i)].schema_name, wanted[int(i)].name): int(n) for i, n in rows}
        out = []
        for t in tables:
            count = counts.get((t.schema_name, t.name))
            if count is None:
                out.append(t)
            else:
                out.append(
                    t.counted(COUNT_CAP, "at_least") if count > COUNT_CAP else t.counted(count, "exact")
                )
        return out, None

    async def _resolve(self, table: str, schema: str | None) -> asyncpg.Record:
        base = (
            "SELECT c.oid, n.nspname, c.relname, c.relkind::text AS relkind, "
            "obj_description(c.oid, 'pg_class') AS comment, "
            "c.reltuples::bigint AS reltuples, "
            "CASE WHEN c.relkind IN ('v','m') THEN pg_get_viewdef(c.oid, true) END AS viewdef "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r','p','v','m','f') AND {name} "
            "AND CASE WHEN $2::text IS NULL THEN n.nspname = ANY(current_schemas(false)) "
            "ELSE n.nspname = $2 END "
            "ORDER BY array_position(current_schemas(false), n.nspname::text) NULLS LAST LIMIT 1"
        )
        # Names are bound as parameters, never spliced into SQL; exact match first, then the
        # case-insensitive one a model often means ("Users" for users).
        for condition in ("c.relname = $1", "lower(c.relname) = lower($1)"):
            rows = await self._fetch(base.format(name=condition), table, schema)
            if rows:
                return rows[0]
        if schema is not None:
            await self._require_schema(schema)
        listing = await self.list_tables(schema)
        names = [f"{t.schema_name}.{t.name}" for t in listing[:50]]
        where = f"schema {schema!r}" if schema else "the search path"
        raise NotFound(f"table {table!r} not found in {where}; tables: {', '.join(names) or '(none)'}")

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        rel = await self._resolve(table, schema)
        oid = rel["oid"]
        cols = await self._fetch(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid), col_description(a.attrelid, a.attnum), "
            "a.attgenerated::text, a.attidentity::text "
            "FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            oid,
        )
        columns = []
        for name, typ, nullable, default, comment, generated, identity in cols:
            if identity in ("a", "d"):
                default = f"GENERATED {'ALWAYS' if identity == 'a' else 'BY DEFAULT'} AS IDENTITY"
            columns.append(
                ColumnInfo(
                    name=name,
                    type=typ,
                    nullable=bool(nullable),
                    default=None if generated == "s" else default,
                    comment=comment,
                    generated=default if generated == "s" else None,
                )
            )
        cons = await self._fetch(
            "SELECT con.conname, con.contype::text, pg_get_constraintdef(con.oid, true), "
            "ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, o) "
            "      JOIN pg_attribute a ON a.attrelid = con.conrelid "
            "AND a.attnum = k.n ORDER BY k.o)::text[], "
            "fn.nspname, fc.relname, "
            "ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, o) "
            "      JOIN pg_attribute a ON a.attrelid = con.confrelid "
            "AND a.attnum = k.n ORDER BY k.o)::text[], "
            "con.confupdtype::text, con.confdeltype::text "
            "FROM pg_constraint con LEFT JOIN pg_class fc ON fc.oid = con.confrelid "
            "LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace "
            "WHERE con.conrelid = $1 ORDER BY con.conname",
            oid,
        )
        primary_key: list[str] = []
        fks: list[ForeignKey] = []
        checks: list[CheckConstraint] = []
        for conname, contype, definition, conkey, ref_schema, ref_table, ref_cols, upd, dele in cons:
            if contype == "p":
                primary_key = list(conkey)
            elif contype == "f":
                fks.append(
                    ForeignKey(
                        name=conname,
                        columns=list(conkey),
                        ref_schema=ref_schema,
                        ref_table=ref_table,
                        ref_columns=list(ref_cols),
                        on_update=_FK_ACTIONS.get(upd),
                        on_delete=_FK_ACTIONS.get(dele),
                    )
                )
            elif contype in ("c", "x"):
                checks.append(CheckConstraint(name=conname, expression=definition))
        idx_rows = await self._fetch(
            "SELECT ic.relname, i.indisunique, i.indisprimary, pg_get_indexdef(i.indexrelid), "
            "ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true) "
            "FROM generate_series(1, i.indnkeyatts) k)::text[] "
            "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
            "WHERE i.indrelid = $1 ORDER BY ic.relname",
            oid,
        )
        indexes = [
            IndexInfo(name=r[0], unique=r[1], primary=r[2], definition=r[3], columns=list(r[4]))
            for r in idx_rows
        ]
        relkind = rel["relkind"]
        reltuples = rel["reltuples"]
        desc = TableDescription(
            schema_name=rel["nspname"],
            name=rel["relname"],
            kind=_KINDS[relkind],
            comment=rel["comment"],
            columns=columns,
            primary_key=primary_key,
            foreign_keys=fks,
            indexes=indexes,
            checks=checks,
            row_estimate=int(reltuples)
            if relkind in ("r", "m") and reltuples is not None and reltuples >= 0
            else None,
            view_definition=rel["viewdef"],
        )
        return desc.model_copy(update={"ddl": render.table_ddl(desc, dialect="postgresql")})

    async def _fingerprint_rows(self) -> Sequence[asyncpg.Record]:
        return await self._fetch(_FINGERPRINT_SQL)

    async def table_fingerprints(self) -> dict[str, str]:
        rows = await self._fingerprint_rows()
        return {f"{r[0]}.{r[1]}": str(r[2])[:16] for r in rows if r[1] is not None}

    async def schema_fingerprint(self) -> str:
        h = hashlib.sha256()
        for r in await self._fingerprint_rows():
            h.update(f"{r[0]}\x00{r[1]}\x00{r[2]}\x01".encode())
        return h.hexdigest()[:16]
