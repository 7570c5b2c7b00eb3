"""PostgreSQL engine (asyncpg pool): connection set-up, the read-only walls and reads.

The catalog queries (list/describe, fingerprints) are in postgres_catalog.py and run through this
module's read transaction (`_fetch_meta`); write mode is in postgres_write.py.

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

Write mode (`execute`, explain with analyze; postgres_write.py) runs as the connecting role, statement
by statement through the extended protocol, refusing only server-file/program escapes the parser can
see.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import asyncpg
from mcp_batteries.errors import AccessDenied, ConfigError

from mcp_sql import postgres_write
from mcp_sql.engine_common import CatalogMethods, explain_target, page_bounds, page_result, split_page
from mcp_sql.guard import check_postgres_explain_target, check_postgres_read
from mcp_sql.models import ColumnMeta, ExecuteResult, QueryResult
from mcp_sql.pg_errors import map_pg_error
from mcp_sql.pg_params import coerce_params, positional_params
from mcp_sql.postgres_catalog import PostgresCatalog
from mcp_sql.render import quote_ident
from mcp_sql.values import pg_type_name

_SAFE_READER_MEMBERSHIPS = {"pg_read_all_data"}
# Extra seconds the client waits past statement_timeout before cancelling from its side.
_CLIENT_GRACE_S = 5.0


def _json_encode(value: Any) -> str:
    # A string is taken as JSON text already ('{"a": 1}'); anything else is serialised.
    return value if isinstance(value, str) else json.dumps(value)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=_json_encode, decoder=json.loads, schema="pg_catalog")
    # Text I/O for intervals: with IntervalStyle=iso_8601 they arrive as exact ISO 8601 durations
    # instead of timedeltas that fold months into 30 days.
    await conn.set_type_codec("interval", encoder=str, decoder=str, schema="pg_catalog", format="text")


class PostgresDatabase(CatalogMethods):
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
        self._catalog = PostgresCatalog(self._fetch_meta)

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

    # -- query / explain (execute and explain with analyze: postgres_write.py) ------------------

    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        limit, offset = page_bounds(limit, offset, self.max_rows)
        statement = check_postgres_read(sql)
        args = positional_params(params)
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
        page, truncated = split_page(rows, limit)
        columns = [ColumnMeta(name=a.name, type=pg_type_name(a.type)) for a in attributes]
        return page_result(columns, page, offset=offset, truncated=truncated)

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        return await postgres_write.execute(self, statements, params, transaction=transaction)

    async def explain(self, sql: str, *, analyze: bool = False) -> str:
        if analyze and not self.allow_write:
            raise AccessDenied(
                "explain with analyze executes the statement, so it needs a server started with "
                "--allow-write; call explain without analyze for the estimated plan"
            )
        explain_target(sql)
        inner = check_postgres_explain_target(sql, allow_write=self.allow_write)
        if not analyze:
            text = f"EXPLAIN {inner}"
            rows = await self._fetch_meta(text)
            return "\n".join(str(r[0]) for r in rows)
        return await postgres_write.explain_analyze(self, inner)
