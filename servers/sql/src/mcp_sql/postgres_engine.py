"""PostgreSQL engine (asyncpg pool).

What holds in read mode (query, list/describe, explain without analyze, fingerprints):
  1. guard.py: one statement of SELECT/VALUES/TABLE/SHOW/EXPLAIN; no writable CTEs, SELECT INTO,
     FOR UPDATE; no call of functions that touch server files, other sessions/servers, sequences,
     session settings (set_config) or run SQL from a string (query_to_xml, ...); unparseable input
     is refused.
  2. Every call runs in `BEGIN READ ONLY` with `SET LOCAL statement_timeout`, sends the statement
     through the extended protocol (PostgreSQL itself refuses a second statement, so `COMMIT; DROP`
     cannot escape the transaction) and always ends with ROLLBACK.
  3. The role wall: inside that transaction `SET LOCAL ROLE <reader>`, a NOLOGIN role holding only
     pg_read_all_data (PostgreSQL 14+). It is created at start-up when the connecting role is a
     superuser or has CREATEROLE; an existing role is used only if it is not a superuser and is a
     member of nothing but pg_read_all_data. Under it pg_read_file, lo_import/lo_export, COPY TO/FROM
     a file or PROGRAM, pg_terminate_backend, ALTER SYSTEM, ... fail on privileges.

Connected as a SUPERUSER: walls 1-3 all apply. The role wall is reversible from inside the session
(`SET ROLE NONE`/`RESET ROLE`, `set_config('role', ...)`, and since the session user is a superuser
also `SET SESSION AUTHORIZATION`), which is why the parser refuses every statement other than a query
and refuses set_config and SQL-from-string functions. A superuser-owned SECURITY DEFINER function or a
custom operator that changes settings could still undo it, and so could a disagreement between
sqlglot's and PostgreSQL's lexers; the READ ONLY transaction still blocks ordinary writes then.
Connected as a PLAIN ROLE: the role's own privileges are a wall no statement can lift; add the READ
ONLY transaction and the parser on top. RECOMMENDED: connect with a dedicated role that has only
pg_read_all_data (or SELECT grants), e.g.
    CREATE ROLE mcp_ro LOGIN PASSWORD '...'; GRANT pg_read_all_data TO mcp_ro;
and give write access (--allow-write) only through a role whose privileges you are willing to hand over.

Write mode (`execute`, explain with analyze) runs as the connecting role, statement by statement
through the extended protocol, refusing only server-file/program escapes the parser can see.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import asyncpg
from mcp_batteries.errors import AccessDenied, ConfigError, InvalidInput, NotFound

from mcp_sql import render
from mcp_sql.guard import (
    check_postgres_explain_target,
    check_postgres_read,
    check_postgres_write,
    strip_statement,
)
from mcp_sql.models import (
    CheckConstraint,
    ColumnInfo,
    ColumnMeta,
    ExecuteResult,
    ForeignKey,
    IndexInfo,
    QueryResult,
    SchemaInfo,
    StatementResult,
    TableDescription,
    TableInfo,
    TableKind,
)
from mcp_sql.params import split_statement_params
from mcp_sql.pg_errors import map_pg_error
from mcp_sql.pg_params import coerce_params
from mcp_sql.sqlite_engine import EXECUTE_DISABLED
from mcp_sql.values import rows_to_json

_KINDS: dict[str, TableKind] = {
    "r": "table", "p": "partitioned table", "v": "view", "m": "materialized view", "f": "foreign table",
}  # fmt: skip
_FK_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_USER_SCHEMAS = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'"
)
_ROW_COUNT_COMMANDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "SELECT", "COPY", "MOVE", "FETCH"}
_SAFE_READER_MEMBERSHIPS = {"pg_read_all_data"}
# Extra seconds the client waits past statement_timeout before cancelling from its side.
_CLIENT_GRACE_S = 5.0


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _json_encode(value: Any) -> str:
    # A string is taken as JSON text already ('{"a": 1}'); anything else is serialised.
    return value if isinstance(value, str) else json.dumps(value)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=_json_encode, decoder=json.loads, schema="pg_catalog")
    # Text I/O for intervals: with IntervalStyle=iso_8601 they arrive as exact ISO 8601 durations
    # instead of timedeltas that fold months into 30 days.
    await conn.set_type_codec("interval", encoder=str, decoder=str, schema="pg_catalog", format="text")


def _type_name(typ: Any) -> str:
    name = str(getattr(typ, "name", "unknown"))
    if getattr(typ, "kind", "") == "array" and name.startswith("_"):
        return name[1:] + "[]"
    return name


class PostgresDatabase:
    dialect: Literal["postgresql"] = "postgresql"
    sqlite_path: Path | None = None

    def __init__(
        self,
        name: str,
        pool: asyncpg.Pool,
        *,
        url_redacted: str,
        allow_write: bool,
        statement_timeout_s: float,
        max_rows: int,
    ) -> None:
        self.name = name
        self.url_redacted = url_redacted
        self.allow_write = allow_write
        self.timeout_s = statement_timeout_s
        self.max_rows = max_rows
        self.reader_role: str | None = None
        self.safety_notes: list[str] = []
        self._pool = pool
        self._search_path: str | None = None

    @classmethod
    async def open(
        cls,
        name: str,
        dsn: str,
        *,
        url_redacted: str,
        allow_write: bool,
        statement_timeout_s: float,
        max_rows: int,
        reader_role: str | None = "mcp_sql_reader",
    ) -> PostgresDatabase:
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=1,
                max_size=5,
                timeout=10,
                init=_init_connection,
                server_settings={"application_name": "mcp-sql", "IntervalStyle": "iso_8601"},
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            raise ConfigError(f"cannot connect to {url_redacted}: {exc}") from exc
        db = cls(
            name,
            pool,
            url_redacted=url_redacted,
            allow_write=allow_write,
            statement_timeout_s=statement_timeout_s,
            max_rows=max_rows,
        )
        try:
            await db._setup(reader_role)
        except BaseException:
            await pool.close()
            raise
        return db

    async def _setup(self, reader_role: str | None) -> None:
        async with self._pool.acquire() as conn:
            me = await conn.fetchrow(
                "SELECT current_user AS me, r.rolsuper, r.rolcreaterole, "
                "current_setting('server_version_num')::int AS version, "
                "array_to_string(ARRAY(SELECT quote_ident(s) FROM "
                "unnest(current_schemas(false)) s), ',') AS path "
                "FROM pg_roles r WHERE r.rolname = current_user"
            )
            assert me is not None
            self._search_path = me["path"] or None
            kind = "a SUPERUSER" if me["rolsuper"] else "a plain role"
            self.safety_notes.append(
                f"PostgreSQL reads: parser guard, READ ONLY transaction, {self.timeout_s:g} s statement "
                f"timeout, one statement per call; connected as {me['me']} ({kind})"
            )
            if me["rolsuper"]:
                self.safety_notes.append(
                    "connected as a superuser: prefer a dedicated role with only pg_read_all_data"
                )
            if reader_role is None:
                self.safety_notes.append("read-only role wall disabled by configuration")
                return
            if me["version"] < 140000:
                self.safety_notes.append(
                    "read-only role wall unavailable: needs PostgreSQL 14+ (pg_read_all_data)"
                )
                return
            problem = await self._ensure_reader_role(
                conn, reader_role, me["me"], me["rolsuper"], me["rolcreaterole"]
            )
            if problem:
                self.safety_notes.append(f"read-only role wall not active: {problem}")
                return
            self.reader_role = reader_role
            self.safety_notes.append(f"reads run as role {reader_role} (pg_read_all_data only)")

    async def _ensure_reader_role(
        self, conn: asyncpg.Connection, role: str, me: str, is_super: bool, can_create: bool
    ) -> str | None:
        """Create/verify the reader role; returns why the wall cannot be used, or None."""
        exists = await conn.fetchval("SELECT true FROM pg_roles WHERE rolname = $1", role)
        if not exists:
            if not (is_super or can_create):
                return f"role {role} does not exist and {me} may not create roles"
            try:
                await conn.execute(f"CREATE ROLE {quote_ident(role)} NOLOGIN")
            except asyncpg.DuplicateObjectError:
                pass  # another server created it concurrently
            except asyncpg.PostgresError as exc:
                return f"could not create role {role}: {exc}"
            try:
                await conn.execute(f"GRANT pg_read_all_data TO {quote_ident(role)}")
                if not is_super:
                    await conn.execute(f"GRANT {quote_ident(role)} TO {quote_ident(me)}")
            except asyncpg.PostgresError as exc:
                return f"could not grant pg_read_all_data/membership for {role}: {exc}"
        row = await conn.fetchrow(
            "SELECT r.rolsuper, pg_has_role(current_user, r.oid, 'MEMBER') AS usable, "
            "ARRAY(SELECT b.rolname FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid "
            "      WHERE m.member = r.oid)::text[] AS member_of "
            "FROM pg_roles r WHERE r.rolname = $1",
            role,
        )
        if row is None:
            return f"role {role} disappeared"
        if row["rolsuper"]:
            return f"role {role} is a superuser; refusing to use it as the read-only role"
        extra = set(row["member_of"]) - _SAFE_READER_MEMBERSHIPS
        if extra:
            return (
                f"role {role} is also a member of {', '.join(sorted(extra))}; expected only pg_read_all_data"
            )
        if not row["usable"]:
            return f"{me} is not a member of {role} and cannot SET ROLE to it"
        return None

    async def close(self) -> None:
        try:
            with anyio.fail_after(10):
                await self._pool.close()
        except TimeoutError:
            self._pool.terminate()

    # -- transactions ------------------------------------------------------------------------

    def _local_settings(self, *, reader: bool) -> str:
        # Values are our own (a number and identifiers quoted here), never user text.
        parts = [f"SET LOCAL statement_timeout = {max(int(self.timeout_s * 1000), 1)}"]
        if self._search_path:
            parts.append(f"SET LOCAL search_path = {self._search_path}")
        if reader and self.reader_role:
            parts.append(f"SET LOCAL ROLE {quote_ident(self.reader_role)}")
        return "; ".join(parts)

    @asynccontextmanager
    async def _read_tx(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._pool.acquire() as conn:
            tx = conn.transaction(readonly=True)
            await tx.start()
            try:
                await conn.execute(self._local_settings(reader=True))
                yield conn
            finally:
                # Reads never commit: whatever slipped through is discarded.
                with anyio.CancelScope(shield=True):
                    if not conn.is_closed():
                        try:
                            await tx.rollback()
                        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                            conn.terminate()

    def _client_timeout(self) -> float:
        return self.timeout_s + _CLIENT_GRACE_S

    def _map(self, exc: BaseException, sql: str | None) -> Exception:
        error: Exception = map_pg_error(exc, sql, timeout_s=self.timeout_s, reader_role=self.reader_role)
        return error

    async def _fetch_meta(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        async with self._read_tx() as conn:
            try:
                return list(await conn.fetch(sql, *args, timeout=self._client_timeout()))
            except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
                raise self._map(exc, sql) from exc

    # -- query / execute / explain ------------------------------------------------------------

    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        if offset < 0:
            raise InvalidInput("offset must be 0 or more")
        limit = min(limit, self.max_rows)
        statement = check_postgres_read(sql)
        args = _positional(params)
        async with self._read_tx() as conn:
            try:
                prepared = await conn.prepare(statement.sql, timeout=self._client_timeout())
                bound = coerce_params(prepared.get_parameters(), args)
                attributes = prepared.get_attributes()
                # A portal-backed cursor: the server produces rows on demand, so only limit+1 rows
                # ever cross the wire whatever the table size; skipped rows stay on the server.
                cursor = await prepared.cursor(*bound, timeout=self._client_timeout())
                if offset:
                    await cursor.forward(offset, timeout=self._client_timeout())
                rows = await cursor.fetch(limit + 1, timeout=self._client_timeout())
            except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
                raise self._map(exc, statement.sql) from exc
        truncated = len(rows) > limit
        rows = rows[:limit]
        # model_construct: the rows were just made JSON-safe here; re-validating them costs a copy.
        return QueryResult.model_construct(
            columns=[ColumnMeta(name=a.name, type=_type_name(a.type)) for a in attributes],
            rows=rows_to_json(rows),
            row_count=len(rows),
            offset=offset,
            truncated=truncated,
            next_offset=offset + len(rows) if truncated else None,
        )

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        if not self.allow_write:
            raise AccessDenied(EXECUTE_DISABLED)
        per_statement = split_statement_params(statements, params, transaction=transaction)
        for sql in statements:
            check_postgres_write(sql)
        results: list[StatementResult] = []
        async with self._pool.acquire() as conn:
            if transaction:
                tx = conn.transaction()
                await tx.start()
                try:
                    await conn.execute(self._local_settings(reader=False))
                    for index, (sql, p) in enumerate(zip(statements, per_statement, strict=True)):
                        results.append(await self._run_write(conn, index, sql, p, many=len(statements) > 1))
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        if not conn.is_closed():
                            await tx.rollback()
                    raise
                await tx.commit()
            else:
                # No transaction block: statements like VACUUM or CREATE INDEX CONCURRENTLY need that.
                await conn.execute(f"SET statement_timeout = {max(int(self.timeout_s * 1000), 1)}")
                try:
                    results.append(
                        await self._run_write(conn, 0, statements[0], per_statement[0], many=False)
                    )
                finally:
                    with anyio.CancelScope(shield=True):
                        if not conn.is_closed():
                            await conn.execute("RESET statement_timeout")
        return ExecuteResult(statements=results, transaction=transaction, committed=True)

    async def _run_write(
        self, conn: asyncpg.Connection, index: int, sql: str, params: Any, *, many: bool
    ) -> StatementResult:
        text = strip_statement(sql)
        try:
            prepared = await conn.prepare(text, timeout=self._client_timeout())
            bound = coerce_params(prepared.get_parameters(), _positional(params))
            rows = await prepared.fetch(*bound, timeout=self._client_timeout())
            status = prepared.get_statusmsg() or ""
            attributes = prepared.get_attributes()
        except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
            err = self._map(exc, text)
            if many:
                err = type(err)(f"statement {index + 1} failed, the transaction was rolled back: {err}")
            raise err from exc
        words = status.split()
        affected = (
            int(words[-1]) if words and words[-1].isdigit() and words[0] in _ROW_COUNT_COMMANDS else None
        )
        command = " ".join(w for w in words if not w.isdigit()) or text.split(None, 1)[0].upper()
        result = StatementResult(index=index, command=command, rows_affected=affected)
        if attributes:
            result = result.model_copy(
                update={
                    "columns": [ColumnMeta(name=a.name, type=_type_name(a.type)) for a in attributes],
                    "rows": rows_to_json(rows[: self.max_rows]),
                    "rows_truncated": len(rows) > self.max_rows,
                }
            )
        return result

    async def explain(self, sql: str, *, analyze: bool = False) -> str:
        if analyze and not self.allow_write:
            raise AccessDenied(
                "explain with analyze executes the statement, so it needs a server started with "
                "--allow-write; call explain without analyze for the estimated plan"
            )
        if strip_statement(sql).upper().startswith("EXPLAIN"):
            raise InvalidInput("give the statement to explain without the EXPLAIN keyword")
        inner = check_postgres_explain_target(sql, allow_write=self.allow_write)
        if not analyze:
            text = f"EXPLAIN {inner}"
            rows = await self._fetch_meta(text)
            return "\n".join(str(r[0]) for r in rows)
        text = f"EXPLAIN (ANALYZE, BUFFERS) {inner}"
        async with self._pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            try:
                await conn.execute(self._local_settings(reader=False))
                rows = list(await conn.fetch(text, timeout=self._client_timeout()))
            except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
                raise self._map(exc, text) from exc
            finally:
                # EXPLAIN ANALYZE really runs the statement; its changes are always rolled back.
                with anyio.CancelScope(shield=True):
                    if not conn.is_closed():
                        await tx.rollback()
        plan = "\n".join(str(r[0]) for r in rows)
        return plan + "\n(the statement was executed for ANALYZE and its changes rolled back)"

    # -- catalog -----------------------------------------------------------------------------

    async def list_schemas(self) -> list[SchemaInfo]:
        rows = await self._fetch_meta(
            "SELECT n.nspname, pg_get_userbyid(n.nspowner) AS owner, "
            "obj_description(n.oid, 'pg_namespace') AS c, "
            "(SELECT count(*) FROM pg_class c WHERE c.relnamespace = n.oid "
            " AND c.relkind IN ('r','p','v','m','f')) AS tables "
            f"FROM pg_namespace n WHERE {_USER_SCHEMAS} ORDER BY 1"
        )
        return [SchemaInfo(name=r[0], owner=r[1], comment=r[2], table_count=int(r[3])) for r in rows]

    async def _require_schema(self, schema: str) -> None:
        rows = await self._fetch_meta(
            f"SELECT n.nspname FROM pg_namespace n WHERE {_USER_SCHEMAS} ORDER BY 1"
        )
        names = [r[0] for r in rows]
        if schema not in names:
            raise NotFound(f"schema {schema!r} does not exist; schemas: {', '.join(names) or '(none)'}")

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        if schema is not None:
            await self._require_schema(schema)
        rows = await self._fetch_meta(
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
            rows = await self._fetch_meta(base.format(name=condition), table, schema)
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
        cols = await self._fetch_meta(
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
        cons = await self._fetch_meta(
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
        idx_rows = await self._fetch_meta(
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

    async def _fingerprint_rows(self) -> Sequence[asyncpg.Record]:
        return await self._fetch_meta(self._FINGERPRINT_SQL)

    async def table_fingerprints(self) -> dict[str, str]:
        rows = await self._fingerprint_rows()
        return {f"{r[0]}.{r[1]}": str(r[2])[:16] for r in rows if r[1] is not None}

    async def schema_fingerprint(self) -> str:
        h = hashlib.sha256()
        for r in await self._fingerprint_rows():
            h.update(f"{r[0]}\x00{r[1]}\x00{r[2]}\x01".encode())
        return h.hexdigest()[:16]


def _positional(params: Any) -> list[Any]:
    if params is None:
        return []
    if isinstance(params, dict):
        raise InvalidInput("PostgreSQL takes positional parameters: write $1, $2, ... and pass a list")
    if isinstance(params, list | tuple):
        return list(params)
    raise InvalidInput("params must be a list of values for $1, $2, ...")
