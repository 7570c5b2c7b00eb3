"""PostgreSQL connections: the asyncpg pool, the read-only role, and the session settings of each call.

The seam between this module and the engine (postgres_engine.py: reads; postgres_write.py: writes)
is "where and how a statement runs" versus "what runs": this module owns the pool, creates and
checks the NOLOGIN reader role at start-up, opens the READ ONLY transaction every read runs in (with
SET LOCAL statement_timeout, search_path and ROLE), hands writers a plain connection with the
settings they must apply, and turns driver errors into BatteriesErrors (pg_errors.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import asyncpg
from mcp_batteries.errors import BatteriesError, ConfigError

from mcp_sql.pg_errors import map_pg_error
from mcp_sql.render import quote_ident

logger = logging.getLogger(__name__)

_SAFE_READER_MEMBERSHIPS = {"pg_read_all_data"}
# Extra seconds the client waits past statement_timeout before cancelling from its side.
_CLIENT_GRACE_S = 5.0
#: What a failed driver call can raise (asyncpg's own errors, timeouts, a lost socket). asyncpg's
#: InternalClientError is neither of its other two bases: it comes when a backend is terminated in
#: the middle of an operation ("cannot switch to state 14; another operation is in progress").
DRIVER_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    TimeoutError,
    OSError,
)


def _json_encode(value: Any) -> str:
    # A string is taken as JSON text already ('{"a": 1}'); anything else is serialised.
    return value if isinstance(value, str) else json.dumps(value)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=_json_encode, decoder=json.loads, schema="pg_catalog")
    # Text I/O for intervals: with IntervalStyle=iso_8601 they arrive as exact ISO 8601 durations
    # instead of timedeltas that fold months into 30 days.
    await conn.set_type_codec("interval", encoder=str, decoder=str, schema="pg_catalog", format="text")


def connection_alive(conn: asyncpg.Connection) -> bool:
    """Whether `conn` can still take a statement.

    A pooled connection whose socket the server closed (pg_terminate_backend, a restart) is
    detached from its proxy by the pool, and every method of the proxy then raises InterfaceError
    ("released back to the pool") instead of answering: that also means "not alive".
    """
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False


class PgPool:
    """The pool of one configured PostgreSQL database and how calls run on its connections."""

    def __init__(self, pool: asyncpg.Pool, *, url_redacted: str, statement_timeout_s: float) -> None:
        self.url_redacted = url_redacted
        self.timeout_s = statement_timeout_s
        self.reader_role: str | None = None
        self.safety_notes: list[str] = []
        self._pool = pool
        self._search_path: str | None = None

    @classmethod
    async def open(
        cls, dsn: str, *, url_redacted: str, statement_timeout_s: float, reader_role: str | None
    ) -> PgPool:
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
        self = cls(pool, url_redacted=url_redacted, statement_timeout_s=statement_timeout_s)
        try:
            await self._setup(reader_role)
        except BaseException:
            await pool.close()
            raise
        return self

    async def close(self) -> None:
        try:
            with anyio.fail_after(10):
                await self._pool.close()
        except TimeoutError:
            self._pool.terminate()

    # -- start-up: the read-only role ------------------------------------------------------------
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

    # -- how calls run -------------------------------------------------------------------------
    @property
    def client_timeout(self) -> float:
        """How long the client waits for one driver call (the server's timeout fires first)."""
        return self.timeout_s + _CLIENT_GRACE_S

    @property
    def statement_timeout_ms(self) -> int:
        return max(int(self.timeout_s * 1000), 1)

    def local_settings(self, *, reader: bool) -> str:
        """The SET LOCAL statements a transaction starts with (reader: also the read-only role)."""
        # Values are our own (a number and identifiers quoted here), never user text.
        parts = [f"SET LOCAL statement_timeout = {self.statement_timeout_ms}"]
        if self._search_path:
            parts.append(f"SET LOCAL search_path = {self._search_path}")
        if reader and self.reader_role:
            parts.append(f"SET LOCAL ROLE {quote_ident(self.reader_role)}")
        return "; ".join(parts)

    def map_error(self, exc: BaseException, sql: str | None) -> BatteriesError:
        return map_pg_error(exc, sql, timeout_s=self.timeout_s, reader_role=self.reader_role)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection of the pool as the connecting role, with no transaction (write mode)."""
        try:
            conn = await self._pool.acquire(timeout=self.client_timeout)
        except DRIVER_ERRORS as exc:
            raise self.map_error(exc, None) from exc
        try:
            yield conn
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._pool.release(conn)
                except DRIVER_ERRORS:
                    # The connection died under us; the pool replaces it on the next acquire.
                    logger.debug("releasing a lost PostgreSQL connection failed", exc_info=True)

    @asynccontextmanager
    async def read_transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """A READ ONLY transaction as the reader role, always rolled back at the end."""
        async with self.connection() as conn:
            tx = conn.transaction(readonly=True)
            try:
                await tx.start()
                await conn.execute(self.local_settings(reader=True))
            except DRIVER_ERRORS as exc:
                await self.discard(conn, tx)
                raise self.map_error(exc, None) from exc
            try:
                yield conn
            finally:
                # Reads never commit: whatever slipped through is discarded.
                await self.discard(conn, tx)

    async def discard(self, conn: asyncpg.Connection, tx: Any) -> bool:
        """Roll `tx` back (shielded from cancellation); False when the connection is gone.

        A connection that cannot roll back is terminated, so the pool never hands out a
        connection left inside a transaction; PostgreSQL rolls back a dead session's transaction.
        """
        rolled_back = False
        with anyio.CancelScope(shield=True):
            if connection_alive(conn):
                try:
                    await tx.rollback()
                    rolled_back = True
                except DRIVER_ERRORS:
                    if connection_alive(conn):
                        conn.terminate()
        return rolled_back

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        """One catalog query in a read transaction."""
        async with self.read_transaction() as conn:
            try:
                return list(await conn.fetch(sql, *args, timeout=self.client_timeout))
            except DRIVER_ERRORS as exc:
                raise self.map_error(exc, sql) from exc
