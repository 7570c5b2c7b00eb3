"""The engine-neutral database interface and `open_database`.

Parameters for `query` (and statements of `execute`):
    SQLite:     `?` placeholders with a list, or `:name` placeholders with a dict.
    PostgreSQL: `$1, $2, ...` placeholders with a list (dicts are refused). Strings are converted to
                the parameter's type where PostgreSQL expects a date/time, number, uuid or json.
    MySQL:      `?` placeholders with a list (dicts are refused); values are bound as literals.
`execute(statements, params, transaction=...)`:
    one statement: `params` is that statement's list/dict;
    several statements (only with transaction=True): `params` is None or a list with one entry
    (list, dict or None) per statement.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
from mcp_batteries.errors import InvalidInput
from mcp_batteries.safety import redact_url

from mcp_sql.models import ExecuteResult, QueryResult, SchemaInfo, TableDescription, TableInfo, TablePage
from mcp_sql.results import Page, ResultLimits
from mcp_sql.urls import default_database_path, ensure_sqlite_file, parse_url

logger = logging.getLogger(__name__)

Params = list[Any] | dict[str, Any] | None


@runtime_checkable
class Database(Protocol):
    # Read-only properties so that engines may narrow them (dialect: Literal["sqlite"]).
    @property
    def name(self) -> str: ...
    @property
    def dialect(self) -> Literal["sqlite", "postgresql", "mysql"]: ...
    @property
    def url_redacted(self) -> str:
        """The URL without its password."""

    @property
    def allow_write(self) -> bool: ...
    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite file to watch (also watch its -wal); None for PostgreSQL."""

    @property
    def safety_notes(self) -> list[str]:
        """Which read-only walls are active, for the server's start-up log."""

    @property
    def limits(self) -> ResultLimits:
        """Rows per page, bytes per value and bytes per reply (results.py)."""

    async def close(self) -> None: ...

    async def query(self, sql: str, params: Params = None, *, limit: int, offset: int = 0) -> QueryResult: ...

    async def query_page(self, sql: str, params: Params = None, *, limit: int, offset: int = 0) -> Page:
        """`query`, with the page's JSON text (the tool's text content) built along the way."""

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult: ...

    async def list_schemas(self) -> list[SchemaInfo]: ...

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        """Every table and view, with row estimates only where they cost nothing (statistics)."""

    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]:
        """`tables` with row counts filled in where statistics give none, in one statement, and a
        note when some could not be counted."""

    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage:
        """One page of `list_tables` with row counts (`with_row_counts`), and how many tables exist."""

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription: ...

    async def explain(self, sql: str, *, analyze: bool = False) -> str: ...

    async def schema_fingerprint(self) -> str: ...

    async def table_fingerprints(self) -> dict[str, str]: ...


async def open_database(
    name: str,
    url: str,
    *,
    allow_write: bool,
    statement_timeout_s: float,
    max_rows: int,
    max_value_bytes: int = 16_384,
    max_reply_bytes: int = 512 * 1024,
    pg_reader_role: str | None = "mcp_sql_reader",
) -> Database:
    """Connect to the database named by `url` (see urls.py for the accepted forms).

    `max_rows` caps every page of `query` (a larger `limit` is clamped) and RETURNING rows of
    `execute`; `max_value_bytes` cuts each text or binary value, `max_reply_bytes` ends a page early
    (results.py). `pg_reader_role`: the NOLOGIN read-only role PostgreSQL reads switch to (created
    when the connecting role may); None disables that wall.
    """
    if statement_timeout_s <= 0:
        raise InvalidInput("statement_timeout_s must be positive")
    try:
        limits = ResultLimits(max_rows, max_value_bytes, max_reply_bytes)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        from mcp_sql.sqlite_engine import SQLiteDatabase

        assert parsed.sqlite_path is not None
        if parsed.sqlite_path == default_database_path().resolve() and ensure_sqlite_file(parsed.sqlite_path):
            logger.warning(
                "no database was given, so an empty SQLite database was created at %s (pass a "
                "database URL or file to use another one)",
                parsed.sqlite_path,
            )
        existed = await anyio.Path(parsed.sqlite_path).exists()
        db = await SQLiteDatabase.open(
            name,
            parsed.sqlite_path,
            allow_write=allow_write,
            statement_timeout_s=statement_timeout_s,
            limits=limits,
        )
        if not existed:
            # Said on stderr, so a mistyped path shows at once rather than as an empty database.
            logger.warning(
                "%s did not exist: created an empty SQLite database there (--allow-write)", parsed.sqlite_path
            )
        return db
    assert parsed.dsn is not None
    if parsed.dialect == "mysql":
        from mcp_sql.mysql_engine import MySQLDatabase

        return await MySQLDatabase.open(
            name, parsed.dsn, allow_write=allow_write, statement_timeout_s=statement_timeout_s, limits=limits
        )
    from mcp_sql.postgres_engine import PostgresDatabase

    return await PostgresDatabase.open(
        name,
        parsed.dsn,
        url_redacted=redact_url(parsed.dsn),
        allow_write=allow_write,
        statement_timeout_s=statement_timeout_s,
        limits=limits,
        reader_role=pg_reader_role,
    )
