"""MySQL/MariaDB connections: the read-only session, the per-call transaction, timeouts and kills.

The seam between this module and the engine (mysql_engine.py: reads; mysql_write.py: writes) is
"where and how a statement runs" versus "what runs". This module owns the connections (up to
MAX_CONNECTIONS per database, asyncmy), and on each of them the engine walls of read mode:

1. One statement per call, at the protocol level: connections are opened without
   CLIENT_MULTI_STATEMENTS, so the server itself refuses `SELECT 1; DROP TABLE t` (no SQL statement
   can turn that capability on; only the client can, and this one never does).
2. A read-only session: every connection runs with the session default `tx_read_only = 1`
   (`transaction_read_only` on MySQL) and every read in `START TRANSACTION READ ONLY`. The session
   default matters: DDL commits implicitly, which ends an explicit read-only transaction, but the
   statement after that commit still runs read-only, so CREATE/DROP/ALTER/GRANT/... fail with
   error 1792 as well.
3. Nothing a statement does to its session outlives its call: after every call the connection is
   reset (COM_RESET_CONNECTION: rolls back, drops temporary tables, prepared statements, user
   variables, named locks, table locks and HANDLERs, and restores every session variable), then the
   session settings are applied again. A `SET`, `COMMIT`, `PREPARE` or `GET_LOCK` therefore cannot
   prepare the next call.
4. Time: `max_statement_time` (MariaDB, every statement) or `max_execution_time` (MySQL, SELECT)
   stops a statement on the server; past that plus a grace period, or when the caller cancels,
   `KILL QUERY` is sent from a second connection, and the connection is closed if it cannot be
   brought back to a known state.

Session settings also fix how the server reads SQL text: utf8mb4 both ways, and the server's
sql_mode without ANSI_QUOTES, NO_BACKSLASH_ESCAPES and the emulation modes (ORACLE, MSSQL, ...), so
that the parser wall (mysql_guard.py) lexes strings and comments as the server does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import asyncmy
from asyncmy.constants.CLIENT import MULTI_STATEMENTS
from mcp_batteries.errors import BatteriesError, ConfigError

from mcp_sql.mysql_errors import DRIVER_ERRORS, QUERY_INTERRUPTED, error_code, map_mysql_error
from mcp_sql.mysql_target import MySQLTarget

logger = logging.getLogger(__name__)

#: Connections per database at most (as many as the PostgreSQL pool).
MAX_CONNECTIONS = 5
# Extra seconds past the statement timeout before the client kills the statement itself.
_CLIENT_GRACE_S = 2.0
_COM_RESET_CONNECTION = 0x1F
# sql_mode flags that change how the server lexes SQL text, or switch it to another dialect.
_LEXER_MODES = {"ANSI_QUOTES", "NO_BACKSLASH_ESCAPES", "ANSI", "ORACLE", "MSSQL", "DB2", "POSTGRESQL",
                "MAXDB", "SIMULTANEOUS_ASSIGNMENT"}  # fmt: skip
# Global privileges that a read-only assistant should not hold: files, administration, accounts.
_RISKY_PRIVILEGES = ("ALL PRIVILEGES", "FILE", "SUPER", "PROCESS", "RELOAD", "SHUTDOWN", "CREATE USER",
                     "BINLOG ADMIN", "CONNECTION ADMIN", "SYSTEM_VARIABLES_ADMIN")  # fmt: skip


@dataclass(frozen=True)
class ServerInfo:
    """What start-up learnt about the server and the connecting user."""

    mariadb: bool
    version: str
    user: str
    database: str | None
    risky_privileges: tuple[str, ...]


class Call:
    """One call's connection, and what happened to it (read by the pool when it is released)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.timed_out = False
        self.unfinished = False
        """An unbuffered result was left unread: the statement must be killed and drained."""


class MySQLPool:
    """The connections of one configured MySQL/MariaDB database and how calls run on them."""

    def __init__(self, target: MySQLTarget, *, statement_timeout_s: float) -> None:
        self.target = target
        self.url_redacted = target.redacted
        self.timeout_s = statement_timeout_s
        self.safety_notes: list[str] = []
        self.info = ServerInfo(False, "", "", None, ())
        self._idle: list[Any] = []
        self._slots = anyio.Semaphore(MAX_CONNECTIONS)
        self._session_sql = ""
        self._read_only_var = "tx_read_only"
        self._killer: Any = None
        self._killer_lock = anyio.Lock()

    @classmethod
    async def open(cls, target: MySQLTarget, *, statement_timeout_s: float) -> MySQLPool:
        self = cls(target, statement_timeout_s=statement_timeout_s)
        try:
            conn = await self._raw_connect()
        except DRIVER_ERRORS as exc:
            raise ConfigError(f"cannot connect to {target.redacted}: {_reason(exc)}") from exc
        try:
            await self._setup(conn)
            await self._apply_session(conn)
        except BaseException:
            conn.close()
            raise
        self._idle.append(conn)
        return self

    async def close(self) -> None:
        for conn in [*self._idle, self._killer]:
            if conn is not None:
                with anyio.move_on_after(5, shield=True):
                    try:
                        await conn.ensure_closed()
                    except DRIVER_ERRORS:
                        conn.close()
        self._idle.clear()
        self._killer = None

    # -- connections -----------------------------------------------------------------------------
    async def _raw_connect(self) -> Any:
        conn: Any = asyncmy.Connection(  # type: ignore[no-untyped-call]
            **self.target.connect_kwargs(),
            charset="utf8mb4",
            autocommit=True,
            local_infile=False,  # LOAD DATA LOCAL would let the server read this machine's files
            program_name="mcp-sql",
        )
        # asyncmy asks for CLIENT_MULTI_STATEMENTS unconditionally; this client must not (wall 1).
        # Pinned by tests/sql/test_mysql_readonly.py: the server refuses two statements.
        conn._client_flag &= ~MULTI_STATEMENTS
        with anyio.fail_after(self.target.connect_timeout + 1):
            await conn.connect()
        return conn

    async def _setup(self, conn: Any) -> None:
        cursor = conn.cursor()
        await cursor.execute(
            "SELECT VERSION(), CURRENT_USER(), DATABASE(), @@GLOBAL.sql_mode, @@secure_file_priv"
        )
        version, user, database, sql_mode, file_priv = (await cursor.fetchall())[0]
        await cursor.execute("SHOW GRANTS")
        grants = " ".join(str(r[0]).upper() for r in await cursor.fetchall() if " ON *.* " in str(r[0]))
        await cursor.close()
        mariadb = "mariadb" in str(version).lower()
        risky = tuple(p for p in _RISKY_PRIVILEGES if p in grants)
        self.info = ServerInfo(mariadb, str(version), str(user), database, risky)
        modes = [m for m in str(sql_mode or "").split(",") if m and m not in _LEXER_MODES]
        if not mariadb:
            self._read_only_var = "transaction_read_only"
        else:
            try:
                await conn.query("SELECT @@transaction_read_only")
                self._read_only_var = "transaction_read_only"  # MariaDB 11.1+
            except DRIVER_ERRORS:
                self._read_only_var = "tx_read_only"
        timeout = (
            f"max_statement_time = {self.timeout_s:g}"
            if mariadb
            else f"max_execution_time = {max(int(self.timeout_s * 1000), 1)}"
        )
        # Our own values only (a number, names of modes read from the server), never user text.
        self._session_sql = (
            f"SET NAMES utf8mb4, SESSION sql_mode = '{','.join(modes)}', SESSION time_zone = '+00:00', "
            f"SESSION {self._read_only_var} = 1, SESSION {timeout}, SESSION autocommit = 1"
        )
        kind = "MariaDB" if mariadb else "MySQL"
        self.safety_notes.append(
            f"{kind} {version} reads: parser guard, read-only session and READ ONLY transaction, one "
            f"statement per call (multi-statements off), session reset after every call, "
            f"{self.timeout_s:g} s statement timeout; connected as {user}"
        )
        if risky:
            self.safety_notes.append(
                f"{user} holds {', '.join(risky)}: files and server administration are then refused by "
                "the parser guard alone; connect as a user with only SELECT (docs/sql.md)"
            )
            if file_priv in (None, "") and ("FILE" in risky or "ALL PRIVILEGES" in risky):
                self.safety_notes.append(
                    "secure_file_priv is not set: the server may read and write any file"
                )

    async def _apply_session(self, conn: Any) -> None:
        try:
            await conn.query(self._session_sql)
        except DRIVER_ERRORS as exc:
            if error_code(exc) != QUERY_INTERRUPTED:
                raise
            await conn.query(self._session_sql)  # a late KILL QUERY hit this statement: once more

    async def _reset(self, conn: Any) -> None:
        """Wall 3: COM_RESET_CONNECTION, then the session settings again."""
        # asyncmy has no public call for COM_RESET_CONNECTION (MySQL 5.7+, MariaDB 10.2+); pinned
        # by tests/sql/test_mysql_readonly.py (session state does not survive a call).
        await conn._execute_command(_COM_RESET_CONNECTION, b"")
        await conn._read_ok_packet()
        await self._apply_session(conn)

    @property
    def client_timeout(self) -> float:
        """How long the client waits for one call before killing its statement itself."""
        return self.timeout_s + _CLIENT_GRACE_S

    def map_error(self, exc: BaseException, sql: str | None, call: Call | None = None) -> BatteriesError:
        return map_mysql_error(
            exc, sql, timeout_s=self.timeout_s, timed_out=call is not None and call.timed_out,
            user=self.info.user,
        )  # fmt: skip

    async def _kill_query(self, thread_id: int) -> None:
        """KILL QUERY from the side connection (a user may kill its own statements)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            async with self._killer_lock:
                try:
                    if self._killer is None:
                        self._killer = await self._raw_connect()
                    await self._killer.query(f"KILL QUERY {int(thread_id)}")
                except DRIVER_ERRORS:
                    logger.debug("KILL QUERY %s failed", thread_id, exc_info=True)
                    if self._killer is not None:
                        self._killer.close()
                    self._killer = None

    # -- calls -----------------------------------------------------------------------------------
    @asynccontextmanager
    async def call(self, *, read_only: bool) -> AsyncIterator[Call]:
        """A connection for one call: read_only -> inside START TRANSACTION READ ONLY.

        Writers get the connecting user's session with the read-only default lifted; either way
        the connection is reset when the call ends (wall 3).
        """
        async with self._slots:
            try:
                conn = self._idle.pop() if self._idle else await self._connect()
            except DRIVER_ERRORS as exc:
                raise self.map_error(exc, None) from exc
            call = Call(conn)
            healthy = False
            try:
                with anyio.fail_after(self.client_timeout):
                    try:
                        if read_only:
                            await conn.query("START TRANSACTION READ ONLY")
                        else:
                            await conn.query(f"SET SESSION {self._read_only_var} = 0")
                    except DRIVER_ERRORS as exc:
                        raise self.map_error(exc, None) from exc
                    yield call
                healthy = True
            except TimeoutError:
                call.timed_out = True
                await self._kill_query(_thread_id(conn))
                raise self.map_error(TimeoutError(), None, call) from None
            except anyio.get_cancelled_exc_class():
                await self._kill_query(_thread_id(conn))
                raise
            finally:
                await self._release(call, healthy=healthy)

    async def _connect(self) -> Any:
        conn = await self._raw_connect()
        try:
            await self._apply_session(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    async def _release(self, call: Call, *, healthy: bool) -> None:
        """Back to the idle list after a reset, or closed when its state is unknown."""
        conn = call.conn
        with anyio.CancelScope(shield=True):
            if not healthy:
                conn.close()
                return
            try:
                with anyio.fail_after(self.client_timeout):
                    if call.unfinished:
                        await self._kill_query(_thread_id(conn))
                        await _drain(conn)
                    await self._reset(conn)
            except (*DRIVER_ERRORS, TimeoutError):
                logger.debug("resetting a MySQL connection failed; closing it", exc_info=True)
                conn.close()
                return
            self._idle.append(conn)


def _thread_id(conn: Any) -> int:
    return int(conn.thread_id())


async def _drain(conn: Any) -> None:
    """Read what is left of an unbuffered result (ended early by KILL QUERY)."""
    result = conn._result
    if result is None or not getattr(result, "unbuffered_active", False):
        return
    try:
        await result._finish_unbuffered_query()
    except DRIVER_ERRORS as exc:
        if error_code(exc) != QUERY_INTERRUPTED:
            raise


def _reason(exc: BaseException) -> str:
    args: tuple[Any, ...] = getattr(exc, "args", ())
    return str(args[1]) if len(args) >= 2 else str(exc) or type(exc).__name__
